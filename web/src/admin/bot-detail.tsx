import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { ApiKey, Bot, BotCommand, KeyGrants, NewApiKey, Scope } from '../api/types';
import { BotForm } from './bot-form';
import { Deliveries } from './deliveries';
import { KeyGrantsEditor, PausedKey, useGrantsForm } from './key-grants';
import { SCOPES } from './lists';
import { ToolCalls } from './tool-calls';

const when = (iso: string | null) => (iso === null ? '—' : new Date(iso).toLocaleString());

/** One bot: its settings, API keys, webhook secret, custom commands, deliveries and MCP audit. */
export function BotDetail(props: {
  bot: Bot;
  allowPlatform: boolean;
  onChanged(): Promise<void>;
  onDeleted(): Promise<void>;
}) {
  const { bot } = props;
  const [editing, setEditing] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const path = { params: { path: { botId: bot.id } } };
  const head = useRef<HTMLHeadingElement>(null);
  // "Manage" opens the panel below the tables: bring it into view and move the focus to it.
  useEffect(() => {
    head.current?.scrollIntoView({ block: 'start', behavior: 'smooth' });
    head.current?.focus({ preventScroll: true });
  }, [bot.id]);

  return (
    <section class="panel" aria-labelledby="bot-title">
      <div class="panel-head">
        <h2 id="bot-title" ref={head} tabIndex={-1}>
          {bot.name}
        </h2>
        <span class="muted">
          {bot.type} bot · {bot.status}
        </span>
      </div>
      {bot.description && <p>{bot.description}</p>}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {editing ? (
        <BotForm
          title={`Edit ${bot.name}`}
          bot={bot}
          allowPlatform={props.allowPlatform}
          onCancel={() => setEditing(false)}
          onSave={async (input) => {
            await ok(
              api.PATCH('/api/bots/{botId}', {
                ...path,
                body: {
                  name: input.name,
                  description: input.description ?? '',
                  events: input.events ?? [],
                  webhook_url: input.webhook_url ?? null,
                },
              }),
            );
            setEditing(false);
            await props.onChanged();
          }}
        />
      ) : (
        <div class="buttons">
          <button type="button" onClick={() => setEditing(true)}>
            Edit bot
          </button>
          {confirmDelete ? (
            <>
              <span role="alert">Delete {bot.name}? Its keys stop working at once.</span>
              <button
                type="button"
                class="danger"
                onClick={() =>
                  void ok(api.DELETE('/api/bots/{botId}', path))
                    .then(props.onDeleted)
                    .catch((e: unknown) => setError(describe(e)))
                }
              >
                Delete bot
              </button>
              <button type="button" onClick={() => setConfirmDelete(false)}>
                Keep it
              </button>
            </>
          ) : (
            <button type="button" onClick={() => setConfirmDelete(true)}>
              Delete…
            </button>
          )}
        </div>
      )}
      <ApiKeys bot={bot} />
      <WebhookSecret bot={bot} />
      <BotChannels bot={bot} />
      <Commands bot={bot} />
      <Deliveries botId={bot.id} />
      <ToolCalls botId={bot.id} />
    </section>
  );
}

function ApiKeys({ bot }: { bot: Bot }) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [keyType, setKeyType] = useState<'live' | 'test'>('live');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set());
  const [days, setDays] = useState('90');
  const [fresh, setFresh] = useState<NewApiKey | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<string | null>(null);
  const [editingGrants, setEditingGrants] = useState<string | null>(null);
  // Grants (docs/API.md, "Agent grants"): the same fields as a key's grants editor.
  const grantsForm = useGrantsForm(bot.id, null, 'new');
  const path = { params: { path: { botId: bot.id } } };

  const reload = () =>
    ok(api.GET('/api/bots/{botId}/api-keys', path))
      .then((r) => setKeys(r.items))
      .catch((e: unknown) => setError(describe(e)));
  useEffect(() => void reload(), [bot.id]);

  async function issue(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const body: {
        key_type: 'live' | 'test';
        scopes: Scope[];
        expires_in_days?: number;
        grants?: KeyGrants;
      } = {
        key_type: keyType,
        scopes: SCOPES.filter((s) => scopes.has(s)),
      };
      const grants = grantsForm.grants();
      if (grants !== null) body.grants = grants;
      if (days.trim() !== '') body.expires_in_days = Number(days);
      setFresh(await ok(api.POST('/api/bots/{botId}/api-keys', { ...path, body })));
      setCopied(false);
      await reload();
    } catch (err) {
      setError(describe(err));
    }
  }

  return (
    <section aria-labelledby="keys-title" class="sub">
      <h3 id="keys-title">API keys</h3>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {fresh !== null && (
        <div class="once" role="alert">
          <p>
            <strong>Copy this key now.</strong> It is shown only once; Workroom keeps only a hash of it.
          </p>
          <code aria-label="New API key">{fresh.key}</code>
          <div class="buttons">
            <button
              type="button"
              class="primary"
              onClick={() =>
                void navigator.clipboard.writeText(fresh.key).then(
                  () => setCopied(true),
                  () => setError('Copying was not allowed; select the key and copy it by hand.'),
                )
              }
            >
              {copied ? 'Copied' : 'Copy key'}
            </button>
            <button type="button" onClick={() => setFresh(null)}>
              I have stored it
            </button>
          </div>
        </div>
      )}
      <form class="card form" onSubmit={(e) => void issue(e)} aria-label="Issue an API key">
        <fieldset>
          <legend>Key type</legend>
          {(['live', 'test'] as const).map((t) => (
            <label key={t} class="check">
              <input
                type="radio"
                name="key-type"
                value={t}
                checked={keyType === t}
                onChange={() => setKeyType(t)}
              />
              {t}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Scopes (none picked: every scope)</legend>
          <div class="checks">
            {SCOPES.map((s) => (
              <label key={s} class="check">
                <input
                  type="checkbox"
                  checked={scopes.has(s)}
                  onChange={(e) => {
                    const next = new Set(scopes);
                    if (e.currentTarget.checked) next.add(s);
                    else next.delete(s);
                    setScopes(next);
                  }}
                />
                {s}
              </label>
            ))}
          </div>
        </fieldset>
        <label for="key-days">Expires in days (empty: never)</label>
        <input
          id="key-days"
          type="number"
          min={1}
          max={3650}
          value={days}
          onInput={(e) => setDays(e.currentTarget.value)}
        />
        <details class="grants">
          <summary>Agent grants (optional)</summary>
          {grantsForm.error !== null && (
            <p class="error" role="alert">
              {grantsForm.error}
            </p>
          )}
          {grantsForm.fields}
        </details>
        <div class="buttons">
          <button type="submit" class="primary">
            Issue key
          </button>
        </div>
      </form>
      {keys
        ?.filter((k) => k.paused_at !== null && k.state === 'active')
        .map((k) => (
          <PausedKey key={k.id} botId={bot.id} apiKey={k} onResumed={reload} />
        ))}
      {keys !== null && keys.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">API keys of {bot.name}</caption>
            <thead>
              <tr>
                <th scope="col">Prefix</th>
                <th scope="col">Type</th>
                <th scope="col">Scopes</th>
                <th scope="col">Grants</th>
                <th scope="col" class="wide">
                  Created
                </th>
                <th scope="col" class="wide">
                  Last used
                </th>
                <th scope="col">Uses</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <th scope="row">
                    <code>{k.key_prefix}…</code>
                  </th>
                  <td>{k.key_type}</td>
                  <td>{k.scopes === null || k.scopes.length === 0 ? 'all' : k.scopes.join(', ')}</td>
                  <td>{grantsText(k.grants)}</td>
                  <td class="wide">{when(k.created_at)}</td>
                  <td class="wide">{when(k.last_used_at)}</td>
                  <td>{k.use_count}</td>
                  <td>{when(k.expires_at)}</td>
                  <td>{k.state === 'active' && k.paused_at !== null ? 'paused' : k.state}</td>
                  <td>
                    {k.state === 'active' && revoking !== k.id && (
                      <button
                        type="button"
                        aria-label={`Edit grants of ${k.key_prefix}`}
                        onClick={() => setEditingGrants(editingGrants === k.id ? null : k.id)}
                      >
                        Edit grants
                      </button>
                    )}
                    {k.state === 'active' &&
                      (revoking === k.id ? (
                        <span class="buttons">
                          <button
                            type="button"
                            class="danger"
                            onClick={() =>
                              void ok(
                                api.DELETE('/api/bots/{botId}/api-keys/{keyId}', {
                                  params: { path: { botId: bot.id, keyId: k.id } },
                                }),
                              )
                                .then(() => {
                                  setRevoking(null);
                                  return reload();
                                })
                                .catch((e: unknown) => setError(describe(e)))
                            }
                          >
                            Confirm revoke
                          </button>
                          <button type="button" onClick={() => setRevoking(null)}>
                            Cancel
                          </button>
                        </span>
                      ) : (
                        <button
                          type="button"
                          aria-label={`Revoke ${k.key_prefix}`}
                          onClick={() => setRevoking(k.id)}
                        >
                          Revoke
                        </button>
                      ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {keys
        ?.filter((k) => k.id === editingGrants && k.state === 'active')
        .map((k) => (
          <KeyGrantsEditor
            key={k.id}
            botId={bot.id}
            apiKey={k}
            onCancel={() => setEditingGrants(null)}
            onSaved={async () => {
              setEditingGrants(null);
              await reload();
            }}
          />
        ))}
    </section>
  );
}

/** A key's grants in a line: "none", or each grant that is set. */
function grantsText(g: ApiKey['grants']): string {
  if (g === null) return 'none';
  const parts: string[] = [];
  if (g.tools) parts.push(`tools: ${g.tools.join(', ')}`);
  if (g.read_only) parts.push('read-only');
  if (g.containers) parts.push(`${g.containers.length} container${g.containers.length === 1 ? '' : 's'}`);
  if (g.writes_per_hour !== undefined) parts.push(`${g.writes_per_hour} writes/hour`);
  if (g.writes_per_day !== undefined) parts.push(`${g.writes_per_day} writes/day`);
  if (g.approval?.length) parts.push(`approval: ${g.approval.join(', ')}`);
  if (g.mentions_all === false) parts.push('no @all/@here');
  if (g.confirm?.length) parts.push(`confirm: ${g.confirm.join(', ')}`);
  if (g.pause_on?.budget === false) parts.push('no budget pause');
  else if (g.pause_on?.budget)
    parts.push(
      `pause after ${g.pause_on.budget.refusals} refusals in ${g.pause_on.budget.window_minutes} min`,
    );
  if (g.pause_on?.burst === false) parts.push('no burst pause');
  else if (g.pause_on?.burst)
    parts.push(`pause at ${g.pause_on.burst.targets} places in ${g.pause_on.burst.window_minutes} min`);
  return parts.join('; ') || 'none';
}

function WebhookSecret({ bot }: { bot: Bot }) {
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [made, setMade] = useState(false);
  return (
    <section aria-labelledby="secret-title" class="sub">
      <h3 id="secret-title">Webhook secret</h3>
      <p class="muted">
        Signs every delivery to the bot's webhook URL. Creating a new one replaces the old at once.
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {secret !== null && (
        <div class="once" role="alert">
          <p>
            <strong>Copy this secret now.</strong> It is shown only once.
          </p>
          <code aria-label="Webhook secret">{secret}</code>
          <div class="buttons">
            <button
              type="button"
              onClick={() => void navigator.clipboard.writeText(secret).catch(() => undefined)}
            >
              Copy secret
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              I have stored it
            </button>
          </div>
        </div>
      )}
      <button
        type="button"
        onClick={() =>
          void ok(api.POST('/api/bots/{botId}/webhook-secret', { params: { path: { botId: bot.id } } }))
            .then((r) => {
              setSecret(r.secret);
              setMade(true);
            })
            .catch((e: unknown) => setError(describe(e)))
        }
      >
        {made ? 'Rotate secret' : 'Create or rotate secret'}
      </button>
    </section>
  );
}

function Commands({ bot }: { bot: Bot }) {
  const [items, setItems] = useState<BotCommand[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [command, setCommand] = useState('');
  const [description, setDescription] = useState('');
  const [hint, setHint] = useState('');
  const [editing, setEditing] = useState<string | null>(null);
  const path = { params: { path: { botId: bot.id } } };
  const reload = () =>
    ok(api.GET('/api/bots/{botId}/commands', path))
      .then((r) => setItems(r.items))
      .catch((e: unknown) => setError(describe(e)));
  useEffect(() => void reload(), [bot.id]);

  async function add(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const body: { command: string; description: string; usage_hint?: string } = {
        command: command.replace(/^\//, ''),
        description,
      };
      if (hint.trim() !== '') body.usage_hint = hint.trim();
      await ok(api.POST('/api/bots/{botId}/commands', { ...path, body }));
      setCommand('');
      setDescription('');
      setHint('');
      await reload();
    } catch (err) {
      setError(describe(err));
    }
  }

  return (
    <section aria-labelledby="commands-title" class="sub">
      <h3 id="commands-title">Slash commands</h3>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {items !== null && items.length > 0 && (
        <ul class="command-list">
          {items.map((c) =>
            editing === c.command ? (
              <li key={c.command}>
                <EditCommand
                  botId={bot.id}
                  command={c}
                  onDone={async (saved) => {
                    setEditing(null);
                    if (saved) await reload();
                  }}
                />
              </li>
            ) : (
              <li key={c.command}>
                <code>/{c.command}</code> {c.usage_hint && <span class="hint">{c.usage_hint}</span>} —{' '}
                {c.description}{' '}
                <button type="button" aria-label={`Edit /${c.command}`} onClick={() => setEditing(c.command)}>
                  Edit
                </button>{' '}
                <button
                  type="button"
                  aria-label={`Delete /${c.command}`}
                  onClick={() =>
                    void ok(
                      api.DELETE('/api/bots/{botId}/commands/{commandName}', {
                        params: { path: { botId: bot.id, commandName: c.command } },
                      }),
                    )
                      .then(reload)
                      .catch((e: unknown) => setError(describe(e)))
                  }
                >
                  Delete
                </button>
              </li>
            ),
          )}
        </ul>
      )}
      <form class="card form inline" onSubmit={(e) => void add(e)} aria-label="Add a command">
        <label for="cmd-name">Command</label>
        <input
          id="cmd-name"
          required
          pattern="/?[a-zA-Z0-9][a-zA-Z0-9_\-]*"
          value={command}
          onInput={(e) => setCommand(e.currentTarget.value)}
        />
        <label for="cmd-desc">Description</label>
        <input
          id="cmd-desc"
          required
          value={description}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
        <label for="cmd-hint">Usage hint</label>
        <input
          id="cmd-hint"
          placeholder="[service] [environment]"
          value={hint}
          onInput={(e) => setHint(e.currentTarget.value)}
        />
        <div class="buttons">
          <button type="submit" class="primary">
            Add command
          </button>
        </div>
      </form>
    </section>
  );
}

/** Changes a command's description and usage hint (PATCH …/commands/{command}); its name stays. */
function EditCommand(props: { botId: string; command: BotCommand; onDone(saved: boolean): Promise<void> }) {
  const c = props.command;
  const [description, setDescription] = useState(c.description);
  const [hint, setHint] = useState(c.usage_hint ?? '');
  const [error, setError] = useState<string | null>(null);
  const id = `cmd-edit-${c.command}`;

  async function save(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await ok(
        api.PATCH('/api/bots/{botId}/commands/{commandName}', {
          params: { path: { botId: props.botId, commandName: c.command } },
          body: { description, usage_hint: hint.trim() === '' ? null : hint.trim() },
        }),
      );
      await props.onDone(true);
    } catch (err) {
      setError(describe(err));
    }
  }

  return (
    <form class="card form inline" aria-label={`Edit /${c.command}`} onSubmit={(e) => void save(e)}>
      <p>
        <code>/{c.command}</code>
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <label for={`${id}-desc`}>Description</label>
      <input
        id={`${id}-desc`}
        required
        value={description}
        onInput={(e) => setDescription(e.currentTarget.value)}
      />
      <label for={`${id}-hint`}>Usage hint</label>
      <input id={`${id}-hint`} value={hint} onInput={(e) => setHint(e.currentTarget.value)} />
      <div class="buttons">
        <button type="submit" class="primary">
          Save command
        </button>
        <button type="button" onClick={() => void props.onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Adds the bot to a channel (or takes it out): what a team does before the bot can work there. */
function BotChannels({ bot }: { bot: Bot }) {
  const [channels, setChannels] = useState<{ id: string; name: string }[] | null>(null);
  const [channelId, setChannelId] = useState('');
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    ok(api.GET('/api/channels', { params: { query: { joined: 'true' } } }))
      .then((r) => {
        setChannels(r.items);
        setChannelId(r.items[0]?.id ?? '');
      })
      .catch((e: unknown) => setError(describe(e)));
  }, [bot.id]);
  const name = channels?.find((c) => c.id === channelId)?.name ?? '';
  const act = async (add: boolean) => {
    setError(null);
    try {
      if (add) {
        const r = await ok(
          api.POST('/api/channels/{channelId}/members', {
            params: { path: { channelId } },
            body: { bot_id: bot.id },
          }),
        );
        setStatus(r.added ? `${bot.name} added to #${name}.` : `${bot.name} already is in #${name}.`);
      } else {
        const r = await ok(
          api.DELETE('/api/channels/{channelId}/members/bots/{botId}', {
            params: { path: { channelId, botId: bot.id } },
          }),
        );
        setStatus(r.removed ? `${bot.name} removed from #${name}.` : `${bot.name} was not in #${name}.`);
      }
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <section aria-labelledby="bot-channels-title" class="sub">
      <h3 id="bot-channels-title">Channels</h3>
      {channels !== null && channels.length === 0 ? (
        <p class="muted">You are in no channel yet: create one in the chat first.</p>
      ) : (
        <div class="buttons">
          <label>
            Channel{' '}
            <select value={channelId} onChange={(e) => setChannelId(e.currentTarget.value)}>
              {(channels ?? []).map((c) => (
                <option key={c.id} value={c.id}>
                  #{c.name}
                </option>
              ))}
            </select>
          </label>
          <button type="button" class="primary" disabled={!channelId} onClick={() => void act(true)}>
            Add to channel
          </button>
          <button type="button" disabled={!channelId} onClick={() => void act(false)}>
            Remove from channel
          </button>
        </div>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
