import { AppError } from '../domain/errors.js';
import { getChannel } from '../operations/containers/channels.js';
import { listDmRooms } from '../operations/containers/dm-rooms.js';
import { sendMessage } from '../operations/messages/messages.js';
import { search, SEARCH_TYPES } from '../operations/search/search.js';
import { getUser } from '../operations/users/users.js';
import { md, oneLine, snippetToMarkdown } from './format.js';
import type { BotContext, BuiltinBot } from './types.js';

/**
 * The search bot (system): `/search <terms>` answers the invoking user only (ephemeral) with the best
 * results; a DM to the bot is answered in that DM. The search always runs as the user who asked
 * (`callAsUser`), through the same search operation as the REST API and MCP, so it never shows a
 * message, task, user or channel that user could not open. The syntax is the search operation's
 * (words, "phrases", in:#channel, from:@user, before:/after:, has:file) plus `type:` to pick one kind.
 */

const PER_KIND = 5;
const USAGE =
  'Usage: `/search <terms> [in:#channel] [from:@user] [type:messages|tasks|users|channels]` — e.g. `/search deploy failed in:#ops type:messages`';

type Kind = (typeof SEARCH_TYPES)[number];

/** Takes `type:…` out of the terms (the rest is the search operation's query). */
export function parseSearchArgs(args: string): { query: string; type: Kind } {
  let type: Kind = 'all';
  const rest: string[] = [];
  for (const token of args.split(/\s+/).filter(Boolean)) {
    const m = /^type:(\w+)$/i.exec(token);
    if (!m) {
      rest.push(token);
      continue;
    }
    const t = m[1]!.toLowerCase();
    const kind = (t.endsWith('s') ? t : `${t}s`) as Kind;
    if (!(SEARCH_TYPES as readonly string[]).includes(kind) || kind === 'all') {
      throw new AppError('invalid_input', `type: must be messages, tasks, users or channels (not ${t})`, {
        field: 'type',
      });
    }
    type = kind;
  }
  return { query: rest.join(' '), type };
}

/** Searches as `userId` and writes the answer (Markdown). */
export async function searchAnswer(ctx: BotContext, userId: string, args: string): Promise<string> {
  const { query, type } = parseSearchArgs(args.trim());
  if (query.trim() === '') return USAGE;
  const r = await ctx.callAsUser(userId, search, { query, type, limit: PER_KIND });
  const lines: string[] = [];
  const messages = r.messages ?? [];
  if (messages.length > 0) {
    const channelNames = new Map<string, string>();
    const senderNames = new Map<string, string>();
    for (const m of messages) {
      if (m.channel_id && !channelNames.has(m.channel_id)) {
        const ch = await ctx.callAsUser(userId, getChannel, { channel_id: m.channel_id });
        channelNames.set(m.channel_id, `#${ch.name}`);
      }
      if (m.sender_type === 'user' && !senderNames.has(m.sender_id)) {
        const u = await ctx.callAsUser(userId, getUser, { user_id: m.sender_id }).catch(() => null);
        senderNames.set(m.sender_id, u?.display_name ?? 'someone');
      }
    }
    lines.push(`**Messages** (${messages.length})`);
    for (const m of messages) {
      const where = m.channel_id
        ? md(channelNames.get(m.channel_id) ?? 'a channel')
        : m.topic_id
          ? 'a topic'
          : 'a DM';
      const who = m.sender_type === 'user' ? md(senderNames.get(m.sender_id) ?? 'someone') : 'a bot';
      lines.push(
        `- ${where} · ${who} · ${m.created_at.slice(0, 10)}: ${snippetToMarkdown(m.snippet)} — [open](${ctx.link(m)})`,
      );
    }
  }
  const tasks = r.tasks ?? [];
  if (tasks.length > 0) {
    lines.push(`**Tasks** (${tasks.length})`);
    for (const t of tasks) {
      lines.push(
        `- ${md(oneLine(t.title, 120))} · ${t.status} · ${t.priority}${t.due_date ? ` · due ${t.due_date}` : ''} — [open](${ctx.link({ topic_id: t.topic_id })})`,
      );
    }
  }
  const users = r.users ?? [];
  if (users.length > 0) {
    lines.push(`**People** (${users.length})`);
    for (const u of users) {
      lines.push(`- ${md(u.display_name)} · ${md(u.email)}${u.department ? ` · ${md(u.department)}` : ''}`);
    }
  }
  const channels = r.channels ?? [];
  if (channels.length > 0) {
    lines.push(`**Channels** (${channels.length})`);
    for (const c of channels) {
      lines.push(
        `- [#${md(c.name)}](${ctx.link({ channel_id: c.id })})${c.description ? ` — ${md(oneLine(c.description, 100))}` : ''}`,
      );
    }
  }
  if (lines.length === 0) return `No results for “${md(query)}” among what you can open.`;
  return [`🔎 Results for “${md(query)}”`, ...lines].join('\n');
}

export const searchBot: BuiltinBot = {
  key: 'search',
  type: 'system',
  name: 'Search',
  description:
    'Finds messages, tasks, people and channels you can open: /search <terms>, or write the terms to it in a DM',
  // A DM to the bot (it is a member of the DM rooms opened with it).
  events: ['message.created'],
  commands: [
    {
      name: 'search',
      description: 'Search messages, tasks, people and channels you can open (answer shown to you only)',
      usage: '/search <terms> [in:#channel] [from:@user] [type:messages|tasks|users|channels]',
    },
  ],
  // Answers in DMs (messages:write), finds its DM rooms (channels:read).
  scopes: ['messages:write', 'channels:read'],

  async onCommand(ctx, cmd) {
    return { content: await searchAnswer(ctx, cmd.userId, cmd.args), ephemeral: true };
  },

  async onEvent(ctx, event) {
    if (event.type !== 'message.created') return;
    const d = event.data;
    if (d.sender_type !== 'user' || typeof d.dm_room_id !== 'string' || typeof d.sender_id !== 'string')
      return;
    // Only a DM of exactly the bot and the author: the answer shows what the author can open, and
    // nobody else may read it.
    const rooms = await ctx.call(listDmRooms, {});
    const room = rooms.items.find((r) => r.id === d.dm_room_id);
    const members = room?.members ?? [];
    const oneToOne =
      members.length === 2 &&
      members.some((m) => m.type === 'bot' && m.id === ctx.bot.id) &&
      members.some((m) => m.type === 'user' && m.id === d.sender_id);
    if (!oneToOne) return;
    const text = String(d.content ?? '')
      .trim()
      .replace(/^\/search\b/i, '')
      .trim();
    let content: string;
    try {
      content = text === '' ? USAGE : await searchAnswer(ctx, d.sender_id, text);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_input') throw err;
      content = `⚠️ ${err.message}\n${USAGE}`;
    }
    // The event may be delivered again (at least once): the answer is then not posted twice (a
    // different answer under the same key means it was posted already, with results of that time).
    try {
      await ctx.call(
        sendMessage,
        { dm_room_id: d.dm_room_id, content },
        { idempotencyKey: `search-reply:${event.id}` },
      );
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'idempotency_conflict') throw err;
    }
  },
};
