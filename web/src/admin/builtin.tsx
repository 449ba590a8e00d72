import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Bot, BotCommand, BotStatus, BuiltinBot, Organization } from '../api/types';

/**
 * Built-in bots (docs/BUILTIN-BOTS.md): the system and platform bots that run inside the server, one
 * row per organization in GET /api/bots (`builtin` names the bot). Only a system administrator changes
 * them — enable or disable one organization's row (PATCH /api/bots/{id}) or the bot in every
 * organization (PATCH /api/builtin-bots/{key}), rename and describe a row —; everybody else sees them
 * read-only. What the server refuses for them (delete, API keys, webhook secret, incoming webhook,
 * command registration, webhook URL and events) is never offered.
 */

export const isBuiltin = (b: Bot): boolean => b.builtin !== null;

const KIND_LABEL = { system: 'System', platform: 'Platform', custom: 'Custom' } as const;

export function KindBadge({ bot }: { bot: Pick<Bot, 'type'> }) {
  return <span class={`badge kind-${bot.type}`}>{KIND_LABEL[bot.type]}</span>;
}

export function StatusBadge({ status }: { status: BotStatus }) {
  return <span class={`state-badge ${status}`}>{status === 'active' ? 'Active' : 'Disabled'}</span>;
}

/** "active in 3, disabled in 1" — the catalogue's view of every organization. */
export function everywhereText(entry: BuiltinBot): string {
  const { active, disabled } = entry.organizations;
  const total = active + disabled;
  if (entry.status === 'active') return total === 1 ? 'Active' : `Active in all ${total}`;
  if (entry.status === 'disabled') return total === 1 ? 'Disabled' : `Disabled in all ${total}`;
  return `Mixed: active in ${active}, disabled in ${disabled}`;
}

/** How many organizations have the bot: the catalogue's count, else the organizations listed. */
export const orgCount = (entry: BuiltinBot | null, listed: number): number =>
  entry ? entry.organizations.active + entry.organizations.disabled : listed;

/** A change of status waiting for its confirmation. */
export interface PendingChange {
  bot: Bot;
  scope: 'here' | 'everywhere';
  status: BotStatus;
}

export function confirmText(p: PendingChange, orgName: string, count: number): string {
  const where = p.scope === 'here' ? `in ${orgName}` : `in every organization (${count})`;
  return p.status === 'disabled'
    ? `Disable ${p.bot.name} ${where}? Its commands leave the slash palette and are refused, it receives no events and its scheduled jobs are skipped until it is enabled again.` +
        (p.scope === 'everywhere' ? ' Organizations created later start with it disabled.' : '')
    : `Enable ${p.bot.name} ${where}? Its commands return to the slash palette and it receives events again.`;
}

/** Runs a confirmed change: one organization's row, or the built-in bot in every organization. */
export async function applyChange(p: PendingChange): Promise<string> {
  if (p.scope === 'here') {
    const b = await ok(
      api.PATCH('/api/bots/{botId}', { params: { path: { botId: p.bot.id } }, body: { status: p.status } }),
    );
    return `${b.name} is ${b.status === 'active' ? 'enabled' : 'disabled'} in this organization.`;
  }
  const r = await ok(
    api.PATCH('/api/builtin-bots/{key}', {
      params: { path: { key: p.bot.builtin ?? '' } },
      body: { status: p.status },
    }),
  );
  return `${r.name} is ${p.status === 'active' ? 'enabled' : 'disabled'} in every organization (${r.changed} changed).`;
}

/** An inline confirmation; its first button takes the focus so that the keyboard continues there. */
export function Confirm(props: {
  text: string;
  action: string;
  danger: boolean;
  onConfirm(): Promise<void>;
  onCancel(): void;
}) {
  const first = useRef<HTMLButtonElement>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => first.current?.focus(), []);
  return (
    <div class="confirm" role="group" aria-label="Confirm the change">
      <p>{props.text}</p>
      <div class="buttons">
        <button
          ref={first}
          type="button"
          class={props.danger ? 'danger' : 'primary'}
          disabled={busy}
          onClick={() => {
            setBusy(true);
            void props.onConfirm().finally(() => setBusy(false));
          }}
        >
          {props.action}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

const actionLabel = (p: PendingChange) =>
  `${p.status === 'disabled' ? 'Disable' : 'Enable'} ${p.scope === 'here' ? 'here' : 'everywhere'}`;

/**
 * The list of built-in bots of one organization (a system administrator picks which; everybody else
 * sees their own), each marked System or Platform, with its status here and, for a system
 * administrator, across organizations and an Enable / Disable control.
 */
export function BuiltinBots(props: {
  bots: Bot[];
  catalogue: BuiltinBot[] | null;
  orgs: Organization[];
  orgId: string;
  setOrgId(id: string): void;
  isSystemAdmin: boolean;
  selected: string | null;
  select(id: string | null): void;
  onChanged(message: string): Promise<void>;
}) {
  const [pending, setPending] = useState<PendingChange | null>(null);
  const [error, setError] = useState<string | null>(null);
  const rows = props.bots.filter((b) => b.org_id === props.orgId);
  const orgName = props.orgs.find((o) => o.id === props.orgId)?.name ?? 'this organization';
  const entryOf = (b: Bot) => props.catalogue?.find((e) => e.key === b.builtin) ?? null;
  const admin = props.isSystemAdmin;
  const columns = admin ? 6 : 4;

  return (
    <section aria-labelledby="builtin-title" class="panel">
      <div class="panel-head">
        <h2 id="builtin-title">Built-in bots</h2>
        {admin && props.orgs.length > 1 && (
          <label class="inline-label">
            Organization
            <select value={props.orgId} onChange={(e) => props.setOrgId(e.currentTarget.value)}>
              {props.orgs.map((o) => (
                <option key={o.id} value={o.id}>
                  {o.name}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <p class="muted">
        They run inside the server and come with every organization.{' '}
        {admin
          ? 'As a system administrator you enable and disable them, here or in every organization.'
          : 'Only a system administrator can change them.'}
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {rows.length === 0 ? (
        <p class="muted">No built-in bots in {orgName}.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Built-in bots of {orgName}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" class="wide">
                  What it does
                </th>
                <th scope="col">Status</th>
                {admin && (
                  <th scope="col" class="wide">
                    All organizations
                  </th>
                )}
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((b) => {
                const entry = entryOf(b);
                const confirming = pending !== null && pending.bot.id === b.id;
                return [
                  <tr key={b.id} class={b.id === props.selected ? 'selected' : ''}>
                    <th scope="row">
                      {b.name} <KindBadge bot={b} />
                    </th>
                    <td class="wide">{b.description || '—'}</td>
                    <td>
                      <StatusBadge status={b.status} />
                    </td>
                    {admin && <td class="wide">{entry ? everywhereText(entry) : '—'}</td>}
                    <td>
                      <span class="buttons row-buttons">
                        <button
                          type="button"
                          aria-label={`Details of ${b.name}`}
                          aria-pressed={b.id === props.selected}
                          onClick={() => props.select(b.id === props.selected ? null : b.id)}
                        >
                          Details
                        </button>
                        {admin && (
                          <button
                            type="button"
                            aria-label={`${b.status === 'active' ? 'Disable' : 'Enable'} ${b.name} in ${orgName}`}
                            aria-expanded={confirming}
                            onClick={() =>
                              setPending(
                                confirming
                                  ? null
                                  : {
                                      bot: b,
                                      scope: 'here',
                                      status: b.status === 'active' ? 'disabled' : 'active',
                                    },
                              )
                            }
                          >
                            {b.status === 'active' ? 'Disable' : 'Enable'}
                          </button>
                        )}
                      </span>
                    </td>
                  </tr>,
                  confirming && pending !== null && (
                    <tr key={`${b.id}-confirm`} class="confirm-row">
                      <td colSpan={columns}>
                        <Confirm
                          text={confirmText(pending, orgName, orgCount(entry, props.orgs.length))}
                          action={actionLabel(pending)}
                          danger={pending.status === 'disabled'}
                          onCancel={() => setPending(null)}
                          onConfirm={async () => {
                            try {
                              const message = await applyChange(pending);
                              setPending(null);
                              setError(null);
                              await props.onChanged(message);
                            } catch (e) {
                              setError(describe(e));
                            }
                          }}
                        />
                      </td>
                    </tr>
                  ),
                ];
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/**
 * One built-in bot: what it does (description, commands, events), its status here and (for a system
 * administrator) everywhere with the controls to change them, and a short explanation of what it does
 * not have. Nothing the server refuses for a built-in bot is offered.
 */
export function BuiltinBotDetail(props: {
  bot: Bot;
  entry: BuiltinBot | null;
  orgName: string;
  orgCount: number;
  isSystemAdmin: boolean;
  onChanged(message: string): Promise<void>;
}) {
  const { bot, entry } = props;
  const admin = props.isSystemAdmin;
  const [commands, setCommands] = useState<BotCommand[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState<PendingChange | null>(null);
  const [editing, setEditing] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    heading.current?.focus();
    ok(api.GET('/api/bots/{botId}/commands', { params: { path: { botId: bot.id } } }))
      .then((r) => setCommands(r.items))
      .catch((e: unknown) => setError(describe(e)));
  }, [bot.id]);

  const change = (scope: PendingChange['scope'], status: BotStatus) => (
    <button
      type="button"
      aria-expanded={pending?.scope === scope && pending.status === status}
      onClick={() => setPending({ bot, scope, status })}
    >
      {status === 'active' ? 'Enable' : 'Disable'}{' '}
      {scope === 'here' ? `in ${props.orgName}` : 'in every organization'}
    </button>
  );

  return (
    <section class="panel builtin-detail" aria-labelledby="bot-title">
      <div class="panel-head">
        <h2 id="bot-title" tabIndex={-1} ref={heading}>
          {bot.name}
        </h2>
        <KindBadge bot={bot} />
        <StatusBadge status={bot.status} />
      </div>
      {bot.description && <p>{bot.description}</p>}
      <div class="note-box" role="note" aria-label="About built-in bots">
        <p>
          <strong>Built-in {bot.type} bot</strong>, part of Workroom: it runs inside the server. It has no
          webhook URL, API keys, webhook secret or incoming webhook; its events and commands are defined in
          its code, and it cannot be deleted
          {admin
            ? ' (disable it instead).'
            : '. Only a system administrator can rename, enable or disable it.'}
        </p>
        <p>
          {bot.type === 'system'
            ? 'A system bot answers its commands anywhere, in rooms it is not a member of too, and replies to the person who used them.'
            : 'A platform bot acts as a member: using one of its commands in a channel or topic adds it there, and any member of the channel or project may remove it again.'}
        </p>
      </div>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}

      <section aria-labelledby="builtin-status-title" class="sub">
        <h3 id="builtin-status-title">Status</h3>
        <dl class="facts">
          <dt>In {props.orgName}</dt>
          <dd>{bot.status === 'active' ? 'Active' : 'Disabled'}</dd>
          {entry !== null && props.orgCount > 1 && (
            <>
              <dt>All organizations</dt>
              <dd>{everywhereText(entry)}</dd>
            </>
          )}
        </dl>
        {admin && (
          <div class="buttons">
            {change('here', bot.status === 'active' ? 'disabled' : 'active')}
            {entry !== null && entry.status !== 'disabled' && change('everywhere', 'disabled')}
            {entry !== null && entry.status !== 'active' && change('everywhere', 'active')}
            {!editing && (
              <button type="button" onClick={() => setEditing(true)}>
                Rename or describe
              </button>
            )}
          </div>
        )}
        {pending !== null && (
          <Confirm
            key={`${pending.scope}-${pending.status}`}
            text={confirmText(pending, props.orgName, props.orgCount)}
            action={actionLabel(pending)}
            danger={pending.status === 'disabled'}
            onCancel={() => setPending(null)}
            onConfirm={async () => {
              try {
                const message = await applyChange(pending);
                setPending(null);
                setError(null);
                await props.onChanged(message);
              } catch (e) {
                setError(describe(e));
              }
            }}
          />
        )}
        {admin && editing && (
          <EditBuiltin
            bot={bot}
            onDone={async (message) => {
              setEditing(false);
              if (message !== null) await props.onChanged(message);
            }}
          />
        )}
      </section>

      <section aria-labelledby="builtin-commands-title" class="sub">
        <h3 id="builtin-commands-title">Commands</h3>
        {commands === null ? (
          <p class="muted">Loading…</p>
        ) : commands.length === 0 ? (
          <p class="muted">No slash commands.</p>
        ) : (
          <ul class="command-list">
            {commands.map((c) => (
              <li key={c.command}>
                {/* Built-in bots' usage hints are whole examples ("/poll "Question" …"). */}
                {c.usage_hint?.startsWith(`/${c.command}`) ? (
                  <code>{c.usage_hint}</code>
                ) : (
                  <>
                    <code>/{c.command}</code> {c.usage_hint && <span class="hint">{c.usage_hint}</span>}
                  </>
                )}{' '}
                — {c.description}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="builtin-events-title" class="sub">
        <h3 id="builtin-events-title">Events</h3>
        <dl class="facts">
          <dt>Where it is a member</dt>
          <dd>{bot.events.length === 0 ? 'none' : bot.events.join(', ')}</dd>
          {entry !== null && (
            <>
              <dt>From its whole organization</dt>
              <dd>{entry.org_events.length === 0 ? 'none' : entry.org_events.join(', ')}</dd>
            </>
          )}
        </dl>
      </section>
    </section>
  );
}

/** A system administrator renames or describes one organization's row (PATCH /api/bots/{id}). */
function EditBuiltin(props: { bot: Bot; onDone(message: string | null): Promise<void> }) {
  const [name, setName] = useState(props.bot.name);
  const [description, setDescription] = useState(props.bot.description);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = `builtin-${props.bot.id}`;

  async function save(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const b = await ok(
        api.PATCH('/api/bots/{botId}', {
          params: { path: { botId: props.bot.id } },
          body: { name, description },
        }),
      );
      await props.onDone(`${b.name} saved.`);
    } catch (err) {
      setError(describe(err));
      setBusy(false);
    }
  }

  return (
    <form class="card form" onSubmit={(e) => void save(e)} aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Rename or describe {props.bot.name}</h4>
      <label for={`${id}-name`}>Name</label>
      <input
        id={`${id}-name`}
        required
        maxLength={200}
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <label for={`${id}-desc`}>Description</label>
      <textarea
        id={`${id}-desc`}
        maxLength={2000}
        value={description}
        onInput={(e) => setDescription(e.currentTarget.value)}
      />
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy}>
          Save
        </button>
        <button type="button" onClick={() => void props.onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
