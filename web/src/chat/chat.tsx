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
  messageFromHash,
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
import { Sidebar, type SidebarDialog } from './sidebar';
import {
  AccountDialog,
  BrowseChannelsDialog,
  isAdmin,
  NewChannelDialog,
  NewDmDialog,
  NewProjectDialog,
  NewTopicDialog,
  RoomSettingsDialog,
} from './team';
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
  /** A button offered with the note (a command whose bot is not in the room: add it and run again). */
  action?: { label: string; run(): Promise<void> };
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
  // setRoom is created once: it reads the counts of the latest render through this ref.
  const unreadCounts = useRef(unread.counts);
  unreadCounts.current = unread.counts;
  const [live, setLive] = useState<LiveStatus>('connecting');
  const [unreachable, setUnreachable] = useState(false);
  const [notes, setNotes] = useState<Note[]>([]);
  const [navOpen, setNavOpen] = useState(false);
  const [view, setView] = useState<RoomView>('messages');
  const [taskVersion, setTaskVersion] = useState(0);
  const [search, setSearch] = useState<string | null>(null);
  const [dialog, setDialog] = useState<SidebarDialog | { kind: 'settings' } | { kind: 'account' } | null>(
    null,
  );
  const [linkNote, setLinkNote] = useState<string | null>(null);
  const [highlight, setHighlight] = useState<string | null>(messageFromHash);
  /** Unread messages of the room when it was opened (its count clears at once): "Jump to first unread". */
  const [unreadAtOpen, setUnreadAtOpen] = useState<{ room: string; count: number } | null>(null);
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

  const leaveRoom = useCallback(() => {
    history.pushState(null, '', '/');
    setRoomState(null);
    setDialog(null);
  }, []);

  const setRoom = useCallback((r: RoomRef) => {
    if (location.hash !== `#/${r.kind}/${r.id}`) history.pushState(null, '', `/#/${r.kind}/${r.id}`);
    setRoomState(r);
    setView('messages');
    setSearch(null);
    setUnreadAtOpen({ room: roomKey(r), count: unreadCounts.current.get(roomKey(r)) ?? 0 });
    unread.clear(roomKey(r));
    setNavOpen(false);
  }, []);

  // The back button, and links to /#/<kind>/<id>, change the open room.
  useEffect(() => {
    const onHash = () => {
      setHighlight(messageFromHash());
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

  const addNote = useCallback((roomK: string, text: string, invocation?: string, action?: Note['action']) => {
    setNotes((n) =>
      invocation !== undefined && n.some((x) => x.invocation === invocation)
        ? n // shown already (the live push and the command's answer carry the same reply)
        : [
            ...n.slice(-20),
            {
              id: ++noteSeq.current,
              room: roomK,
              text,
              ...(invocation ? { invocation } : {}),
              ...(action ? { action } : {}),
            },
          ],
    );
  }, []);

  // Live updates; while the socket is not live the open room is polled instead.
  const onEvent = useRef<(e: LiveEvent) => void>(() => undefined);
  onEvent.current = (e: LiveEvent) => {
    if (e.event_type === 'message.created' || e.event_type === 'message.updated') {
      const m = messageFromEvent(e.data, me.org_id);
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
      const open = cur && e.data.container_id === cur.id;
      if (!open) unread.marked(e.data);
    } else if (e.event_type === 'message.deleted') {
      state.remove(e.data.message_id);
    } else if (e.event_type === 'reaction.added' || e.event_type === 'reaction.removed') {
      const d = e.data;
      state.react(d.message_id, {
        emoji: d.emoji,
        count: d.count,
        reactor: { type: d.reactor_type, id: d.reactor_id },
        added: e.event_type === 'reaction.added',
      });
    } else if (
      e.event_type === 'task.created' ||
      e.event_type === 'task.status_changed' ||
      e.event_type === 'task.assigned'
    ) {
      const cur = roomRef.current;
      if (cur?.kind === 'topic' && e.data.topic_id === cur.id) setTaskVersion((v) => v + 1);
    } else if (/^(channel|member|project|topic|bot)\./.test(e.event_type)) {
      // Removed from the open channel (or it was archived): it leaves the screen at once.
      const d = e.data as Record<string, unknown>;
      const cur = roomRef.current;
      const gone =
        (e.event_type === 'member.left' && d.member_type === 'user' && d.member_id === me.id) ||
        e.event_type === 'channel.archived' ||
        e.event_type === 'topic.archived';
      if (gone && cur && (d.channel_id === cur.id || d.topic_id === cur.id)) leaveRoom();
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
        // not replayed on a first connection (it starts at the server's position): load it now, and
        // the unread counts too (messages posted between GET /api/unread and the socket's start were
        // never counted: a browser test saw "2 unread" never come, once in CI).
        if (s === 'live') {
          void state.refresh().catch(() => undefined);
          unread.reload();
        }
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

  async function runCommand(text: string, botId?: string) {
    if (room === null || target === null) return;
    const body = { text, ...target, ...(botId !== undefined && { bot_id: botId }) };
    let r: CommandResult;
    try {
      r = await ok(api.POST('/api/commands/execute', { body }));
    } catch (e) {
      // The command's bot is not in this channel: offer to add it (any member of the channel may) and
      // run the command again.
      const m = /^The bot (.+) is not a member here/.exec(e instanceof ApiError ? e.message : '');
      const bot = m && dir ? [...dir.bots.values()].find((b) => b.name === m[1]) : undefined;
      if (room.kind !== 'channel' || !bot) throw e;
      const channelId = room.id;
      addNote(
        roomKey(room),
        `${bot.name} is not in this channel, so /${text.slice(1).split(/\s/)[0]} cannot run here.`,
        undefined,
        {
          label: `Add ${bot.name} and run it`,
          run: async () => {
            await ok(
              api.POST('/api/channels/{channelId}/members', {
                params: { path: { channelId } },
                body: { bot_id: bot.id },
              }),
            );
            await runCommand(text, bot.id);
          },
        },
      );
      return;
    }
    const note = commandNote(r);
    if (note !== null) addNote(roomKey(room), note, r.reply?.ephemeral ? r.invocation_id : undefined);
  }

  const roomNotes = room ? notes.filter((n) => n.room === roomKey(room)) : [];
  const admin = isAdmin(me);
  const closeDialog = () => setDialog(null);
  const openCreated = (r: RoomRef) => {
    setDialog(null);
    reloadDirectory();
    setRoom(r);
  };

  async function react(m: Message, emoji: string, add: boolean) {
    const r = add
      ? await ok(
          api.POST('/api/messages/{id}/reactions', { params: { path: { id: m.id } }, body: { emoji } }),
        )
      : await ok(
          api.DELETE('/api/messages/{id}/reactions/{emoji}', { params: { path: { id: m.id, emoji } } }),
        );
    state.react(m.id, { all: r.reactions });
  }

  function copyLink(m: Message) {
    if (room === null) return;
    const url = `${location.origin}/#/${room.kind}/${room.id}/${m.id}`;
    void navigator.clipboard?.writeText(url).then(
      () => setLinkNote('Link copied.'),
      () => setLinkNote(url),
    );
  }

  return (
    <div class={`app chat${navOpen ? ' nav-open' : ''}`}>
      <TopBar
        shell={shell}
        here="chat"
        navOpen={navOpen}
        toggleNav={() => setNavOpen((o) => !o)}
        account={() => setDialog({ kind: 'account' })}
      />
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
        openDialog={setDialog}
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
          {room !== null && room.kind !== 'dm' && dir !== null && (
            <button type="button" class="settings" onClick={() => setDialog({ kind: 'settings' })}>
              {room.kind === 'channel' ? 'Channel settings' : 'Topic settings'}
            </button>
          )}
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
              react={react}
              copyLink={copyLink}
              unreadAtOpen={unreadAtOpen?.room === roomKey(room) ? unreadAtOpen.count : 0}
              highlight={highlight}
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
                    {n.action && (
                      <button
                        type="button"
                        onClick={() => {
                          setNotes((all) => all.filter((x) => x.id !== n.id));
                          void n.action!.run().catch((e: unknown) => addNote(n.room, describe(e)));
                        }}
                      >
                        {n.action.label}
                      </button>
                    )}
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
        ) : dir !== null && dir.channels.length === 0 && dir.projects.length === 0 ? (
          <FirstRun admin={admin} open={setDialog} navigate={shell.navigate} />
        ) : (
          <p class="empty">{dir === null ? 'Loading…' : 'Pick a channel, topic or conversation.'}</p>
        )}
      </main>
      {linkNote !== null && (
        <p class="toast" role="status" onClick={() => setLinkNote(null)}>
          {linkNote}
        </p>
      )}
      {dialog?.kind === 'new-channel' && (
        <NewChannelDialog onClose={closeDialog} created={(c) => openCreated({ kind: 'channel', id: c.id })} />
      )}
      {dialog?.kind === 'new-project' && (
        <NewProjectDialog
          onClose={closeDialog}
          created={(_p, t) =>
            t ? openCreated({ kind: 'topic', id: t.id }) : (setDialog(null), reloadDirectory())
          }
        />
      )}
      {dialog?.kind === 'new-topic' && dir?.projects.some((p) => p.id === dialog.projectId) && (
        <NewTopicDialog
          project={dir.projects.find((p) => p.id === dialog.projectId)!}
          onClose={closeDialog}
          created={(t) => openCreated({ kind: 'topic', id: t.id })}
        />
      )}
      {dialog?.kind === 'browse' && dir !== null && (
        <BrowseChannelsDialog dir={dir} meId={me.id} onClose={closeDialog} open={openCreated} />
      )}
      {dialog?.kind === 'new-dm' && (
        <NewDmDialog onClose={closeDialog} opened={(id) => openCreated({ kind: 'dm', id })} />
      )}
      {dialog?.kind === 'settings' && dir !== null && room !== null && (
        <RoomSettingsDialog
          dir={dir}
          me={me}
          room={room}
          onClose={() => {
            setDialog(null);
            reloadDirectory();
          }}
          left={() => {
            leaveRoom();
            reloadDirectory();
          }}
        />
      )}
      {dialog?.kind === 'account' && (
        <AccountDialog
          me={me}
          onClose={closeDialog}
          passwordChanged={shell.renewSession}
          signOutEverywhere={shell.signOutEverywhere}
        />
      )}
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

/** What an empty workspace shows: the steps to a team that can start (admins get all three). */
function FirstRun(props: { admin: boolean; open(d: SidebarDialog): void; navigate(to: string): void }) {
  return (
    <section class="first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Welcome to Workroom</h2>
      <p>Nothing here yet. Three steps and your team can start:</p>
      <ol>
        <li>
          <strong>Create a channel</strong>
          <p>A place for a team or a subject; public ones anyone can join.</p>
          <button type="button" class="primary" onClick={() => props.open({ kind: 'new-channel' })}>
            Create channel
          </button>
        </li>
        {props.admin && (
          <li>
            <strong>Invite people</strong>
            <p>Add your colleagues with an initial password; then add them to the channel.</p>
            <button type="button" onClick={() => props.navigate('/admin/people')}>
              Add people
            </button>
          </li>
        )}
        <li>
          <strong>Add a bot</strong>
          <p>Register a bot (its webhook, commands and keys), then add it to the channel from its page.</p>
          <button type="button" onClick={() => props.navigate('/admin')}>
            Register a bot
          </button>
        </li>
      </ol>
      <p>
        Or{' '}
        <button type="button" class="link" onClick={() => props.open({ kind: 'browse' })}>
          browse the channels
        </button>{' '}
        others created.
      </p>
    </section>
  );
}
