import { useEffect, useRef, useState } from 'preact/hooks';
import type { Message, User } from '../api/types';
import { renderMessage } from '../markdown';
import { MessageActions } from './actions';
import { senderName, type Directory } from './directory';
import { Avatar } from './team';
import { useVirtualizer } from './virtual';

const time = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export interface ListProps {
  messages: Message[];
  directory: Directory | null;
  me: User;
  hasMore: boolean;
  loadingOlder: boolean;
  roomKey: string;
  loadOlder(): void;
  edit(m: Message, content: string): Promise<void>;
  remove(m: Message): Promise<void>;
  /** Clicks a button or chooses an option of a bot message's actions. */
  invoke(m: Message, actionId: string, value?: string): Promise<void>;
  /** Bookmarks the message (channels only). */
  bookmark?(m: Message): Promise<void>;
  /** Adds or takes back my reaction (absent where I may not post). */
  react?(m: Message, emoji: string, add: boolean): Promise<void>;
  /** Copies a link to the message. */
  copyLink?(m: Message): void;
  /** The message a link pointed at: shown highlighted. */
  highlight?: string | null;
  /** How many messages were unread when the room was opened: offers a jump to the first of them. */
  unreadAtOpen?: number;
}

/** The reactions offered by the "Add reaction" menu. */
export const QUICK_REACTIONS = ['👍', '❤️', '😄', '🎉', '👀', '✅'] as const;

/** Consecutive messages of one author within this time are grouped under one header. */
const GROUP_MS = 5 * 60_000;
const sameGroup = (a: Message | undefined, b: Message) =>
  a !== undefined &&
  a.sender_type === b.sender_type &&
  a.sender_id === b.sender_id &&
  Date.parse(b.created_at) - Date.parse(a.created_at) < GROUP_MS;

/**
 * The message list, virtualized: only the messages in view (plus a few) are in the DOM, whatever the
 * history's length. It stays at the bottom as messages arrive while the reader is there, keeps the
 * reader's place when older pages are prepended, and asks for the next older page near the top.
 */
export function MessageList(props: ListProps) {
  const scroller = useRef<HTMLDivElement>(null);
  const { messages } = props;
  const v = useVirtualizer({
    count: messages.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 64,
    overscan: 6,
    getItemKey: (i) => messages[i]?.id ?? i,
    anchorTo: 'end',
    followOnAppend: true,
  });

  // A newly opened room starts at its newest message.
  const opened = useRef<string | null>(null);
  const opening = useRef<string | null>(null);
  useEffect(() => {
    if (messages.length > 0 && opened.current !== props.roomKey && opening.current !== props.roomKey) {
      const key = props.roomKey;
      opening.current = key;
      v.scrollToIndex(messages.length - 1, { align: 'end' });
      // Only once it is at the bottom may reaching the top load older pages.
      requestAnimationFrame(() => (opened.current = key));
    }
  });

  // A message link: once the room is open at its newest message, scroll to the linked one.
  const shown = useRef<string | null>(null);
  useEffect(() => {
    const h = props.highlight;
    if (!h || shown.current === h || opened.current !== props.roomKey) return;
    const i = messages.findIndex((m) => m.id === h);
    if (i >= 0) {
      shown.current = h;
      v.scrollToIndex(i, { align: 'center' });
    }
  });

  const items = v.getVirtualItems();
  const first = items[0]?.index;
  useEffect(() => {
    if (
      first !== undefined &&
      first <= 3 &&
      props.hasMore &&
      !props.loadingOlder &&
      opened.current === props.roomKey
    )
      props.loadOlder();
  }, [first, props.hasMore, props.loadingOlder]);

  const unread = props.unreadAtOpen ?? 0;
  const firstUnread = unread > 0 && unread <= messages.length ? messages.length - unread : -1;
  const [jumped, setJumped] = useState<string | null>(null);
  return (
    <div class="messages" ref={scroller} role="log" aria-label="Messages" aria-live="polite" tabIndex={0}>
      {firstUnread >= 0 && jumped !== props.roomKey && (
        <button
          type="button"
          class="jump"
          onClick={() => {
            setJumped(props.roomKey);
            v.scrollToIndex(firstUnread, { align: 'start' });
          }}
        >
          {unread} unread · Jump to first unread
        </button>
      )}
      {props.loadingOlder && <p class="older">Loading older messages…</p>}
      {messages.length === 0 && <p class="empty">No messages yet. Say hello!</p>}
      <div class="messages-inner" style={{ height: `${v.getTotalSize()}px` }}>
        {items.map((it) => {
          const m = messages[it.index]!;
          return (
            <div
              key={it.key}
              data-index={it.index}
              ref={v.measureElement}
              class="row"
              style={{ transform: `translateY(${it.start}px)` }}
            >
              {it.index === firstUnread && (
                <p class="unread-line">
                  <span>New</span>
                </p>
              )}
              <MessageItem
                {...props}
                m={m}
                grouped={it.index !== firstUnread && sameGroup(messages[it.index - 1], m)}
              />
            </div>
          );
        })}
      </div>
    </div>
  );
}

function MessageItem(props: ListProps & { m: Message; grouped: boolean }) {
  const { m, directory, me } = props;
  const [picking, setPicking] = useState(false);
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [draft, setDraft] = useState(m.content);
  const [error, setError] = useState<string | null>(null);
  const mine = m.sender_type === 'user' && m.sender_id === me.id;
  const name = senderName(directory, m);
  const created = new Date(m.created_at);

  async function save() {
    try {
      await props.edit(m, draft);
      setEditing(false);
      setError(null);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }

  return (
    <article
      class={`message${m.sender_type === 'bot' ? ' from-bot' : ''}${props.grouped ? ' grouped' : ''}${props.highlight === m.id ? ' highlight' : ''}`}
      aria-label={`${name}, ${day.format(created)}`}
      id={`message-${m.id}`}
    >
      {!props.grouped && <Avatar name={name} id={m.sender_id} bot={m.sender_type === 'bot'} />}
      <header class={props.grouped ? 'sr-only' : undefined}>
        <span class="author">{name}</span>
        {m.sender_type === 'bot' && (
          <span class="badge" title="Sent by a bot">
            BOT
          </span>
        )}
        <time dateTime={m.created_at} title={day.format(created)}>
          {time.format(created)}
        </time>
        {/* A bot updating its own message (a poll's count, an answered action) is not an edit. */}
        {m.edited_at !== null && m.sender_type !== 'bot' && (
          <span class="edited" title={`Edited ${day.format(new Date(m.edited_at))}`}>
            (edited)
          </span>
        )}
      </header>
      {editing ? (
        <div class="edit">
          <textarea
            aria-label="Edit message"
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                void save();
              } else if (e.key === 'Escape') setEditing(false);
            }}
            ref={(el) => el?.focus()}
          />
          <button type="button" class="primary" onClick={() => void save()}>
            Save
          </button>
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <div class="content" dangerouslySetInnerHTML={{ __html: renderMessage(m.content, m.content_html) }} />
      )}
      {m.sender_type === 'bot' && m.actions && m.actions.length > 0 && (
        <MessageActions m={m} botName={name} invoke={props.invoke} />
      )}
      {(m.reactions?.length ?? 0) > 0 && (
        <ul class="reactions" aria-label="Reactions">
          {m.reactions!.map((r) => {
            const mineToo = r.reactors.some((x) => x.type === 'user' && x.id === me.id);
            const who = r.reactors
              .map((x) => senderName(directory, { sender_type: x.type, sender_id: x.id }))
              .join(', ');
            return (
              <li key={r.emoji}>
                <button
                  type="button"
                  class={mineToo ? 'mine' : undefined}
                  aria-pressed={mineToo}
                  title={who}
                  disabled={!props.react}
                  onClick={() =>
                    void props.react?.(m, r.emoji, !mineToo).catch((e: Error) => setError(e.message))
                  }
                >
                  {r.emoji} {r.count}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {picking && props.react && (
        <div class="reaction-menu" role="group" aria-label="Add reaction">
          {QUICK_REACTIONS.map((emoji, i) => (
            <button
              key={emoji}
              type="button"
              aria-label={`React with ${emoji}`}
              ref={i === 0 ? (el) => el?.focus() : undefined}
              onKeyDown={(e) => e.key === 'Escape' && setPicking(false)}
              onClick={() => {
                setPicking(false);
                void props.react!(m, emoji, true).catch((e: Error) => setError(e.message));
              }}
            >
              {emoji}
            </button>
          ))}
        </div>
      )}
      {(mine || props.bookmark || props.react || props.copyLink) && !editing && (
        <div class="actions">
          {props.react && !confirming && (
            <button
              type="button"
              aria-label="Add reaction"
              title="Add reaction"
              aria-expanded={picking}
              onClick={() => setPicking((p) => !p)}
            >
              <span aria-hidden="true">☺+</span>
            </button>
          )}
          {props.copyLink && !confirming && (
            <button
              type="button"
              class="copy-link"
              aria-label="Copy link"
              title="Copy a link to this message"
              onClick={() => props.copyLink!(m)}
            >
              <span aria-hidden="true">🔗</span>
            </button>
          )}
          {props.bookmark && !confirming && (
            <button
              type="button"
              aria-label="Bookmark"
              title="Bookmark this message"
              onClick={() => void props.bookmark!(m).catch((e: Error) => setError(e.message))}
            >
              <span aria-hidden="true">☆</span>
            </button>
          )}
          {!mine ? null : confirming ? (
            <>
              <span>Delete this message?</span>
              <button
                type="button"
                class="danger"
                onClick={() => void props.remove(m).catch((e: Error) => setError(e.message))}
              >
                Delete
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep
              </button>
            </>
          ) : (
            <>
              <button
                type="button"
                onClick={() => {
                  setDraft(m.content);
                  setEditing(true);
                }}
              >
                Edit
              </button>
              <button type="button" onClick={() => setConfirming(true)}>
                Delete
              </button>
            </>
          )}
        </div>
      )}
    </article>
  );
}
