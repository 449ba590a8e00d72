import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { RoomRef } from './directory';

/** The server counts up to this many unread messages a room; the sidebar shows "99+" from 100. */
export const UNREAD_CAP = 100;

export const unreadLabel = (n: number): string => (n >= UNREAD_CAP ? '99+' : String(n));

export interface Unread {
  /** Unread messages by room key (`channel:<id>`, `topic:<id>`, `dm:<id>`); rooms without any are absent. */
  counts: Map<string, number>;
  /** Reads the counts again from the server (GET /api/unread). */
  reload(): void;
  /** A message arrived live in a room that is not open. */
  bump(key: string): void;
  /** The room was opened: shown as read at once (the server is told by markRead). */
  clear(key: string): void;
  /**
   * A `read_marker.updated` event: this person marked a room read, maybe in another tab or on another
   * device; the room has `unread` messages after the marker.
   */
  marked(data: Record<string, unknown>): void;
  /** Tells the server the room is read up to this message (POST …/read); its marker only moves forward. */
  markRead(room: RoomRef, messageId: string): void;
}

const kindOf = { channel: 'channel', topic: 'topic', dm_room: 'dm' } as const;

/**
 * Server-side unread state (docs/API.md, "Unread state"): counts come from GET /api/unread when the
 * chat opens, when the live connection comes up (what came before its start is not replayed), when
 * the window gets the focus back and after the live connection had to reset; live
 * messages in rooms that are not open add one; opening a room clears it and marks it read on the server
 * up to its newest message, so every browser and device of the person agrees — live: the server pushes
 * `read_marker.updated` to the person's own connections, and their other tabs take its count.
 */
export function useUnread(): Unread {
  const [counts, setCounts] = useState<Map<string, number>>(new Map());
  const marked = useRef(new Map<string, string>());
  const seq = useRef(0);
  /** A reload is on its way, and live messages were counted meanwhile (its answer may not hold them). */
  const loading = useRef(false);
  const bumpedMeanwhile = useRef(false);

  const reload = useCallback(() => {
    // Its answer replaces the counts: a message counted live while it was on its way, but read by
    // the server before it committed, would be lost (a browser test saw "1 unread" for two). Then
    // it is read once more (at most twice), after those messages.
    const load = (followUps: number) => {
      const mine = ++seq.current;
      loading.current = true;
      bumpedMeanwhile.current = false;
      ok(api.GET('/api/unread'))
        .then((r) => {
          if (mine !== seq.current) return; // a later reload answers instead
          loading.current = false;
          setCounts(new Map(r.items.map((i) => [`${kindOf[i.container_type]}:${i.container_id}`, i.unread])));
          if (bumpedMeanwhile.current && followUps > 0) load(followUps - 1);
        })
        .catch(() => {
          if (mine === seq.current) loading.current = false;
        }); // the sidebar keeps what it had; the chat shows connection problems itself
    };
    load(2);
  }, []);

  useEffect(() => {
    reload();
    const onFocus = () => reload();
    addEventListener('focus', onFocus);
    return () => removeEventListener('focus', onFocus);
  }, []);

  const bump = useCallback((key: string) => {
    if (loading.current) bumpedMeanwhile.current = true;
    setCounts((c) => new Map(c).set(key, Math.min(UNREAD_CAP, (c.get(key) ?? 0) + 1)));
  }, []);

  const clear = useCallback((key: string) => {
    setCounts((c) => {
      if (!c.has(key)) return c;
      const n = new Map(c);
      n.delete(key);
      return n;
    });
  }, []);

  const markRead = useCallback(
    (room: RoomRef, messageId: string) => {
      const key = `${room.kind}:${room.id}`;
      clear(key);
      if (marked.current.get(key) === messageId) return;
      marked.current.set(key, messageId);
      const body = { message_id: messageId };
      const call =
        room.kind === 'channel'
          ? api.POST('/api/channels/{channelId}/read', { params: { path: { channelId: room.id } }, body })
          : room.kind === 'topic'
            ? api.POST('/api/topics/{topicId}/read', { params: { path: { topicId: room.id } }, body })
            : api.POST('/api/dm-rooms/{dmRoomId}/read', { params: { path: { dmRoomId: room.id } }, body });
      // A message deleted meanwhile answers 404; the next message marks the room read instead.
      ok(call).catch(() => marked.current.delete(key));
    },
    [clear],
  );

  const markedElsewhere = useCallback((data: Record<string, unknown>) => {
    const kind = data.container_type;
    if (
      (kind !== 'channel' && kind !== 'topic' && kind !== 'dm_room') ||
      typeof data.container_id !== 'string'
    )
      return;
    const key = `${kindOf[kind]}:${data.container_id}`;
    const n = typeof data.unread === 'number' ? Math.min(UNREAD_CAP, data.unread) : 0;
    setCounts((c) => {
      if ((c.get(key) ?? 0) === n) return c;
      const next = new Map(c);
      if (n > 0) next.set(key, n);
      else next.delete(key);
      return next;
    });
  }, []);

  return { counts, reload, bump, clear, markRead, marked: markedElsewhere };
}
