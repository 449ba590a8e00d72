import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Message, Reaction } from '../api/types';
import type { RoomRef } from './directory';

const PAGE = 50;

/** The GET of a room's messages, newest first; `before` pages back through history. */
async function fetchPage(r: RoomRef, before?: string): Promise<Message[]> {
  const query = { limit: PAGE, ...(before ? { before } : {}) };
  const page =
    r.kind === 'channel'
      ? api.GET('/api/channels/{channelId}/messages', { params: { path: { channelId: r.id }, query } })
      : r.kind === 'topic'
        ? api.GET('/api/topics/{topicId}/messages', { params: { path: { topicId: r.id }, query } })
        : api.GET('/api/dm-rooms/{dmRoomId}/messages', { params: { path: { dmRoomId: r.id }, query } });
  return (await ok(page)).items.reverse();
}

/** Merges by id (a message seen twice is shown once, with its latest state) in time order. */
function merge(into: Message[], add: Message[]): Message[] {
  const byId = new Map(into.map((m) => [m.id, m]));
  // A message pushed live or edited carries no reactions: it keeps those it has.
  for (const m of add) {
    const was = byId.get(m.id);
    byId.set(m.id, m.reactions === undefined && was?.reactions ? { ...m, reactions: was.reactions } : m);
  }
  return [...byId.values()].sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0,
  );
}

export type ReactionChange =
  | { all: Reaction[] }
  | { emoji: string; count: number; reactor: { type: 'user' | 'bot'; id: string }; added: boolean };

function applyReaction(list: Reaction[], c: ReactionChange): Reaction[] {
  if ('all' in c) return c.all;
  const out = list.map((r) => ({ ...r, reactors: [...r.reactors] }));
  let r = out.find((x) => x.emoji === c.emoji);
  if (!r) out.push((r = { emoji: c.emoji, count: 0, reactors: [] }));
  r.count = c.count;
  r.reactors = r.reactors.filter((x) => !(x.type === c.reactor.type && x.id === c.reactor.id));
  if (c.added) r.reactors.push(c.reactor);
  return out.filter((x) => x.count > 0);
}

export interface RoomState {
  messages: Message[];
  loading: boolean;
  loadingOlder: boolean;
  hasMore: boolean;
  error: string | null;
  loadOlder(): void;
  /** Applies a message created or edited elsewhere (live event or our own send). */
  upsert(m: Message): void;
  remove(id: string): void;
  /** Applies a reaction change (the API's answer, or a live reaction.added / reaction.removed). */
  react(id: string, change: ReactionChange): void;
  /** Re-reads the newest page: new, edited and deleted messages in it are brought up to date. */
  refresh(): Promise<void>;
}

export function useRoom(room: RoomRef | null): RoomState {
  const [messages, setMessages] = useState<Message[]>([]);
  const [loading, setLoading] = useState(false);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const current = useRef(room);
  current.current = room;
  const key = room ? `${room.kind}:${room.id}` : '';

  useEffect(() => {
    setMessages([]);
    setHasMore(false);
    setError(null);
    if (room === null) return;
    setLoading(true);
    fetchPage(room)
      .then((page) => {
        if (current.current !== room) return;
        // Merged, not replaced: a message that came live (or was sent) while this page was on its way
        // is newer than the page and stays.
        setMessages((now) => merge(now, page));
        setHasMore(page.length === PAGE);
      })
      .catch((e: Error) => setError(e.message))
      .finally(() => setLoading(false));
  }, [key]);

  const latest = useRef(messages);
  latest.current = messages;
  const loadOlder = useCallback(() => {
    const r = current.current;
    if (r === null) return;
    setLoadingOlder(true);
    fetchPage(r, latest.current[0]?.created_at)
      .then((page) => {
        if (current.current !== r) return;
        setMessages((now) => merge(now, page));
        setHasMore(page.length === PAGE);
      })
      .catch((e: Error) => setError(e.message))
      .finally(() => setLoadingOlder(false));
  }, []);

  const refresh = useCallback(async () => {
    const r = current.current;
    if (r === null) return;
    const page = await fetchPage(r);
    if (current.current !== r) return;
    setMessages((now) => {
      // Messages inside the newest page's time span that it no longer has were deleted; those newer
      // than its newest came live while it was on its way, and stay.
      const since = page[0]?.created_at;
      const until = page[page.length - 1]?.created_at;
      const ids = new Set(page.map((m) => m.id));
      const kept = now.filter(
        (m) =>
          ids.has(m.id) ||
          (until !== undefined && m.created_at > until) ||
          (page.length === PAGE && since !== undefined && m.created_at < since),
      );
      return merge(kept, page);
    });
  }, []);

  return {
    messages,
    loading,
    loadingOlder,
    hasMore,
    error,
    loadOlder,
    upsert: useCallback((m: Message) => setMessages((now) => merge(now, [m])), []),
    remove: useCallback((id: string) => setMessages((now) => now.filter((m) => m.id !== id)), []),
    react: useCallback(
      (id: string, c: ReactionChange) =>
        setMessages((now) =>
          now.map((m) => (m.id === id ? { ...m, reactions: applyReaction(m.reactions ?? [], c) } : m)),
        ),
      [],
    ),
    refresh,
  };
}
