import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Channel, Mention, Project, Topic, User } from '../api/types';
import { senderName, type Directory, type RoomRef } from './directory';

/**
 * Team set-up in the chat (issue 17): create, rename, describe and archive channels, projects and
 * topics; browse and join public channels; members (people and bots) with a picker that searches as
 * you type; start a DM. Every action goes through the public REST API, and only what the signed-in
 * person may do is offered — the server still decides, and its refusal is shown.
 */

export const isAdmin = (me: User): boolean => me.role === 'org_admin' || me.role === 'system_admin';

/** A modal dialog (the native <dialog>: focus stays inside, Escape closes, focus returns after). */
export function Dialog(props: {
  title: string;
  onClose(): void;
  children: ComponentChildren;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const back = document.activeElement as HTMLElement | null;
    ref.current?.showModal();
    return () => back?.focus();
  }, []);
  return (
    <dialog
      ref={ref}
      class={`dialog${props.wide ? ' wide' : ''}`}
      aria-labelledby={titleId}
      onClose={props.onClose}
    >
      <div class="dialog-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" class="link" onClick={() => ref.current?.close()}>
          Close
        </button>
      </div>
      {props.children}
    </dialog>
  );
}

function ErrorLine({ error }: { error: string | null }) {
  return error === null ? null : (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

/** Runs an action, keeping its error for the form. */
function useAction(): [string | null, boolean, (fn: () => Promise<void>) => Promise<void>] {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return [
    error,
    busy,
    async (fn) => {
      setBusy(true);
      setError(null);
      try {
        await fn();
      } catch (e) {
        setError(describe(e));
      } finally {
        setBusy(false);
      }
    },
  ];
}

export function NewChannelDialog(props: { onClose(): void; created(c: Channel): void }) {
  const [error, busy, run] = useAction();
  return (
    <Dialog title="New channel" onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          const description = String(f.get('description') ?? '').trim();
          void run(async () => {
            const c = await ok(
              api.POST('/api/channels', {
                body: {
                  name: String(f.get('name') ?? '').trim(),
                  ...(description && { description }),
                  is_private: f.get('private') === 'on',
                },
              }),
            );
            props.created(c);
          });
        }}
      >
        <label>
          Name
          <input name="name" required maxLength={100} autoFocus autoComplete="off" />
        </label>
        <label>
          Description <span class="muted">(optional)</span>
          <input name="description" maxLength={1000} autoComplete="off" />
        </label>
        <label class="check">
          <input type="checkbox" name="private" /> Private: only the people added see it
        </label>
        <ErrorLine error={error} />
        <div class="row-buttons">
          <button type="submit" class="primary" disabled={busy}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function NewProjectDialog(props: { onClose(): void; created(p: Project, t: Topic | null): void }) {
  const [error, busy, run] = useAction();
  return (
    <Dialog title="New project" onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          const topic = String(f.get('topic') ?? '').trim();
          void run(async () => {
            const p = await ok(
              api.POST('/api/projects', { body: { name: String(f.get('name') ?? '').trim() } }),
            );
            const t = topic
              ? await ok(
                  api.POST('/api/projects/{projectId}/topics', {
                    params: { path: { projectId: p.id } },
                    body: { name: topic },
                  }),
                )
              : null;
            props.created(p, t);
          });
        }}
      >
        <label>
          Name
          <input name="name" required maxLength={100} autoFocus autoComplete="off" />
        </label>
        <label>
          First topic <span class="muted">(optional)</span>
          <input name="topic" maxLength={100} autoComplete="off" />
        </label>
        <ErrorLine error={error} />
        <div class="row-buttons">
          <button type="submit" class="primary" disabled={busy}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function NewTopicDialog(props: { project: Project; onClose(): void; created(t: Topic): void }) {
  const [error, busy, run] = useAction();
  return (
    <Dialog title={`New topic in ${props.project.name}`} onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
          void run(async () => {
            props.created(
              await ok(
                api.POST('/api/projects/{projectId}/topics', {
                  params: { path: { projectId: props.project.id } },
                  body: { name },
                }),
              ),
            );
          });
        }}
      >
        <label>
          Name
          <input name="name" required maxLength={100} autoFocus autoComplete="off" />
        </label>
        <ErrorLine error={error} />
        <div class="row-buttons">
          <button type="submit" class="primary" disabled={busy}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** Public channels of the organization (and private ones you are in), with Join for those you are not in. */
export function BrowseChannelsDialog(props: {
  dir: Directory;
  meId: string;
  onClose(): void;
  open(r: RoomRef): void;
}) {
  const [all, setAll] = useState<Channel[] | null>(null);
  const [q, setQ] = useState('');
  const [error, busy, run] = useAction();
  useEffect(() => {
    void run(async () => setAll((await ok(api.GET('/api/channels', { params: { query: {} } }))).items));
  }, []);
  const joined = new Set(props.dir.channels.map((c) => c.id));
  const shown = (all ?? []).filter((c) => c.name.toLowerCase().includes(q.trim().toLowerCase()));
  return (
    <Dialog title="Browse channels" onClose={props.onClose} wide>
      <label class="stack">
        Filter channels
        <input type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} autoFocus />
      </label>
      <ErrorLine error={error} />
      {all === null ? (
        <p class="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="muted">No channels match.</p>
      ) : (
        <ul class="browse" aria-label="Channels">
          {shown.map((c) => (
            <li key={c.id}>
              <span class="name">
                {c.is_private ? '🔒 ' : '# '}
                {c.name}
              </span>
              <span class="muted desc">{c.description}</span>
              {joined.has(c.id) ? (
                <button type="button" onClick={() => props.open({ kind: 'channel', id: c.id })}>
                  Open
                </button>
              ) : (
                <button
                  type="button"
                  class="primary"
                  disabled={busy}
                  aria-label={`Join ${c.name}`}
                  onClick={() =>
                    void run(async () => {
                      await ok(
                        api.POST('/api/channels/{channelId}/members', {
                          params: { path: { channelId: c.id } },
                          body: { user_id: props.meId },
                        }),
                      );
                      props.open({ kind: 'channel', id: c.id });
                    })
                  }
                >
                  Join
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
    </Dialog>
  );
}

/**
 * A people picker that searches as you type (GET /api/mentions/users: people and bots of the
 * organization, the room's members first), as a combobox with a listbox of matches.
 */
export function PeoplePicker(props: {
  label: string;
  channelId?: string;
  exclude?: Set<string>;
  people?: boolean;
  bots?: boolean;
  pick(m: Mention): void;
}) {
  const [q, setQ] = useState('');
  const [items, setItems] = useState<Mention[]>([]);
  const [active, setActive] = useState(0);
  const [open, setOpen] = useState(false);
  const seq = useRef(0);
  const listId = useId();
  const wantPeople = props.people ?? true;
  const wantBots = props.bots ?? true;
  useEffect(() => {
    const n = ++seq.current;
    const t = setTimeout(() => {
      ok(
        api.GET('/api/mentions/users', {
          params: { query: { q, limit: 20, ...(props.channelId && { channel_id: props.channelId }) } },
        }),
      )
        .then((r) => {
          if (n !== seq.current) return;
          setItems(
            r.items.filter(
              (m) =>
                ((m.type === 'user' && wantPeople) || (m.type === 'bot' && wantBots)) &&
                !props.exclude?.has(m.id),
            ),
          );
          setActive(0);
        })
        .catch(() => undefined);
    }, 120);
    return () => clearTimeout(t);
  }, [q, props.exclude?.size]);
  const pick = (m: Mention) => {
    props.pick(m);
    setQ('');
    setOpen(false);
  };
  const optionId = (i: number) => `${listId}-${i}`;
  return (
    <div class="picker">
      <label>
        {props.label}
        <input
          role="combobox"
          aria-expanded={open && items.length > 0}
          aria-controls={listId}
          aria-autocomplete="list"
          aria-activedescendant={open && items.length > 0 ? optionId(active) : undefined}
          value={q}
          autoComplete="off"
          placeholder="Type a name"
          onFocus={() => setOpen(true)}
          onInput={(e) => {
            setQ(e.currentTarget.value);
            setOpen(true);
          }}
          onKeyDown={(e) => {
            if (e.key === 'ArrowDown') {
              e.preventDefault();
              setActive((a) => Math.min(a + 1, items.length - 1));
            } else if (e.key === 'ArrowUp') {
              e.preventDefault();
              setActive((a) => Math.max(a - 1, 0));
            } else if (e.key === 'Enter' && open && items[active]) {
              e.preventDefault();
              pick(items[active]);
            } else if (e.key === 'Escape' && open) {
              e.preventDefault();
              e.stopPropagation();
              setOpen(false);
            }
          }}
        />
      </label>
      {open && items.length > 0 && (
        <ul id={listId} role="listbox" aria-label={`${props.label}: matches`} class="popup picker-list">
          {items.map((m, i) => (
            <li
              key={`${m.type}:${m.id}`}
              id={optionId(i)}
              role="option"
              aria-selected={i === active}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(m);
              }}
            >
              <Avatar name={m.name} id={m.id} bot={m.type === 'bot'} />
              {m.name}
              {m.type === 'bot' && <span class="badge">BOT</span>}
              {m.email && <span class="muted"> {m.email}</span>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const AVATAR_COLOURS = [
  '#2457c5',
  '#b4235a',
  '#1d7a4c',
  '#8a4b08',
  '#6b3fb3',
  '#0b6e79',
  '#9c2f2f',
  '#4a5a12',
];

/** Initials on a colour picked from the id, the same for one person everywhere. */
export function Avatar(props: { name: string; id: string; bot?: boolean }) {
  let h = 0;
  for (const ch of props.id) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const words = props.name.split(/[\s._-]+/).filter(Boolean);
  const initials = (
    (words[0]?.[0] ?? '?') + (words.length > 1 ? (words[words.length - 1]![0] ?? '') : '')
  ).toUpperCase();
  return (
    <span
      class={`avatar${props.bot ? ' bot' : ''}`}
      aria-hidden="true"
      style={{ background: AVATAR_COLOURS[h % AVATAR_COLOURS.length] }}
    >
      {initials}
    </span>
  );
}

type MemberRow = { member_type: 'user' | 'bot'; member_id: string; joined_at: string };

/**
 * A channel's, project's or topic's settings: name and description, members (add with the picker,
 * remove, leave) and archive — each shown only to whom the server allows it.
 */
export function RoomSettingsDialog(props: {
  dir: Directory;
  me: User;
  room: RoomRef;
  onClose(): void;
  left(): void;
}) {
  const { dir, me, room } = props;
  const channel = room.kind === 'channel' ? dir.channels.find((c) => c.id === room.id) : undefined;
  const project =
    room.kind === 'topic' ? dir.projects.find((p) => p.topics.some((t) => t.id === room.id)) : undefined;
  const topic = project?.topics.find((t) => t.id === room.id);
  const [members, setMembers] = useState<MemberRow[] | null>(null);
  const [error, busy, run] = useAction();
  const [status, setStatus] = useState<string | null>(null);
  const [confirmArchive, setConfirmArchive] = useState<'room' | 'project' | null>(null);
  const admin = isAdmin(me);

  const loadMembers = async () => {
    if (channel)
      setMembers(
        (
          await ok(
            api.GET('/api/channels/{channelId}/members', { params: { path: { channelId: channel.id } } }),
          )
        ).items,
      );
    else if (project)
      setMembers(
        (
          await ok(
            api.GET('/api/projects/{projectId}/members', { params: { path: { projectId: project.id } } }),
          )
        ).items,
      );
  };
  useEffect(() => void run(loadMembers), [room.id]);

  if (!channel && !topic) return null;
  const isMember = members?.some((m) => m.member_type === 'user' && m.member_id === me.id) ?? false;
  const creator = channel ? channel.created_by === me.id : project?.created_by === me.id;
  const mayEdit = isMember || admin;
  const mayRemoveOthers = creator || admin;
  const mayArchive = creator || admin;
  const mayArchiveTopic = admin || topic?.created_by === me.id || project?.created_by === me.id;
  const where = channel ? `#${channel.name}` : project!.name;
  const memberIds = new Set((members ?? []).map((m) => m.member_id));

  const addMember = (m: Mention) =>
    run(async () => {
      const body = m.type === 'bot' ? { bot_id: m.id } : { user_id: m.id };
      if (channel)
        await ok(
          api.POST('/api/channels/{channelId}/members', {
            params: { path: { channelId: channel.id } },
            body,
          }),
        );
      else
        await ok(
          api.POST('/api/projects/{projectId}/members', {
            params: { path: { projectId: project!.id } },
            body,
          }),
        );
      setStatus(`${m.name} added to ${where}.`);
      await loadMembers();
    });

  const removeMember = (m: MemberRow) =>
    run(async () => {
      const self = m.member_type === 'user' && m.member_id === me.id;
      if (channel) {
        if (m.member_type === 'user')
          await ok(
            api.DELETE('/api/channels/{channelId}/members/users/{userId}', {
              params: { path: { channelId: channel.id, userId: m.member_id } },
            }),
          );
        else
          await ok(
            api.DELETE('/api/channels/{channelId}/members/bots/{botId}', {
              params: { path: { channelId: channel.id, botId: m.member_id } },
            }),
          );
      } else if (m.member_type === 'user')
        await ok(
          api.DELETE('/api/projects/{projectId}/members/users/{userId}', {
            params: { path: { projectId: project!.id, userId: m.member_id } },
          }),
        );
      else
        await ok(
          api.DELETE('/api/projects/{projectId}/members/bots/{botId}', {
            params: { path: { projectId: project!.id, botId: m.member_id } },
          }),
        );
      if (self) props.left();
      else {
        setStatus(`${senderName(dir, { sender_type: m.member_type, sender_id: m.member_id })} removed.`);
        await loadMembers();
      }
    });

  return (
    <Dialog
      title={channel ? `Settings of #${channel.name}` : `Settings of ${project!.name} › ${topic!.name}`}
      onClose={props.onClose}
      wide
    >
      {mayEdit && channel && (
        <form
          class="stack"
          aria-label="Name and description"
          onSubmit={(e) => {
            e.preventDefault();
            const f = new FormData(e.currentTarget);
            void run(async () => {
              await ok(
                api.PATCH('/api/channels/{channelId}', {
                  params: { path: { channelId: channel.id } },
                  body: { name: String(f.get('name')).trim(), description: String(f.get('description')) },
                }),
              );
              setStatus('Saved.');
            });
          }}
        >
          <label>
            Name
            <input name="name" required maxLength={100} defaultValue={channel.name} />
          </label>
          <label>
            Description
            <input name="description" maxLength={1000} defaultValue={channel.description} />
          </label>
          <div class="row-buttons">
            <button type="submit" disabled={busy}>
              Save
            </button>
          </div>
        </form>
      )}
      {mayEdit && topic && project && (
        <form
          class="stack"
          aria-label="Names"
          onSubmit={(e) => {
            e.preventDefault();
            const f = new FormData(e.currentTarget);
            void run(async () => {
              await ok(
                api.PATCH('/api/topics/{topicId}', {
                  params: { path: { topicId: topic.id } },
                  body: { name: String(f.get('topic')).trim() },
                }),
              );
              const pname = String(f.get('project')).trim();
              if (pname !== project.name)
                await ok(
                  api.PATCH('/api/projects/{projectId}', {
                    params: { path: { projectId: project.id } },
                    body: { name: pname },
                  }),
                );
              setStatus('Saved.');
            });
          }}
        >
          <label>
            Topic name
            <input name="topic" required maxLength={100} defaultValue={topic.name} />
          </label>
          <label>
            Project name
            <input name="project" required maxLength={100} defaultValue={project.name} />
          </label>
          <div class="row-buttons">
            <button type="submit" disabled={busy}>
              Save
            </button>
          </div>
        </form>
      )}
      <h3>Members{channel ? '' : ` of ${project!.name}`}</h3>
      {members === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <ul class="members" aria-label="Members">
          {members.map((m) => {
            const name = senderName(dir, { sender_type: m.member_type, sender_id: m.member_id });
            const self = m.member_type === 'user' && m.member_id === me.id;
            return (
              <li key={`${m.member_type}:${m.member_id}`}>
                <Avatar name={name} id={m.member_id} bot={m.member_type === 'bot'} />
                <span class="name">
                  {name}
                  {self && ' (you)'}
                </span>
                {m.member_type === 'bot' && <span class="badge">BOT</span>}
                {self ? (
                  <button type="button" disabled={busy} onClick={() => void removeMember(m)}>
                    Leave
                  </button>
                ) : (
                  mayRemoveOthers && (
                    <button
                      type="button"
                      disabled={busy}
                      aria-label={`Remove ${name}`}
                      onClick={() => void removeMember(m)}
                    >
                      Remove
                    </button>
                  )
                )}
              </li>
            );
          })}
        </ul>
      )}
      {mayEdit && (
        <PeoplePicker
          label="Add a person or bot"
          exclude={memberIds}
          {...(channel && { channelId: channel.id })}
          pick={(m) => void addMember(m)}
        />
      )}
      <p class="status" role="status">
        {status}
      </p>
      <ErrorLine error={error} />
      {(channel ? mayArchive : mayArchiveTopic || mayArchive) && (
        <div class="danger-zone">
          {confirmArchive === null ? (
            <>
              {(channel ? mayArchive : mayArchiveTopic) && (
                <button type="button" class="danger" onClick={() => setConfirmArchive('room')}>
                  {channel ? 'Archive channel' : 'Archive topic'}
                </button>
              )}
              {!channel && mayArchive && (
                <button type="button" class="danger" onClick={() => setConfirmArchive('project')}>
                  Archive project
                </button>
              )}
            </>
          ) : (
            <div
              role="group"
              aria-label="Confirm archiving"
              ref={(el) => el?.querySelector('button')?.focus()}
            >
              <p>
                Archive{' '}
                {confirmArchive === 'project' ? project!.name : channel ? `#${channel.name}` : topic!.name}?
                It leaves everyone&apos;s sidebar and takes no new messages; its history stays readable.
              </p>
              <button
                type="button"
                class="danger"
                disabled={busy}
                onClick={() =>
                  void run(async () => {
                    if (channel)
                      await ok(
                        api.POST('/api/channels/{channelId}/archive', {
                          params: { path: { channelId: channel.id } },
                        }),
                      );
                    else if (confirmArchive === 'project')
                      await ok(
                        api.POST('/api/projects/{projectId}/archive', {
                          params: { path: { projectId: project!.id } },
                        }),
                      );
                    else
                      await ok(
                        api.POST('/api/topics/{topicId}/archive', {
                          params: { path: { topicId: topic!.id } },
                        }),
                      );
                    props.left();
                  })
                }
              >
                Archive
              </button>
              <button type="button" onClick={() => setConfirmArchive(null)}>
                Cancel
              </button>
            </div>
          )}
        </div>
      )}
    </Dialog>
  );
}

/** Starts (or reopens) a direct conversation with a person or a bot. */
export function NewDmDialog(props: { onClose(): void; opened(roomId: string): void }) {
  const [error, , run] = useAction();
  return (
    <Dialog title="New direct message" onClose={props.onClose}>
      <PeoplePicker
        label="Person or bot"
        pick={(m) =>
          void run(async () => {
            const body = m.type === 'bot' ? { bot_ids: [m.id] } : { user_ids: [m.id] };
            const r = await ok(api.POST('/api/dm-rooms', { body }));
            props.opened(r.id);
          })
        }
      />
      <ErrorLine error={error} />
    </Dialog>
  );
}

/** My account: change my password (with the current one) and sign out everywhere. */
export function AccountDialog(props: {
  me: User;
  onClose(): void;
  /** The password changed: every session was revoked; sign in again with the new one. */
  passwordChanged(password: string): Promise<void>;
  signOutEverywhere(): void;
}) {
  const [error, busy, run] = useAction();
  const [status, setStatus] = useState<string | null>(null);
  return (
    <Dialog title="Your account" onClose={props.onClose}>
      <p>
        {props.me.display_name} <span class="muted">{props.me.email}</span>
      </p>
      <form
        class="stack"
        aria-label="Change password"
        onSubmit={(e) => {
          e.preventDefault();
          const form = e.currentTarget;
          const f = new FormData(form);
          const next = String(f.get('new'));
          if (next !== String(f.get('again'))) {
            void run(() => Promise.reject(new Error('The new passwords do not match.')));
            return;
          }
          void run(async () => {
            await ok(
              api.PATCH('/api/users/{userId}', {
                params: { path: { userId: props.me.id } },
                body: { password: next, current_password: String(f.get('current')) },
              }),
            );
            await props.passwordChanged(next);
            form.reset();
            setStatus('Password changed. Your other sessions were signed out.');
          });
        }}
      >
        <h3>Change password</h3>
        <label>
          Current password
          <input name="current" type="password" required autoComplete="current-password" />
        </label>
        <label>
          New password
          <input name="new" type="password" required minLength={8} autoComplete="new-password" />
        </label>
        <label>
          New password again
          <input name="again" type="password" required minLength={8} autoComplete="new-password" />
        </label>
        <div class="row-buttons">
          <button type="submit" class="primary" disabled={busy}>
            Change password
          </button>
        </div>
      </form>
      <p class="status" role="status">
        {status}
      </p>
      <ErrorLine error={error} />
      <h3>Sessions</h3>
      <button type="button" class="danger" onClick={props.signOutEverywhere}>
        Sign out everywhere
      </button>
    </Dialog>
  );
}
