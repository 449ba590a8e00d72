import { lazy, Suspense } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import type { Shell } from '../app';
import './admin.css';
import { api, describe, ok } from '../api/client';
import type { Bot } from '../api/types';
import { TopBar } from '../topbar';
import { BotDetail } from './bot-detail';
import { BotForm } from './bot-form';

// The people page is its own chunk too: most visits to /admin are about bots.
const People = lazy(() => import('./people').then((m) => ({ default: m.People })));

type Page = 'bots' | 'people';
const pageOf = (): Page => (location.pathname.startsWith('/admin/people') ? 'people' : 'bots');
const PAGES: { page: Page; path: string; label: string }[] = [
  { page: 'bots', path: '/admin', label: 'Bots' },
  { page: 'people', path: '/admin/people', label: 'People and departments' },
];

/**
 * The administration screen: bots (/admin) and, for administrators, the organization's people,
 * roles and departments (/admin/people). What a person may do is the server's decision (403
 * answers are shown as they come).
 */
export function Admin({ shell }: { shell: Shell }) {
  const [page, setPage] = useState<Page>(pageOf);
  useEffect(() => {
    const onPop = () => setPage(pageOf());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const role = shell.session.user.role;
  const isAdmin = role === 'system_admin' || role === 'org_admin' || role === 'dept_admin';
  const shown = isAdmin ? page : 'bots';

  return (
    <div class="app admin">
      <TopBar shell={shell} here="admin" />
      <main class="admin-main" aria-labelledby="admin-title">
        <h1 id="admin-title">Administration</h1>
        {isAdmin && (
          <nav aria-label="Administration pages" class="admin-nav">
            {PAGES.map((p) => (
              <a
                key={p.page}
                href={p.path}
                aria-current={shown === p.page ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  if (location.pathname !== p.path) history.pushState(null, '', p.path);
                  setPage(p.page);
                }}
              >
                {p.label}
              </a>
            ))}
          </nav>
        )}
        {shown === 'people' ? (
          <Suspense fallback={<p class="loading">Loading…</p>}>
            <People shell={shell} />
          </Suspense>
        ) : (
          <BotsPage shell={shell} />
        )}
      </main>
    </div>
  );
}

/** The bots the signed-in person may see; for the selected one its keys, secret, commands and logs. */
function BotsPage({ shell }: { shell: Shell }) {
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
    <>
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
    </>
  );
}
