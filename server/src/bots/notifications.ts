import { isAppError } from '../domain/errors.js';
import { getBotData, putBotData } from '../operations/bots/data.js';
import { getChannel, listChannelMembers } from '../operations/containers/channels.js';
import { sendBotDm } from '../operations/dm/bot-dm.js';
import { listMessages } from '../operations/messages/messages.js';
import { searchMentions } from '../operations/mentions/mentions.js';
import { getTask } from '../operations/tasks/tasks.js';
import { getUser, listUsers } from '../operations/users/users.js';
import { md, oneLine } from './format.js';
import type { BotContext, BotEvent, BuiltinBot } from './types.js';

/**
 * The notifications bot (system): a DM to a user when
 * - they are @mentioned in a channel or topic they can open (by name, by e-mail, through their
 *   department, or by @all / @here in a channel: every member, or those online),
 * - a task is assigned to them (by someone else),
 * - a task they created or are assigned changes status (by someone else),
 * - a webhook of a bot they registered failed for good, was paused or turned off (the server's
 *   notification, `notification.created`, relayed).
 * Each kind can be muted per user: `/notifications mute mentions|assignments|status|webhooks|all`,
 * kept as the bot's own data (bots.data.*), one document per user.
 *
 * It hears these events from its whole organization (orgEvents), member or not, and reads on behalf of
 * the author (who may see what they wrote) or of the recipient (whether they may open it), never more.
 * A mention is not notified when the recipient could not open the message, nor to its author.
 * Mentions in messages written by bots and in DM rooms (already a conversation with the user) are
 * not notified. Every DM carries an idempotency key made of the event id and the recipient, so a
 * delivery attempted again does not DM twice.
 */

export const NOTIFICATION_KINDS = ['mentions', 'assignments', 'status', 'webhooks'] as const;
type Kind = (typeof NOTIFICATION_KINDS)[number];

/** DMs one message sends at most (@all in a large channel): the rest are not notified (logged). */
export const MAX_RECIPIENTS = 100;
/** "@" signs of one message that are looked at. */
const MAX_MENTIONS = 20;

const settingsKey = (userId: string) => `settings:${userId}`;

interface Settings {
  muted: Kind[];
}

async function loadSettings(ctx: BotContext, userId: string): Promise<Settings> {
  try {
    const r = await ctx.call(getBotData, { bot_id: ctx.bot.id, key: settingsKey(userId) });
    const muted = (r.value as Partial<Settings> | null)?.muted;
    return { muted: Array.isArray(muted) ? muted.filter((k): k is Kind => isKind(k)) : [] };
  } catch (e) {
    if (isAppError(e) && e.code === 'not_found') return { muted: [] };
    throw e;
  }
}

const isKind = (k: unknown): k is Kind => (NOTIFICATION_KINDS as readonly unknown[]).includes(k);

/** DMs `userId` unless they muted `kind`; once per (event, user). */
async function notify(ctx: BotContext, event: BotEvent, userId: string, kind: Kind, content: string) {
  if ((await loadSettings(ctx, userId)).muted.includes(kind)) return;
  try {
    await ctx.call(
      sendBotDm,
      { bot_id: ctx.bot.id, user_id: userId, content },
      { idempotencyKey: `notify:${event.id}:${userId}` },
    );
  } catch (e) {
    // Sent already by an earlier attempt (with other wording), or the user was deactivated meanwhile.
    if (isAppError(e) && (e.code === 'idempotency_conflict' || e.code === 'forbidden')) return;
    throw e;
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

async function displayName(ctx: BotContext, userId: string | null): Promise<string> {
  if (!userId) return 'Someone';
  const u = await ctx.call(getUser, { user_id: userId }).catch(() => null);
  return u?.display_name ?? 'Someone';
}

/** Whether the user may read the channel or topic (reading its latest message as them). */
async function canRead(ctx: BotContext, userId: string, place: { channel_id?: string; topic_id?: string }) {
  try {
    await ctx.callAsUser(userId, listMessages, { ...place, limit: 1 });
    return true;
  } catch (e) {
    if (isAppError(e) && ['not_found', 'forbidden'].includes(e.code)) return false;
    throw e;
  }
}

const WORD = /[\p{L}\p{N}_]/u;

/**
 * Who a message mentions, as its author sees the directory: users by display name (the longest
 * matching name wins) or e-mail, departments by name, and @all / @here.
 */
export async function resolveMentions(
  ctx: BotContext,
  authorId: string,
  content: string,
  channelId: string | null,
): Promise<{ users: Set<string>; all: boolean; here: boolean }> {
  const out = { users: new Set<string>(), all: false, here: false };
  const lower = content.toLowerCase();
  const lookups = new Map<string, Promise<{ type: string; id: string; name: string }[]>>();
  let seen = 0;
  for (let i = lower.indexOf('@'); i !== -1 && seen < MAX_MENTIONS; i = lower.indexOf('@', i + 1)) {
    if (i > 0 && WORD.test(lower[i - 1]!)) continue; // part of an e-mail address
    seen++;
    const after = lower.slice(i + 1);
    const special = /^(all|here)(?![\p{L}\p{N}_])/u.exec(after);
    if (special) {
      if (special[1] === 'all') out.all = true;
      else out.here = true;
      continue;
    }
    const email = /^([\w.+-]+@[\w-]+(?:\.[\w-]+)+)/.exec(after);
    if (email) {
      const u = await ctx.callAsUser(authorId, getUser, { email: email[1]! }).catch(() => null);
      if (u) out.users.add(u.id);
      continue;
    }
    const first = /^[\p{L}\p{N}_.-]+/u.exec(after)?.[0];
    if (!first) continue;
    let found = lookups.get(first);
    if (!found) {
      found = ctx
        .callAsUser(authorId, searchMentions, {
          q: first,
          limit: 50,
          ...(channelId && { channel_id: channelId }),
        })
        .then((r) => r.items.filter((x) => x.type === 'user' || x.type === 'department'));
      lookups.set(first, found);
    }
    let best: { type: string; id: string; name: string } | undefined;
    for (const item of await found) {
      const name = item.name.toLowerCase();
      const next = after[name.length];
      if (after.startsWith(name) && (next === undefined || !WORD.test(next))) {
        if (!best || name.length > best.name.length) best = item;
      }
    }
    if (best?.type === 'user') out.users.add(best.id);
    else if (best?.type === 'department') {
      const members = await ctx.callAsUser(authorId, listUsers, { department: best.name, limit: 200 });
      for (const u of members.items) if (u.department === best.name) out.users.add(u.id);
    }
  }
  return out;
}

async function onMessage(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  const author = str(d.sender_id);
  const content = typeof d.content === 'string' ? d.content : '';
  const channelId = str(d.channel_id);
  const topicId = str(d.topic_id);
  if (d.sender_type !== 'user' || !author || !content.includes('@')) return;
  if (!channelId && !topicId) return; // a DM room: the conversation already reaches its members
  const m = await resolveMentions(ctx, author, content, channelId);
  const recipients = new Set<string>();
  const readable = new Set<string>();
  if (channelId && (m.all || m.here)) {
    const members = await ctx.callAsUser(author, listChannelMembers, { channel_id: channelId });
    const people = members.items.filter((x) => x.member_type === 'user').map((x) => x.member_id);
    const online = m.all ? undefined : await ctx.onlineAmong(people);
    for (const x of members.items) {
      if (x.member_type !== 'user') continue;
      if (m.all || online?.has(x.member_id)) {
        recipients.add(x.member_id);
        readable.add(x.member_id); // members read their channel
      }
    }
  }
  for (const u of m.users) recipients.add(u);
  recipients.delete(author);
  if (recipients.size === 0) return;
  if (recipients.size > MAX_RECIPIENTS) {
    ctx.log.warn(
      { message: d.message_id, recipients: recipients.size, max: MAX_RECIPIENTS },
      'notifications: too many mentioned users; only the first are notified',
    );
  }
  const who = md(await displayName(ctx, author));
  const place = channelId ? { channel_id: channelId } : { topic_id: topicId! };
  const where = channelId
    ? `#${md((await ctx.callAsUser(author, getChannel, { channel_id: channelId })).name)}`
    : 'a topic';
  const how = m.all && !m.users.size ? ' (@all)' : m.here && !m.users.size ? ' (@here)' : '';
  const text = `🔔 **${who}** mentioned you${how} in ${where}:\n> ${oneLine(content, 200)}\n[Open](${ctx.link(place)})`;
  for (const userId of [...recipients].slice(0, MAX_RECIPIENTS)) {
    if (!readable.has(userId) && !(await canRead(ctx, userId, place))) continue;
    await notify(ctx, event, userId, 'mentions', text);
  }
}

interface TaskData {
  id: string;
  title: string;
  status: string;
  priority: string;
  due_date: string | null;
  topic_id: string;
  created_by_type: string;
  created_by_id: string;
  assignee_id: string | null;
}

/** Whether the user may open the task (its topic); the DM names it only then. */
async function canOpenTask(ctx: BotContext, userId: string, taskId: string): Promise<boolean> {
  try {
    await ctx.callAsUser(userId, getTask, { task_id: taskId });
    return true;
  } catch (e) {
    if (isAppError(e) && ['not_found', 'forbidden'].includes(e.code)) return false;
    throw e;
  }
}

async function onTask(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  const task = d.task as TaskData | undefined;
  if (!task) return;
  const actor = d.actor_type === 'user' ? str(d.actor_id) : null;
  const by = d.actor_type === 'user' ? `**${md(await displayName(ctx, actor))}**` : 'A bot';
  const link = ctx.link({ topic_id: task.topic_id });
  const title = `**${md(oneLine(task.title, 120))}**`;
  if (event.type === 'task.assigned') {
    const assignee = str(d.assignee_id);
    if (!assignee || assignee === actor || d.actor_id === assignee) return;
    if (!(await canOpenTask(ctx, assignee, task.id))) return;
    const extra = [task.priority, task.due_date ? `due ${task.due_date}` : ''].filter(Boolean).join(', ');
    await notify(
      ctx,
      event,
      assignee,
      'assignments',
      `📋 ${by} assigned you a task: ${title} (${extra})\n[Open](${link})`,
    );
    return;
  }
  if (event.type === 'task.status_changed') {
    const owners = new Set<string>();
    if (task.created_by_type === 'user') owners.add(task.created_by_id);
    if (task.assignee_id) owners.add(task.assignee_id);
    if (actor) owners.delete(actor);
    const text = `🔄 ${by} moved ${title} from ${md(String(d.previous_status))} to **${md(String(d.status))}**\n[Open](${link})`;
    for (const userId of owners) {
      if (await canOpenTask(ctx, userId, task.id)) await notify(ctx, event, userId, 'status', text);
    }
  }
}

async function onNotification(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  const userId = str(d.user_id);
  if (!userId) return;
  const text = `⚠️ **${md(String(d.title ?? 'Notification'))}**\n${md(String(d.body ?? ''))}`;
  await notify(ctx, event, userId, 'webhooks', text);
}

const USAGE = [
  '**/notifications** — what I DM you about:',
  '- `/notifications` — your settings',
  '- `/notifications mute mentions|assignments|status|webhooks|all`',
  '- `/notifications unmute mentions|assignments|status|webhooks|all`',
].join('\n');

function describe(s: Settings): string {
  return NOTIFICATION_KINDS.map((k) => `- ${k}: ${s.muted.includes(k) ? '🔕 muted' : '🔔 on'}`).join('\n');
}

export const notificationsBot: BuiltinBot = {
  key: 'notifications',
  type: 'system',
  name: 'Notifications',
  description:
    'DMs you when you are @mentioned, assigned a task, a task of yours changes status, or a webhook of your bot fails: /notifications to mute',
  events: [],
  orgEvents: ['message.created', 'task.assigned', 'task.status_changed', 'notification.created'],
  // Only messages that may mention someone are delivered to it (not one delivery per message).
  wantsOrgEvent(type, data) {
    if (type !== 'message.created') return true;
    return (
      data.sender_type === 'user' &&
      data.dm_room_id == null &&
      typeof data.content === 'string' &&
      data.content.includes('@')
    );
  },
  commands: [
    {
      name: 'notifications',
      description: 'Show or change what the notifications bot DMs you about (answer shown to you only)',
      usage: '/notifications [mute|unmute mentions|assignments|status|webhooks|all]',
    },
  ],
  // DMs (messages:write), names of people (users:read).
  scopes: ['messages:write', 'users:read'],

  async onEvent(ctx, event) {
    if (event.type === 'message.created') await onMessage(ctx, event);
    else if (event.type === 'task.assigned' || event.type === 'task.status_changed') await onTask(ctx, event);
    else if (event.type === 'notification.created') await onNotification(ctx, event);
  },

  async onCommand(ctx, cmd) {
    const [verb = '', what = ''] = cmd.args.toLowerCase().split(/\s+/).filter(Boolean);
    if (verb === '') {
      return {
        content: `Your notifications:\n${describe(await loadSettings(ctx, cmd.userId))}\n${USAGE}`,
        ephemeral: true,
      };
    }
    if ((verb !== 'mute' && verb !== 'unmute') || (what !== 'all' && !isKind(what))) {
      return { content: USAGE, ephemeral: true };
    }
    const kinds: Kind[] = what === 'all' ? [...NOTIFICATION_KINDS] : [what as Kind];
    // Compare-and-set on the user's document: two changes at once never lose each other.
    for (let round = 0; ; round++) {
      let version = 0;
      let muted: Kind[] = [];
      try {
        const r = await ctx.call(getBotData, { bot_id: ctx.bot.id, key: settingsKey(cmd.userId) });
        version = r.version;
        muted = ((r.value as Partial<Settings> | null)?.muted ?? []).filter(isKind);
      } catch (e) {
        if (!isAppError(e) || e.code !== 'not_found') throw e;
      }
      const next =
        verb === 'mute' ? [...new Set([...muted, ...kinds])] : muted.filter((k) => !kinds.includes(k));
      try {
        await ctx.call(putBotData, {
          bot_id: ctx.bot.id,
          key: settingsKey(cmd.userId),
          value: { muted: next.sort() },
          if_version: version,
        });
        return { content: `Done. Your notifications:\n${describe({ muted: next })}`, ephemeral: true };
      } catch (e) {
        if (!isAppError(e) || e.code !== 'conflict' || round >= 3) throw e;
      }
    }
  },
};
