import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';

type Hook = Body<'/api/incoming-webhooks', 'get'>['items'][number];
type Channel = Body<'/api/channels', 'get'>['items'][number];

/**
 * Slack-compatible incoming webhooks (docs/WEBHOOKS.md): create one for a channel (its URL is shown once,
 * to copy into Grafana, Alertmanager…), list them, revoke one. Who may is the server's decision: an org
 * admin, or the channel's creator (a 403 is shown as it comes).
 */
export function IncomingWebhooks() {
  const [hooks, setHooks] = useState<Hook[] | null>(null);
  const [channels, setChannels] = useState<Channel[]>([]);
  const [name, setName] = useState('');
  const [channelId, setChannelId] = useState('');
  const [template, setTemplate] = useState('');
  const [overrides, setOverrides] = useState(false);
  const [created, setCreated] = useState<{ name: string; url: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');

  const load = async () => {
    try {
      setHooks((await ok(api.GET('/api/incoming-webhooks'))).items);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  };
  useEffect(() => {
    void load();
    ok(api.GET('/api/channels'))
      .then((r) => {
        setChannels(r.items);
        setChannelId((c) => c || (r.items[0]?.id ?? ''));
      })
      .catch(() => undefined);
  }, []);

  const channelName = (id: string | null) => channels.find((c) => c.id === id)?.name;

  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const h = await ok(
        api.POST('/api/incoming-webhooks', {
          body: {
            name: name.trim(),
            channel_id: channelId,
            allow_overrides: overrides,
            ...(template.trim() ? { template } : {}),
          },
        }),
      );
      setCreated({ name: h.name, url: h.url });
      setName('');
      setTemplate('');
      setStatus(`Incoming webhook ${h.name} created. Copy its URL now: it is not shown again.`);
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };

  const revoke = async (h: Hook) => {
    if (!confirm(`Revoke the incoming webhook ${h.name}? Its URL stops working at once.`)) return;
    try {
      await ok(api.DELETE('/api/incoming-webhooks/{id}', { params: { path: { id: h.id } } }));
      setStatus(`Incoming webhook ${h.name} revoked.`);
      if (created?.name === h.name) setCreated(null);
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };

  return (
    <section aria-labelledby="incoming-title" class="panel">
      <h2 id="incoming-title">Incoming webhooks</h2>
      <p class="muted">
        A URL that tools which post to “a Slack webhook URL” (Grafana, Alertmanager, Sentry, GitLab…) can post
        to. Its messages appear in the channel, sent by a bot named after the webhook.
      </p>
      <p class="sr-only" role="status">
        {status}
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form class="filters" aria-label="New incoming webhook" onSubmit={(e) => void create(e)}>
        <label>
          Name
          <input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Channel
          <select required value={channelId} onChange={(e) => setChannelId(e.currentTarget.value)}>
            {channels.map((c) => (
              <option key={c.id} value={c.id}>
                #{c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Template (optional)
          <textarea
            rows={2}
            placeholder="{{pusher.name}} pushed {{commits.length}} commits"
            value={template}
            onInput={(e) => setTemplate(e.currentTarget.value)}
          />
        </label>
        <label>
          <input
            type="checkbox"
            checked={overrides}
            onChange={(e) => setOverrides(e.currentTarget.checked)}
          />
          Show the sender's username and icon
        </label>
        <button type="submit" class="primary" disabled={!name.trim() || !channelId}>
          Create webhook
        </button>
      </form>
      {created !== null && (
        <div class="secret" role="group" aria-label={`URL of ${created.name}`}>
          <p>
            The URL of <strong>{created.name}</strong>, shown only now:
          </p>
          <input
            readOnly
            aria-label="Webhook URL"
            value={created.url}
            onFocus={(e) => e.currentTarget.select()}
          />
          <button type="button" onClick={() => void navigator.clipboard?.writeText(created.url)}>
            Copy
          </button>
        </div>
      )}
      {hooks === null ? (
        <p class="muted">Loading…</p>
      ) : hooks.length === 0 ? (
        <p class="muted">No incoming webhooks yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Incoming webhooks, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Posts to</th>
                <th scope="col">Mode</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {hooks.map((h) => (
                <tr key={h.id}>
                  <th scope="row">{h.name}</th>
                  <td>
                    {h.channel_id ? `#${channelName(h.channel_id) ?? h.channel_id}` : `topic ${h.topic_id}`}
                  </td>
                  <td>{h.template ? 'template' : 'Slack / Workroom JSON'}</td>
                  <td>
                    <time dateTime={h.created_at}>{new Date(h.created_at).toLocaleString()}</time>
                  </td>
                  <td>
                    <button type="button" onClick={() => void revoke(h)}>
                      Revoke <span class="sr-only">{h.name}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
