import { lazy, Suspense } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import type { Shell } from '../app';
import './admin.css';
import { api, describe, ok } from '../api/client';
import type { Bot, BuiltinBot, Organization } from '../api/types';
import { TopBar } from '../topbar';
import { Approvals } from './approvals';
import { BotDetail } from './bot-detail';
import { BotForm } from './bot-form';
import { BuiltinBotDetail, BuiltinBots, isBuiltin, orgCount } from './builtin';
import { IncomingWebhooks } from './incoming-webhooks';

// The people page is its own chunk too: most visits to /admin are about bots.
const People = lazy(() => import('./people').then((m) => ({ default: m.People })));

type Page = 'bots' | 'people' | 'approvals';
const pageOf = (): Page =>
  location.pathname.startsWith('/admin/people')
    ? 'people'
    : location.pathname.startsWith('/admin/approvals')
      ? 'approvals'
      : 'bots';
const PAGES: { page: Page; path: string; label: string; adminOnly?: boolean }[] = [
  { page: 'bots', path: '/admin', label: 'Bots' },
  { page: 'approvals', path: '/admin/approvals', label: 'Approvals' },
  { page: 'people', path: '/admin/people', label: 'People and departments', adminOnly: true },
];

/**
 * The administration screen: bots (/admin), the approvals queue of bots' held calls
 * (/admin/approvals) and, for administrators, the organization's people, roles and departments
 * (/admin/people). What a person may do is the server's decision (403
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
  // Approvals are for whoever owns a bot (or is named on a key's grants), not only administrators.
  const shown = isAdmin || page === 'approvals' ? page : 'bots';

  return (
    <div class="app admin">
      <TopBar shell={shell} here="admin" />
      <main class="admin-main" aria-labelledby="admin-title">
        <h1 id="admin-title">Administration</h1>
        {
          <nav aria-label="Administration pages" class="admin-nav">
            {PAGES.filter((p) => isAdmin || !p.adminOnly).map((p) => (
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
        }
        {shown === 'approvals' ? (
          <Approvals />
        ) : shown === 'people' ? (
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

/**
 * The bots the signed-in person may see: registered bots (for the selected one its keys, secret,
 * commands and logs) and the built-in bots of the organization (builtin.tsx).
 */
function BotsPage({ shell }: { shell: Shell }) {
  const [bots, setBots] = useState<Bot[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [registering, setRegistering] = useState(false);
  const [status, setStatus] = useState('');
  const isSystemAdmin = shell.session.user.role === 'system_admin';
  // The catalogue of built-in bots across organizations: system administrators only (403 otherwise).
  const [catalogue, setCatalogue] = useState<BuiltinBot[] | null>(null);
  const [orgs, setOrgs] = useState<Organization[]>([]);
  const [orgId, setOrgId] = useState(shell.session.user.org_id);

  async function reload() {
    try {
      const [list, cat] = await Promise.all([
        ok(api.GET('/api/bots')),
        isSystemAdmin ? ok(api.GET('/api/builtin-bots')) : Promise.resolve(null),
      ]);
      setBots(list.items);
      setCatalogue(cat?.items ?? null);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  }
  useEffect(() => void reload(), []);
  useEffect(() => {
    // Names of the organizations (all of them for a system administrator, else one's own).
    ok(api.GET('/api/organizations'))
      .then((r) => setOrgs(r.items))
      .catch(() => undefined);
  }, []);
  useEffect(() => {
    document.title = 'Administration · Workroom';
    return () => (document.title = 'Workroom');
  }, []);

  const bot = bots?.find((b) => b.id === selected) ?? null;
  const registered = bots?.filter((b) => !isBuiltin(b)) ?? null;
  const builtins = bots?.filter(isBuiltin) ?? [];
  const entry = bot?.builtin ? (catalogue?.find((e) => e.key === bot.builtin) ?? null) : null;
  const orgName = (id: string) => orgs.find((o) => o.id === id)?.name ?? 'this organization';
  const builtinChanged = async (message: string) => {
    setStatus(message);
    await reload();
  };

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
        {registered === null ? (
          <p class="muted">Loading…</p>
        ) : registered.length === 0 ? (
          <p class="muted">No bots registered yet.</p>
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
                {registered.map((b) => (
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
      {bots !== null && (
        <BuiltinBots
          bots={builtins}
          catalogue={catalogue}
          orgs={orgs}
          orgId={orgId}
          setOrgId={setOrgId}
          isSystemAdmin={isSystemAdmin}
          selected={selected}
          select={setSelected}
          onChanged={builtinChanged}
        />
      )}
      {bot !== null && isBuiltin(bot) && (
        <BuiltinBotDetail
          key={bot.id}
          bot={bot}
          entry={entry}
          orgName={orgName(bot.org_id)}
          orgCount={orgCount(entry, orgs.length)}
          isSystemAdmin={isSystemAdmin}
          onChanged={builtinChanged}
        />
      )}
      {bot !== null && !isBuiltin(bot) && (
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
      <IncomingWebhooks />
    </>
  );
}
