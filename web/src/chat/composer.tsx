import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body, Command, Mention } from '../api/types';

type Hashtag = Body<'/api/hashtags/search', 'get'>['items'][number];

export interface ComposerProps {
  roomLabel: string;
  channelId: string | null;
  send(text: string): Promise<void>;
  /** Runs a slash command; `botId` when it was picked in the palette (the bot of that option). */
  runCommand(text: string, botId?: string): Promise<void>;
}

type Popup =
  | { kind: 'commands'; items: Command[] }
  | { kind: 'mentions'; items: Mention[]; start: number; end: number }
  | { kind: 'hashtags'; items: Hashtag[]; start: number; end: number }
  | null;

const MENTION_AT_CARET = /(^|\s)@([^\s@]{0,100})$/;
const HASHTAG_AT_CARET = /(^|\s)#([^\s#]{0,100})$/;
/** A name that reads back as one hashtag; others are inserted as a link (the message shows `#name`). */
const PLAIN_TAG = /^[\p{L}\p{N}][\p{L}\p{N}_-]*$/u;

/** What picking a hashtag suggestion inserts. */
function hashtagText(h: Hashtag): string {
  if (PLAIN_TAG.test(h.name) && h.type !== 'task') return `#${h.name}`;
  if (h.type === 'tag') return `#${h.name.replace(/[^\p{L}\p{N}_-]+/gu, '-')}`;
  return `[#${h.name.replace(/[[\]]/g, '')}](/#/${h.type}/${h.id})`;
}

/**
 * The composer: Enter sends (Shift+Enter is a new line). Typing `/` at the start opens the slash
 * palette — the commands of GET /api/commands, fetched again every time it opens so a command
 * registered a moment ago is there — filtered by what follows the slash; `@` opens mention
 * suggestions. Both popups are listboxes driven from the textbox (aria-activedescendant): arrows
 * move, Enter or Tab picks, Escape closes.
 */
export function Composer(props: ComposerProps) {
  const [text, setText] = useState('');
  const [popup, setPopup] = useState<Popup>(null);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);
  const commands = useRef<Command[] | null>(null);
  const paletteOpen = useRef(false);
  const mentionSeq = useRef(0);
  /** The palette option picked last: its bot is the one meant while the text still names its command. */
  const picked = useRef<{ command: string; botId: string } | null>(null);

  // The palette's word: "/dep" → "dep"; closed once a space follows the command.
  const slash = /^\/([\w-]*)$/.exec(text);

  useEffect(() => {
    if (slash === null) {
      paletteOpen.current = false;
      if (popup?.kind === 'commands') setPopup(null);
      return;
    }
    const filter = (all: Command[]) => {
      const q = slash[1]!.toLowerCase();
      const starts = all.filter((c) => c.command.toLowerCase().startsWith(q));
      const contains = all.filter(
        (c) => !c.command.toLowerCase().startsWith(q) && c.command.toLowerCase().includes(q),
      );
      setPopup({ kind: 'commands', items: [...starts, ...contains] });
      setActive(0);
    };
    if (!paletteOpen.current) {
      paletteOpen.current = true;
      if (commands.current) filter(commands.current);
      ok(api.GET('/api/commands'))
        .then((r) => {
          commands.current = r.items;
          if (paletteOpen.current) filter(r.items);
        })
        .catch((e: unknown) => setError(describe(e)));
    } else if (commands.current) filter(commands.current);
  }, [slash?.[1]]);

  function onInput(el: HTMLTextAreaElement) {
    setText(el.value);
    setError(null);
    const before = el.value.slice(0, el.selectionStart);
    const tag = el.value.startsWith('/') ? null : HASHTAG_AT_CARET.exec(before);
    if (tag !== null) {
      const q = tag[2]!;
      const seq = ++mentionSeq.current;
      ok(api.GET('/api/hashtags/search', { params: { query: { q, limit: 5 } } }))
        .then((r) => {
          if (seq !== mentionSeq.current) return;
          setPopup(
            r.items.length
              ? { kind: 'hashtags', items: r.items, start: before.length - q.length - 1, end: before.length }
              : null,
          );
          setActive(0);
        })
        .catch(() => undefined);
      return;
    }
    const m = MENTION_AT_CARET.exec(before);
    if (m === null || el.value.startsWith('/')) {
      // The caret left the hashtag or mention: an answer still on its way must not open the popup.
      mentionSeq.current++;
      if (popup?.kind === 'mentions' || popup?.kind === 'hashtags') setPopup(null);
      return;
    }
    const q = m[2]!;
    const seq = ++mentionSeq.current;
    const query: { q: string; limit: number; channel_id?: string } = { q, limit: 8 };
    if (props.channelId !== null) query.channel_id = props.channelId;
    ok(api.GET('/api/mentions/users', { params: { query } }))
      .then((r) => {
        if (seq !== mentionSeq.current) return; // a later keystroke asked again
        setPopup(
          r.items.length
            ? { kind: 'mentions', items: r.items, start: before.length - q.length - 1, end: before.length }
            : null,
        );
        setActive(0);
      })
      .catch(() => undefined);
  }

  function pick(i: number) {
    if (popup === null) return;
    if (popup.kind === 'commands') {
      const c = popup.items[i];
      if (c) {
        setText(`/${c.command} `);
        picked.current = c.bot_id ? { command: c.command, botId: c.bot_id } : null;
      }
    } else {
      const m = popup.items[i];
      const insert = m === undefined ? null : 'mention' in m ? m.mention : hashtagText(m);
      if (insert !== null) {
        const next = `${text.slice(0, popup.start)}${insert} ${text.slice(popup.end)}`;
        const caret = popup.start + insert.length + 1;
        // The textbox gets the text and the caret now, not at the next frame: a key typed in between
        // (a fast typist, a test) went where the caret then moved away from.
        const el = input.current;
        if (el) {
          el.value = next;
          el.setSelectionRange(caret, caret);
        }
        setText(next);
      }
    }
    mentionSeq.current++;
    setPopup(null);
    input.current?.focus();
  }

  async function submit() {
    const value = text.trim();
    if (value === '' || sending) return;
    setSending(true);
    try {
      if (value.startsWith('/')) {
        const p = picked.current;
        const named = p !== null && (value === `/${p.command}` || value.startsWith(`/${p.command} `));
        await props.runCommand(value, named ? p.botId : undefined);
        picked.current = null;
      } else await props.send(value);
      setText('');
    } catch (e) {
      setError(describe(e));
    } finally {
      setSending(false);
      input.current?.focus();
    }
  }

  function onKeyDown(e: KeyboardEvent) {
    const n = popup?.items.length ?? 0;
    if (popup !== null && n > 0) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
        return;
      }
      if (
        e.key === 'Tab' ||
        (e.key === 'Enter' && !e.shiftKey && (popup.kind !== 'commands' || slash !== null))
      ) {
        e.preventDefault();
        pick(active);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        setPopup(null);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      void submit();
    }
  }

  const listId =
    popup?.kind === 'commands'
      ? 'slash-palette'
      : popup?.kind === 'hashtags'
        ? 'hashtag-list'
        : 'mention-list';
  const optionId = (i: number) => `${listId}-${i}`;
  const showPopup = popup !== null && (popup.items.length > 0 || popup.kind === 'commands');

  return (
    <div class="composer">
      {showPopup && popup.kind === 'commands' && (
        // The list scrolls: focusable (tabindex 0), so a keyboard reaches all of it (axe
        // scrollable-region-focusable); each option is named by what it shows.
        <ul id="slash-palette" role="listbox" aria-label="Commands" class="popup" tabIndex={0}>
          {popup.items.length === 0 && <li class="none">No command matches /{slash?.[1]}</li>}
          {popup.items.map((c, i) => (
            <li
              id={optionId(i)}
              key={`${c.bot_id ?? ''}/${c.command}`}
              role="option"
              aria-selected={i === active}
              aria-describedby={`${optionId(i)}-d`}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(i);
              }}
            >
              <span class="cmd">/{c.command}</span>
              {c.usage_hint !== null && <span class="hint"> {c.usage_hint}</span>}
              {c.bot_name !== null && <span class="from"> · {c.bot_name}</span>}
              {/* Shown, and read as the option's description rather than its name. */}
              <span class="desc" id={`${optionId(i)}-d`} aria-hidden="true">
                {c.description}
              </span>
            </li>
          ))}
        </ul>
      )}
      {showPopup && popup.kind === 'mentions' && (
        <ul id="mention-list" role="listbox" aria-label="Mention suggestions" class="popup">
          {popup.items.map((m, i) => (
            <li
              id={optionId(i)}
              key={`${m.type}:${m.id}`}
              role="option"
              aria-selected={i === active}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(i);
              }}
            >
              <span class="cmd">{m.name}</span>
              <span class="desc">
                {m.type === 'special' ? m.description : m.type}
                {m.in_channel ? ' · in this channel' : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
      {showPopup && popup.kind === 'hashtags' && (
        <ul id="hashtag-list" role="listbox" aria-label="Hashtag suggestions" class="popup">
          {popup.items.map((h, i) => (
            <li
              id={optionId(i)}
              key={`${h.type}:${h.id}`}
              role="option"
              aria-selected={i === active}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(i);
              }}
            >
              <span class="cmd">#{h.name}</span>
              <span class="desc">
                {h.type}
                {h.status ? ` · ${h.status.replace('_', ' ')}` : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="compose-row">
        <textarea
          ref={input}
          rows={1}
          aria-label="Message"
          placeholder={`Message ${props.roomLabel} — / for commands, @ to mention, # for hashtags`}
          value={text}
          aria-autocomplete="list"
          aria-controls={showPopup ? listId : undefined}
          aria-activedescendant={showPopup && popup.items.length > 0 ? optionId(active) : undefined}
          onInput={(e) => onInput(e.currentTarget)}
          onKeyDown={onKeyDown}
        />
        <button
          type="button"
          class="primary"
          onClick={() => void submit()}
          disabled={sending || text.trim() === ''}
        >
          Send
        </button>
      </div>
    </div>
  );
}
