import { useEffect, useState } from 'preact/hooks';
import type { Shell } from '../app';
import { api, describe, ok } from '../api/client';
import type { Bot } from '../api/types';
import { TopBar } from '../topbar';
import { BotDetail } from './bot-detail';
import { BotForm } from './bot-form';

/**
 * The administration screen (/admin): the bots the signed-in person may see, registering and
 * editing them, and for the selected bot its API keys, webhook secret and custom commands. What a
 * person may do is the server's decision (403 answers are shown as they come).
 */
export function Admin({ shell }: { shell: Shell }) {
  const [bots, setBots] = useState<Bot[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [registering, setRegistering] = useState(false);
  const [status, setStatus] = useState('');

  async function reload() {
    try {
      setBots((await ok(api.GET('/api/bots'))).items);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  }
  useEffect(() => void reload(), []);
  useEffect(() => {
    document.title = 'Administration · Workroom';
    return () => (document.title = 'Workroom');
  }, []);

  const bot = bots?.find((b) => b.id === selected) ?? null;
  const isSystemAdmin = shell.session.user.role === 'system_admin';

  return (
    <div class="app admin">
      <TopBar shell={shell} here="admin" />
      <main class="admin-main" aria-labelledby="admin-title">
        <h1 id="admin-title">Administration</h1>
        <p class="sr-only" role="status">
          {status}
        </p>
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <section aria-labelledby="bots-title" class="panel">
          <div class="panel-head">
            <h2 id="bots-title">Bots</h2>
            <button type="button" class="primary" onClick={() => setRegistering(true)} disabled={registering}>
              Register a bot
            </button>
          </div>
          {registering && (
            <BotForm
              title="Register a bot"
              allowPlatform={isSystemAdmin}
              onCancel={() => setRegistering(false)}
              onSave={async (input) => {
                const b = await ok(api.POST('/api/bots', { body: input }));
                setRegistering(false);
                setStatus(`Bot ${b.name} registered.`);
                await reload();
                setSelected(b.id);
              }}
            />
          )}
          {bots === null ? (
            <p class="muted">Loading…</p>
          ) : bots.length === 0 ? (
            <p class="muted">No bots yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Bots</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Type</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="wide">
                      Events
                    </th>
                    <th scope="col" class="wide">
                      Webhook
                    </th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {bots.map((b) => (
                    <tr key={b.id} class={b.id === selected ? 'selected' : ''}>
                      <th scope="row">{b.name}</th>
                      <td>{b.type}</td>
                      <td>{b.status}</td>
                      <td class="wide events">{b.events.length === 0 ? '—' : b.events.join(', ')}</td>
                      <td class="wide url">{b.webhook_url ?? '—'}</td>
                      <td>
                        <button
                          type="button"
                          aria-label={`Manage ${b.name}`}
                          aria-pressed={b.id === selected}
                          onClick={() => setSelected(b.id === selected ? null : b.id)}
                        >
                          Manage
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        {bot !== null && (
          <BotDetail
            key={bot.id}
            bot={bot}
            allowPlatform={isSystemAdmin}
            onChanged={reload}
            onDeleted={async () => {
              setSelected(null);
              setStatus(`Bot ${bot.name} deleted.`);
              await reload();
            }}
          />
        )}
      </main>
    </div>
  );
}
