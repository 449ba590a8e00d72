import { lazy, Suspense } from 'preact/compat';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Shell } from '../app';
import { api, ApiError, describe, ok } from '../api/client';
import { Realtime, type LiveEvent, type LiveStatus } from '../api/realtime';
import type { CommandResult, Message } from '../api/types';
import { setHashtagLookup } from '../markdown';
import { Board } from './board';
import { Composer } from './composer';
import {
  loadDirectory,
  roomFromHash,
  roomKey,
  roomOfMessage,
  roomTitle,
  type Directory,
  type RoomRef,
} from './directory';
import { HashtagCards } from './hashtag-card';
import { MessageList } from './messages';
import { useRoom } from './room';
import { SearchResults } from './search';
import { Sidebar } from './sidebar';
import { RoomTabs, viewsOf, type RoomView } from './tabs';
import { useUnread } from './unread';
import { TopBar } from '../topbar';

// A channel's bookmarks and files are loaded when their tab is opened, not with the chat.
const Bookmarks = lazy(() => import('./bookmarks').then((m) => ({ default: m.Bookmarks })));
const Files = lazy(() => import('./files').then((m) => ({ default: m.Files })));

/** A line shown only to this person in a room: a command's answer or a bot's ephemeral reply. */
interface Note {
  id: number;
  room: string;
  text: string;
  /** The command invocation it answers: its ephemeral reply arrives twice (live and in the answer). */
  invocation?: string;
}

/**
 * What to tell the person after `POST /api/commands/execute`, true in every case (null: nothing to
 * add). The answer carries the bot's immediate reply and whether the bot got the command (docs/API.md,
 * docs/REALTIME.md "Slash commands of bots"):
 * - a reply posted as the bot's message is in the room already: no note;
 * - an ephemeral reply is the note, after the bot's name (only this person sees it; the live push of
 *   the same reply is not shown twice);
 * - a built-in bot handled the command in the server (`delivered` without an HTTP status): what it
 *   did (a poll, say) is there already: no note;
 * - a webhook bot that got the command without answering yet: its reply will come (through its
 *   response URL), so the note says so;
 * - a bot that did not get it (failed, timed out, no webhook URL or secret), or whose reply was
 *   unusable: the note says so.
 */
export function commandNote(r: CommandResult): string | null {
  if (r.status === 'completed') return r.text ?? `/${r.command} done.`;
  const bot = r.bot_name ?? 'the bot';
  if (r.reply) return r.reply.ephemeral ? `${bot}: ${r.reply.content}` : null;
  const d = r.delivery;
  if (r.reply_error)
    return `${bot} answered /${r.command}, but its reply could not be shown: ${r.reply_error}`;
  if (d?.status === 'delivered' && d.http_status === null) return null;
  if (d === undefined || d.status === 'delivered')
    return `/${r.command} sent to ${bot}; its reply will appear here.`;
  if (d.status === 'no_webhook')
    return `/${r.command} was recorded, but ${bot} has no webhook URL to receive it, so no reply will come.`;
  return `${bot} did not get /${r.command}: ${d.message}`;
}

const POLL_MS = 3000;

/** A message from the data of a message.created / message.updated event. */
function messageFromEvent(data: Record<string, unknown>, orgId: string): Message | null {
  if (typeof data.message_id !== 'string' || typeof data.content !== 'string') return null;
  const s = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : null);
  return {
    id: data.message_id,
    org_id: orgId,
    channel_id: s('channel_id'),
    topic_id: s('topic_id'),
    dm_room_id: s('dm_room_id'),
    sender_type: data.sender_type === 'bot' ? 'bot' : 'user',
    sender_id: s('sender_id') ?? '',
    bot_id: s('bot_id'),
    content: data.content,
    content_html: s('content_html'),
    actions: Array.isArray(data.actions) ? (data.actions as Message['actions']) : null,
    created_at: s('created_at') ?? new Date().toISOString(),
    edited_at: s('edited_at'),
    deleted_at: null,
  };
}

export function Chat({ shell }: { shell: Shell }) {
  const me = shell.session.user;
  const [dir, setDir] = useState<Directory | null>(null);
  const [dirError, setDirError] = useState<string | null>(null);
  const [room, setRoomState] = useState<RoomRef | null>(roomFromHash);
  const unread = useUnread();
  const [live, setLive] = useState<LiveStatus>('connecting');
  const [unreachable, setUnreachable] = useState(false);
  const [notes, setNotes] = useState<Note[]>([]);
  const [navOpen, setNavOpen] = useState(false);
  const [view, setView] = useState<RoomView>('messages');
  const [taskVersion, setTaskVersion] = useState(0);
  const [search, setSearch] = useState<string | null>(null);
  const state = useRoom(room);
  const roomRef = useRef(room);
  roomRef.current = room;
  const noteSeq = useRef(0);

  const reloadDirectory = useCallback(() => {
    loadDirectory()
      .then((d) => {
        setDir(d);
        setDirError(null);
        setUnreachable(false);
      })
      .catch((e: unknown) => {
        setDirError(describe(e));
        if (e instanceof ApiError && e.code === 'unreachable') setUnreachable(true);
      });
  }, []);
  useEffect(reloadDirectory, []);

  const setRoom = useCallback((r: RoomRef) => {
    if (location.hash !== `#/${r.kind}/${r.id}`) history.pushState(null, '', `/#/${r.kind}/${r.id}`);
    setRoomState(r);
    setView('messages');
    setSearch(null);
    unread.clear(roomKey(r));
    setNavOpen(false);
  }, []);

  // The back button, and links to /#/<kind>/<id>, change the open room.
  useEffect(() => {
    const onHash = () => {
      const r = roomFromHash();
      if (r && (roomRef.current === null || roomKey(r) !== roomKey(roomRef.current))) setRoom(r);
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  // Without a room in the URL, open the first channel.
  useEffect(() => {
    // A room named in the hash since the last render wins (its hashchange may not have rendered yet).
    if (room === null && roomFromHash() === null && dir !== null && dir.channels[0])
      setRoom({ kind: 'channel', id: dir.channels[0].id });
  }, [dir, room]);

  const addNote = useCallback((roomK: string, text: string, invocation?: string) => {
    setNotes((n) =>
      invocation !== undefined && n.some((x) => x.invocation === invocation)
        ? n // shown already (the live push and the command's answer carry the same reply)
        : [
            ...n.slice(-20),
            { id: ++noteSeq.current, room: roomK, text, ...(invocation ? { invocation } : {}) },
          ],
    );
  }, []);

  // Live updates; while the socket is not live the open room is polled instead.
  const onEvent = useRef<(e: LiveEvent) => void>(() => undefined);
  onEvent.current = (e: LiveEvent) => {
    const data = e.data;
    if (e.event_type === 'message.created' || e.event_type === 'message.updated') {
      const m = messageFromEvent(data, me.org_id);
      const r = m && roomOfMessage(m);
      if (!m || !r) return;
      const cur = roomRef.current;
      if (cur && roomKey(cur) === roomKey(r)) state.upsert(m);
      else if (e.event_type === 'message.created' && !(m.sender_type === 'user' && m.sender_id === me.id))
        unread.bump(roomKey(r));
      if (r.kind === 'dm' && !dir?.dms.some((d) => d.id === r.id)) reloadDirectory();
    } else if (e.event_type === 'read_marker.updated') {
      // This person read a room, here or in another tab or browser (the open room is shown read anyway).
      const cur = roomRef.current;
      const open = cur && data.container_id === cur.id;
      if (!open) unread.marked(data);
    } else if (e.event_type === 'message.deleted') {
      if (typeof data.message_id === 'string') state.remove(data.message_id);
    } else if (e.event_type.startsWith('task.')) {
      const cur = roomRef.current;
      if (cur?.kind === 'topic' && data.topic_id === cur.id) setTaskVersion((v) => v + 1);
    } else if (/^(channel|member|project|topic|bot)\./.test(e.event_type)) {
      reloadDirectory();
    }
  };
  useEffect(() => {
    const rt = new Realtime(shell.session.token, {
      event: (e) => onEvent.current(e),
      ephemeral: (m) => {
        // {type: 'ephemeral', message: {invocation_id, content, channel_id | topic_id | dm_room_id, …}}
        const msg = (typeof m.message === 'object' && m.message !== null ? m.message : m) as Record<
          string,
          unknown
        >;
        if (typeof msg.content !== 'string') return;
        const str = (k: string) => (typeof msg[k] === 'string' ? (msg[k] as string) : null);
        const where =
          str('channel_id') !== null
            ? `channel:${str('channel_id')}`
            : str('topic_id') !== null
              ? `topic:${str('topic_id')}`
              : str('dm_room_id') !== null
                ? `dm:${str('dm_room_id')}`
                : null;
        const cur = roomRef.current;
        const roomK = where ?? (cur ? roomKey(cur) : null);
        const text = str('bot_name') === null ? msg.content : `${str('bot_name')}: ${msg.content}`;
        if (roomK !== null) addNote(roomK, text, str('invocation_id') ?? undefined);
      },
      reset: () => {
        void state.refresh();
        reloadDirectory();
        unread.reload();
      },
      status: (s) => {
        setLive(s);
        // Whatever came between the room's first load (or the last poll) and the socket's start is
        // not replayed on a first connection (it starts at the server's position): load it now.
        if (s === 'live') void state.refresh().catch(() => undefined);
      },
      unauthorized: () => void ok(api.GET('/api/auth/me')).catch(() => undefined), // a 401 ends the session
    });
    rt.start();
    return () => rt.stop();
  }, []);

  useEffect(() => {
    if (live === 'live' || room === null) return;
    const t = setInterval(() => {
      state.refresh().then(
        () => setUnreachable(false),
        (e: unknown) => setUnreachable(e instanceof ApiError && e.code === 'unreachable'),
      );
    }, POLL_MS);
    return () => clearInterval(t);
  }, [live, room && roomKey(room)]);

  // The open room is read up to its newest message while the person is looking at its messages.
  const newest = state.messages[state.messages.length - 1];
  const [visible, setVisible] = useState(() => document.visibilityState === 'visible');
  useEffect(() => {
    const onVisibility = () => setVisible(document.visibilityState === 'visible');
    document.addEventListener('visibilitychange', onVisibility);
    return () => document.removeEventListener('visibilitychange', onVisibility);
  }, []);
  useEffect(() => {
    if (room !== null && newest !== undefined && visible && search === null && view === 'messages')
      unread.markRead(room, newest.id);
  }, [room && roomKey(room), newest?.id, visible, search, view]);

  // `#name` in messages links to the channel or project of that name (set while rendering, before the
  // messages render with the new directory).
  useMemo(() => {
    const byName = new Map<string, { type: 'channel' | 'project'; id: string }>();
    for (const p of dir?.projects ?? []) byName.set(p.name.toLowerCase(), { type: 'project', id: p.id });
    for (const c of dir?.channels ?? []) byName.set(c.name.toLowerCase(), { type: 'channel', id: c.id });
    setHashtagLookup((name) => byName.get(name.toLowerCase()) ?? null);
  }, [dir]);

  const title = dir && room ? roomTitle(dir, room, me) : '';
  const target = useMemo(
    () =>
      room === null
        ? null
        : room.kind === 'channel'
          ? { channel_id: room.id }
          : room.kind === 'topic'
            ? { topic_id: room.id }
            : { dm_room_id: room.id },
    [room],
  );

  async function send(content: string) {
    if (room === null) return;
    const body = { content };
    const m =
      room.kind === 'channel'
        ? await ok(
            api.POST('/api/channels/{channelId}/messages', {
              params: { path: { channelId: room.id } },
              body,
            }),
          )
        : room.kind === 'topic'
          ? await ok(
              api.POST('/api/topics/{topicId}/messages', { params: { path: { topicId: room.id } }, body }),
            )
          : await ok(
              api.POST('/api/dm-rooms/{dmRoomId}/messages', {
                params: { path: { dmRoomId: room.id } },
                body,
              }),
            );
    state.upsert(m);
  }

  async function runCommand(text: string) {
    if (room === null || target === null) return;
    const r = await ok(api.POST('/api/commands/execute', { body: { text, ...target } }));
    const note = commandNote(r);
    if (note !== null) addNote(roomKey(room), note, r.reply?.ephemeral ? r.invocation_id : undefined);
  }

  const roomNotes = room ? notes.filter((n) => n.room === roomKey(room)) : [];

  return (
    <div class={`app chat${navOpen ? ' nav-open' : ''}`}>
      <TopBar shell={shell} here="chat" navOpen={navOpen} toggleNav={() => setNavOpen((o) => !o)} />
      {unreachable && (
        <p class="banner" role="alert">
          The server cannot be reached. Messages will appear again as soon as it is back.
        </p>
      )}
      <Sidebar
        dir={dir}
        me={me}
        current={room}
        unread={unread.counts}
        select={setRoom}
        error={dirError}
        search={(q) => {
          setSearch(q);
          setNavOpen(false);
        }}
      />
      {search !== null && (
        <main class="room">
          <SearchResults
            query={search}
            dir={dir}
            close={() => setSearch(null)}
            open={(r, board) => {
              setRoom(r);
              if (board) setView('board');
              reloadDirectory();
            }}
          />
        </main>
      )}
      <main class="room" aria-labelledby="room-title" hidden={search !== null}>
        <div class="room-head">
          <h1 id="room-title">{title || 'Workroom'}</h1>
          {room !== null && room.kind !== 'dm' && (
            <RoomTabs views={viewsOf(room.kind)} view={view} setView={setView} />
          )}
          <span class={`live ${live}`} role="status">
            {live === 'live' ? 'Live' : live === 'connecting' ? 'Connecting…' : 'Offline — retrying'}
          </span>
        </div>
        {state.error !== null && (
          <p class="error" role="alert">
            {state.error}
          </p>
        )}
        {room !== null && room.kind === 'topic' && view === 'board' ? (
          <div id="room-panel" role="tabpanel" aria-labelledby="tab-board" class="panel-scroll">
            <Board topicId={room.id} dir={dir} version={taskVersion} />
          </div>
        ) : room !== null && room.kind === 'channel' && (view === 'bookmarks' || view === 'files') ? (
          <div id="room-panel" role="tabpanel" aria-labelledby={`tab-${view}`} class="panel-scroll">
            <Suspense fallback={<p class="loading">Loading…</p>}>
              {view === 'bookmarks' ? (
                <Bookmarks channelId={room.id} dir={dir} me={me} />
              ) : (
                <Files channelId={room.id} dir={dir} />
              )}
            </Suspense>
          </div>
        ) : room !== null ? (
          <div
            class="room-panel"
            {...(room.kind !== 'dm' && {
              id: 'room-panel',
              role: 'tabpanel',
              'aria-labelledby': 'tab-messages',
            })}
          >
            <MessageList
              messages={state.messages}
              directory={dir}
              me={me}
              hasMore={state.hasMore}
              loadingOlder={state.loadingOlder}
              roomKey={roomKey(room)}
              loadOlder={state.loadOlder}
              edit={async (m, content) => {
                state.upsert(
                  await ok(
                    api.PUT('/api/messages/{id}', { params: { path: { id: m.id } }, body: { content } }),
                  ),
                );
              }}
              remove={async (m) => {
                await ok(api.DELETE('/api/messages/{id}', { params: { path: { id: m.id } } }));
                state.remove(m.id);
              }}
              invoke={async (m, actionId, value) => {
                await ok(
                  api.POST('/api/messages/{id}/actions', {
                    params: { path: { id: m.id } },
                    body: { action_id: actionId, ...(value !== undefined ? { value } : {}) },
                  }),
                );
              }}
              {...(room.kind === 'channel' && {
                bookmark: async (m: Message) => {
                  await ok(
                    api.POST('/api/channels/{channelId}/bookmarks', {
                      params: { path: { channelId: room.id } },
                      body: { message_id: m.id },
                    }),
                  );
                  addNote(roomKey(room), 'Message bookmarked. The Bookmarks tab lists it.');
                },
              })}
            />
            {roomNotes.length > 0 && (
              <ul class="notes" aria-label="Only visible to you">
                {roomNotes.map((n) => (
                  <li key={n.id}>
                    <span class="badge">Only you</span> {n.text}
                    <button
                      type="button"
                      class="link"
                      onClick={() => setNotes((all) => all.filter((x) => x.id !== n.id))}
                    >
                      Dismiss
                    </button>
                  </li>
                ))}
              </ul>
            )}
            <Composer
              roomLabel={title}
              channelId={room.kind === 'channel' ? room.id : null}
              send={send}
              runCommand={runCommand}
            />
          </div>
        ) : (
          <p class="empty">
            {dir === null
              ? 'Loading…'
              : dir.channels.length === 0
                ? 'No channels yet.'
                : 'Pick a channel, topic or conversation.'}
          </p>
        )}
      </main>
      <HashtagCards
        dir={dir}
        open={(r, board) => {
          setRoom(r);
          if (board) setView('board');
        }}
      />
    </div>
  );
}
