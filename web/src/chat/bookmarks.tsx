import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body, User } from '../api/types';
import { renderMessage } from '../markdown';
import { senderName, type Directory } from './directory';

type Bookmark = Body<'/api/channels/{channelId}/bookmarks', 'get'>['items'][number];

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * A channel's bookmarks (GET /api/channels/{id}/bookmarks): filtered by who bookmarked, by date
 * range (inclusive; a date covers its whole day) and ordered newest or oldest first. Your own
 * bookmarks can be removed here; messages are bookmarked from the message list.
 */
export function Bookmarks(props: { channelId: string; dir: Directory | null; me: User }) {
  const { channelId, dir, me } = props;
  const [items, setItems] = useState<Bookmark[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [who, setWho] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [sort, setSort] = useState<'desc' | 'asc'>('desc');
  const [status, setStatus] = useState('');

  const reload = () => {
    const query: { sort: 'asc' | 'desc'; limit: number; user_id?: string; from?: string; to?: string } = {
      sort,
      limit: 100,
    };
    if (who) query.user_id = who;
    if (from) query.from = from;
    if (to) query.to = to;
    return ok(api.GET('/api/channels/{channelId}/bookmarks', { params: { path: { channelId }, query } }))
      .then((r) => {
        setItems(r.items);
        setError(null);
      })
      .catch((e: unknown) => {
        setItems([]);
        setError(describe(e));
      });
  };
  useEffect(() => void reload(), [channelId, who, from, to, sort]);

  async function remove(b: Bookmark) {
    try {
      await ok(
        api.DELETE('/api/channels/{channelId}/bookmarks/{messageId}', {
          params: { path: { channelId, messageId: b.message_id } },
        }),
      );
      setStatus('Bookmark removed.');
      await reload();
    } catch (e) {
      setError(describe(e));
    }
  }

  const people = dir
    ? [...dir.users.values()].sort((a, b) => a.display_name.localeCompare(b.display_name))
    : [];
  return (
    <section class="panel-body" aria-labelledby="bookmarks-title">
      <h2 id="bookmarks-title" class="sr-only">
        Bookmarks
      </h2>
      <p class="sr-only" role="status">
        {status}
      </p>
      <form class="filters" aria-label="Filter bookmarks" onSubmit={(e) => e.preventDefault()}>
        <label>
          Bookmarked by
          <select value={who} onChange={(e) => setWho(e.currentTarget.value)}>
            <option value="">Everyone</option>
            <option value={me.id}>Me</option>
            {people
              .filter((u) => u.id !== me.id)
              .map((u) => (
                <option key={u.id} value={u.id}>
                  {u.display_name}
                </option>
              ))}
          </select>
        </label>
        <label>
          From
          <input type="date" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          To
          <input type="date" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
        </label>
        <label>
          Order
          <select value={sort} onChange={(e) => setSort(e.currentTarget.value as 'asc' | 'desc')}>
            <option value="desc">Newest first</option>
            <option value="asc">Oldest first</option>
          </select>
        </label>
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {items === null ? (
        <p class="muted">Loading…</p>
      ) : items.length === 0 ? (
        error === null && (
          <p class="empty">
            No bookmarks
            {who || from || to ? ' match these filters' : ' yet: bookmark a message from its menu'}.
          </p>
        )
      ) : (
        <ul class="bookmark-list">
          {items.map((b) => {
            const by =
              b.user_id === me.id ? 'you' : senderName(dir, { sender_type: 'user', sender_id: b.user_id });
            const author = b.message
              ? senderName(dir, {
                  sender_type: b.message.sender_type === 'bot' ? 'bot' : 'user',
                  sender_id: b.message.sender_id,
                })
              : '';
            return (
              <li key={b.id}>
                <article class="bookmark" aria-label={`Bookmark by ${by}: ${author}`}>
                  <header>
                    <span class="author">{author}</span>
                    {b.message && (
                      <time dateTime={b.message.created_at}>
                        {when.format(new Date(b.message.created_at))}
                      </time>
                    )}
                  </header>
                  {b.message && (
                    <div
                      class="content"
                      dangerouslySetInnerHTML={{ __html: renderMessage(b.message.content, null) }}
                    />
                  )}
                  <footer class="muted">
                    Bookmarked by {by},{' '}
                    <time dateTime={b.created_at}>{when.format(new Date(b.created_at))}</time>
                    {b.user_id === me.id && (
                      <button
                        type="button"
                        class="link"
                        aria-label={`Remove your bookmark of ${author}’s message`}
                        onClick={() => void remove(b)}
                      >
                        Remove
                      </button>
                    )}
                  </footer>
                </article>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
