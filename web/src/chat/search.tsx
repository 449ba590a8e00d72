import DOMPurify from 'dompurify';
import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';
import { roomOfMessage, senderName, type Directory, type RoomRef } from './directory';

type Results = Body<'/api/search', 'get'>;

/** The server's snippet is HTML-escaped text with <mark>; only <mark> may stay. */
const snippet = (html: string) => DOMPurify.sanitize(html, { ALLOWED_TAGS: ['mark'], ALLOWED_ATTR: [] });

/**
 * Search across messages, channels, tasks and people (GET /api/search). A message or channel opens
 * its room, a task its topic's board, a person a direct conversation with them.
 */
export function SearchResults(props: {
  query: string;
  dir: Directory | null;
  open(r: RoomRef, board?: boolean): void;
  close(): void;
}) {
  const [r, setR] = useState<Results | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setR(null);
    setError(null);
    ok(api.GET('/api/search', { params: { query: { query: props.query, type: 'all', limit: 10 } } }))
      .then(setR)
      .catch((e: unknown) => setError(describe(e)));
  }, [props.query]);

  async function dm(userId: string) {
    try {
      const room = await ok(api.POST('/api/dm-rooms', { body: { user_ids: [userId] } }));
      props.open({ kind: 'dm', id: room.id });
    } catch (e) {
      setError(describe(e));
    }
  }

  const empty =
    r !== null && !r.messages?.length && !r.channels?.length && !r.tasks?.length && !r.users?.length;
  return (
    <section class="search-results" aria-labelledby="search-title">
      <div class="room-head">
        <h1 id="search-title">Results for “{props.query}”</h1>
        <button type="button" onClick={props.close}>
          Close search
        </button>
      </div>
      <div class="panel-scroll results">
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {r === null && error === null && <p class="muted">Searching…</p>}
        {empty && <p class="muted">Nothing found.</p>}
        {!!r?.messages?.length && (
          <>
            <h2>Messages</h2>
            <ul>
              {r.messages.map((m) => {
                const room = roomOfMessage(m);
                return (
                  <li key={m.id}>
                    <button
                      type="button"
                      class="result"
                      disabled={room === null}
                      onClick={() => room && props.open(room)}
                    >
                      <span class="author">{senderName(props.dir, m)}</span>{' '}
                      <span dangerouslySetInnerHTML={{ __html: snippet(m.snippet) }} />
                    </button>
                  </li>
                );
              })}
            </ul>
          </>
        )}
        {!!r?.channels?.length && (
          <>
            <h2>Channels</h2>
            <ul>
              {r.channels.map((c) => (
                <li key={c.id}>
                  <button
                    type="button"
                    class="result"
                    onClick={() => props.open({ kind: 'channel', id: c.id })}
                  >
                    #{c.name} <span class="muted">{c.description}</span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
        {!!r?.tasks?.length && (
          <>
            <h2>Tasks</h2>
            <ul>
              {r.tasks.map((t) => (
                <li key={t.id}>
                  <button
                    type="button"
                    class="result"
                    onClick={() => props.open({ kind: 'topic', id: t.topic_id }, true)}
                  >
                    {t.title} <span class="muted">· {t.status.replace('_', ' ')}</span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
        {!!r?.users?.length && (
          <>
            <h2>People</h2>
            <ul>
              {r.users.map((u) => (
                <li key={u.id}>
                  <button
                    type="button"
                    class="result"
                    aria-label={`Message ${u.display_name}`}
                    onClick={() => void dm(u.id)}
                  >
                    {u.display_name} <span class="muted">{u.email}</span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    </section>
  );
}
