import type { User } from '../api/types';
import { dmName, roomKey, type Directory, type RoomRef } from './directory';
import { unreadLabel } from './unread';

export interface SidebarProps {
  dir: Directory | null;
  me: User;
  current: RoomRef | null;
  /** Unread messages by room key (server counts, plus live arrivals). */
  unread: Map<string, number>;
  error: string | null;
  select(r: RoomRef): void;
  search(q: string): void;
  /** Opens a team set-up dialog (chat/team.tsx). */
  openDialog(d: SidebarDialog): void;
}

export type SidebarDialog =
  | { kind: 'new-channel' }
  | { kind: 'browse' }
  | { kind: 'new-project' }
  | { kind: 'new-topic'; projectId: string }
  | { kind: 'new-dm' };

/** Channels, projects with their topics, and DM rooms; a count marks rooms with unread messages. */
export function Sidebar({ dir, me, current, unread, error, select, search, openDialog }: SidebarProps) {
  const item = (r: RoomRef, label: string, prefix: string) => {
    const isCurrent = current !== null && roomKey(current) === roomKey(r);
    const count = unread.get(roomKey(r)) ?? 0;
    const isUnread = count > 0;
    return (
      <li key={roomKey(r)}>
        <a
          href={`/#/${r.kind}/${r.id}`}
          class={`${isCurrent ? 'current' : ''}${isUnread ? ' unread' : ''}`}
          aria-current={isCurrent ? 'page' : undefined}
          onClick={(e) => {
            e.preventDefault();
            select(r);
          }}
        >
          <span aria-hidden="true" class="prefix">
            {prefix}
          </span>
          <span class="label">{label}</span>
          {isUnread && (
            <span class="dot">
              {unreadLabel(count)}
              <span class="sr-only"> unread</span>
            </span>
          )}
        </a>
      </li>
    );
  };

  return (
    <nav id="sidebar" class="sidebar" aria-label="Conversations">
      <form
        role="search"
        class="search"
        onSubmit={(e) => {
          e.preventDefault();
          const q = new FormData(e.currentTarget).get('q');
          if (typeof q === 'string' && q.trim() !== '') search(q.trim());
        }}
      >
        <label for="search-q" class="sr-only">
          Search
        </label>
        <input id="search-q" name="q" type="search" placeholder="Search" />
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {dir === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <>
          <div class="nav-head">
            <h2 id="nav-channels">Channels</h2>
            <button
              type="button"
              class="add"
              aria-label="New channel"
              title="New channel"
              onClick={() => openDialog({ kind: 'new-channel' })}
            >
              +
            </button>
          </div>
          <ul aria-labelledby="nav-channels">
            {dir.channels.map((c) => item({ kind: 'channel', id: c.id }, c.name, c.is_private ? '🔒' : '#'))}
          </ul>
          <button type="button" class="link side-link" onClick={() => openDialog({ kind: 'browse' })}>
            Browse channels
          </button>
          <div class="nav-head">
            <h2 id="nav-projects">Projects</h2>
            <button
              type="button"
              class="add"
              aria-label="New project"
              title="New project"
              onClick={() => openDialog({ kind: 'new-project' })}
            >
              +
            </button>
          </div>
          {dir.projects.length === 0 && <p class="muted">No projects</p>}
          {dir.projects.map((p) => (
            <div key={p.id} class="project">
              <div class="nav-head">
                <h3 id={`project-${p.id}`}>{p.name}</h3>
                <button
                  type="button"
                  class="add"
                  aria-label={`New topic in ${p.name}`}
                  title="New topic"
                  onClick={() => openDialog({ kind: 'new-topic', projectId: p.id })}
                >
                  +
                </button>
              </div>
              <ul aria-labelledby={`project-${p.id}`}>
                {p.topics.map((t) => item({ kind: 'topic', id: t.id }, t.name, '›'))}
              </ul>
            </div>
          ))}
          <div class="nav-head">
            <h2 id="nav-dms">Direct messages</h2>
            <button
              type="button"
              class="add"
              aria-label="New direct message"
              title="New direct message"
              onClick={() => openDialog({ kind: 'new-dm' })}
            >
              +
            </button>
          </div>
          {dir.dms.length === 0 && <p class="muted">No conversations</p>}
          <ul aria-labelledby="nav-dms">
            {dir.dms.map((d) => item({ kind: 'dm', id: d.id }, dmName(dir, d, me), '@'))}
          </ul>
        </>
      )}
    </nav>
  );
}
