import { AppError, isAppError } from '../domain/errors.js';
import { canonicalTimeZone, localDate, nextOccurrence, parseLocalTime } from '../domain/schedule-time.js';
import { TASK_PRIORITIES, TASK_STATUSES, type TaskPriority, type TaskStatus } from '../domain/roles.js';
import { deleteBotData, getBotData, putBotData } from '../operations/bots/data.js';
import { scheduleJob } from '../operations/bots/jobs.js';
import { listContainers } from '../operations/containers/list-containers.js';
import { sendBotDm } from '../operations/dm/bot-dm.js';
import { createTask, listTasks, updateTask } from '../operations/tasks/tasks.js';
import { getUser, listUsers } from '../operations/users/users.js';
import type { z } from 'zod';
import type { TaskView as TaskViewSchema } from '../operations/views.js';
import { md, oneLine, shortId, splitArgs } from './format.js';
import type { BotContext, BotJob, BuiltinBot, CommandInvocation } from './types.js';

type TaskView = z.infer<typeof TaskViewSchema>;

/**
 * The tasks bot (system): `/task add|list|done` in a topic (tasks live in topics). Every change and
 * every read runs as the invoking user (`callAsUser`), so a task is created by them, in a topic they
 * reach, assigned only to a user of their organization, and listed only where they may look; the
 * answer is shown to them only. A task is referred to by the last characters of its id (the 8 shown
 * by `/task list`; 4 at least, unique in the topic) or by its whole id.
 */

const USAGE = [
  '**/task** — tasks of this topic:',
  '- `/task add <title> [@assignee] [due:YYYY-MM-DD] [!low|!medium|!high|!urgent]` — `@me`, `@email@…` or `@"Display Name"`',
  '- `/task list [mine|todo|in_progress|review|done]` — `mine` also works outside a topic',
  '- `/task remind HH:MM [Area/City] [workdays]` — a DM every morning with your open tasks; `/task remind off`',
  '- `/task done <ref>` — ref: the 8-character reference shown by /task list (the end of the id; 4 characters at least), or the whole id',
].join('\n');

const LIST_SHOWN = 25;
/** `/task list mine` outside a topic looks through at most this many topics. */
const MINE_TOPICS = 100;

const fail = (message: string) => new AppError('invalid_input', message);

/** Resolves `@me`, `@email` or `@Display Name` to a user of the invoking user's organization. */
async function resolveAssignee(ctx: BotContext, userId: string, who: string): Promise<string> {
  const name = who.replace(/^@/, '').trim();
  if (name === '') throw fail('Name the assignee after the @, e.g. @me or @"Ann Lee"');
  if (name.toLowerCase() === 'me') return userId;
  if (name.includes('@')) {
    const u = await ctx.callAsUser(userId, getUser, { email: name }).catch(() => null);
    if (!u) throw fail(`No user with the e-mail ${name} in your organization`);
    return u.id;
  }
  const found = await ctx.callAsUser(userId, listUsers, { q: name, limit: 50 });
  const exact = found.items.filter(
    (u) => u.status === 'active' && u.display_name.toLowerCase() === name.toLowerCase(),
  );
  if (exact.length === 1) return exact[0]!.id;
  if (exact.length > 1)
    throw fail(`Several users are called ${name}; name the assignee by e-mail (@${exact[0]!.email})`);
  throw fail(`No user called ${name} in your organization (quote names with spaces: @"Ann Lee")`);
}

/** `/task add` arguments: title words, one @assignee, due:, !priority. */
export function parseAdd(args: string): {
  title: string;
  assignee?: string;
  due?: string;
  priority?: TaskPriority;
} {
  const out: { title: string; assignee?: string; due?: string; priority?: TaskPriority } = { title: '' };
  const title: string[] = [];
  // @"Display Name" is one token; splitArgs drops quotes, so find it first.
  const quoted = /(^|\s)@"([^"]+)"/.exec(args);
  let rest = args;
  if (quoted) {
    out.assignee = quoted[2]!;
    rest = args.replace(quoted[0], ' ');
  }
  for (const t of splitArgs(rest)) {
    const due = /^due:(.*)$/i.exec(t);
    if (due) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(due[1]!))
        throw fail(`due: must be a date as YYYY-MM-DD (not ${due[1]})`);
      out.due = due[1]!;
    } else if (t.startsWith('!') && t.length > 1) {
      const p = t.slice(1).toLowerCase();
      if (!(TASK_PRIORITIES as readonly string[]).includes(p))
        throw fail(`!${p}: the priority is one of !low, !medium, !high, !urgent`);
      out.priority = p as TaskPriority;
    } else if (t.startsWith('@') && t.length > 1) {
      if (out.assignee !== undefined) throw fail('Name one assignee only');
      out.assignee = t.slice(1);
    } else title.push(t);
  }
  out.title = title.join(' ').trim();
  if (out.title === '') throw fail('Give the task a title: /task add <title> …');
  return out;
}

function taskLine(t: TaskView, names: Map<string, string>): string {
  const who = t.assignee_id ? ` · @${md(names.get(t.assignee_id) ?? 'someone')}` : '';
  return `- \`${shortId(t.id)}\` ${md(oneLine(t.title, 120))} · ${t.status} · ${t.priority}${who}${t.due_date ? ` · due ${t.due_date}` : ''}`;
}

async function assigneeNames(ctx: BotContext, userId: string, tasks: TaskView[]) {
  const names = new Map<string, string>();
  for (const id of new Set(tasks.map((t) => t.assignee_id).filter((x): x is string => x !== null))) {
    const u = await ctx.callAsUser(userId, getUser, { user_id: id }).catch(() => null);
    names.set(id, u?.display_name ?? 'someone');
  }
  return names;
}

function needTopic(cmd: CommandInvocation): string {
  if (!cmd.topicId) throw fail('Tasks live in topics: run /task in a topic');
  return cmd.topicId;
}

async function add(ctx: BotContext, cmd: CommandInvocation, args: string): Promise<string> {
  const topicId = needTopic(cmd);
  const a = parseAdd(args);
  const assignee = a.assignee ? await resolveAssignee(ctx, cmd.userId, a.assignee) : undefined;
  const t = await ctx.callAsUser(
    cmd.userId,
    createTask,
    {
      topic_id: topicId,
      title: a.title,
      ...(assignee && { assignee_id: assignee }),
      ...(a.due && { due_date: a.due }),
      ...(a.priority && { priority: a.priority }),
    },
    { idempotencyKey: `task-add:${cmd.invocationId}` },
  );
  const names = await assigneeNames(ctx, cmd.userId, [t]);
  return `✅ Task created\n${taskLine(t, names)}`;
}

/** The open tasks assigned to `userId`, across the topics they reach (at most MINE_TOPICS topics). */
async function openTasksOf(ctx: BotContext, userId: string): Promise<TaskView[]> {
  const { topics = [] } = await ctx.callAsUser(userId, listContainers, { type: 'topics' });
  const tasks: TaskView[] = [];
  for (const topic of topics.slice(0, MINE_TOPICS)) {
    const r = await ctx.callAsUser(userId, listTasks, { topic_id: topic.id, assignee_id: userId });
    tasks.push(...r.items.filter((t) => t.status !== 'done'));
  }
  return tasks;
}

async function list(ctx: BotContext, cmd: CommandInvocation, filter: string): Promise<string> {
  const f = filter.toLowerCase() || 'all';
  if (f !== 'all' && f !== 'mine' && !(TASK_STATUSES as readonly string[]).includes(f)) {
    throw fail(`/task list takes mine, todo, in_progress, review or done (not ${filter})`);
  }
  let tasks: TaskView[];
  if (!cmd.topicId && f === 'mine') {
    tasks = await openTasksOf(ctx, cmd.userId);
  } else {
    const topicId = needTopic(cmd);
    const r = await ctx.callAsUser(cmd.userId, listTasks, {
      topic_id: topicId,
      ...(f === 'mine' ? { assignee_id: cmd.userId } : f !== 'all' ? { status: f as TaskStatus } : {}),
    });
    tasks = r.items;
  }
  const heading = f === 'all' ? 'Tasks of this topic' : f === 'mine' ? 'Your tasks' : `Tasks ${f}`;
  if (tasks.length === 0) return `${heading}: none.`;
  const names = await assigneeNames(ctx, cmd.userId, tasks.slice(0, LIST_SHOWN));
  const more = tasks.length > LIST_SHOWN ? `\n…and ${tasks.length - LIST_SHOWN} more` : '';
  return (
    [`**${heading}** (${tasks.length})`, ...tasks.slice(0, LIST_SHOWN).map((t) => taskLine(t, names))].join(
      '\n',
    ) + more
  );
}

/**
 * The task of this topic that `ref` names: the end of its id (the 8 characters /task list shows; 4 at
 * least) or the whole id.
 */
async function findTask(ctx: BotContext, cmd: CommandInvocation, ref: string): Promise<TaskView> {
  const topicId = needTopic(cmd);
  const r = ref.replace(/^#/, '').replace(/`/g, '').toLowerCase();
  if (!/^[0-9a-f-]{4,36}$/.test(r))
    throw fail('Name the task by its id as /task list shows it, e.g. /task done 1a2b3c4d');
  const all = await ctx.callAsUser(cmd.userId, listTasks, { topic_id: topicId });
  const hits = all.items.filter((t) => t.id.endsWith(r));
  if (hits.length === 0) throw new AppError('not_found', `No task ${r} in this topic`);
  if (hits.length > 1) throw fail(`${r} names ${hits.length} tasks here; give more characters of the id`);
  return hits[0]!;
}

async function done(ctx: BotContext, cmd: CommandInvocation, ref: string): Promise<string> {
  if (ref.trim() === '') throw fail('Which task? /task done <ref>');
  const t = await findTask(ctx, cmd, ref.trim());
  if (t.status === 'done') return `Task \`${shortId(t.id)}\` was already done.`;
  const updated = await ctx.callAsUser(cmd.userId, updateTask, { task_id: t.id, status: 'done' });
  return `✅ Done: \`${shortId(updated.id)}\` ${md(oneLine(updated.title, 120))}`;
}

// --- the morning reminder (scheduler/) ---

/**
 * A user's reminder: a DM at `time` in `zone` (every day, or Monday to Friday) listing their open
 * tasks. Kept as the bot's data `remind:<user>`; one job per occurrence (dedupe key: user and local
 * date), each scheduling the next. A job whose settings changed or were removed meanwhile does nothing.
 * Users have no time zone of their own in Workroom, so the command names it (default UTC).
 */
interface Reminder {
  user_id: string;
  time: string;
  zone: string;
  workdays: boolean;
}
const REMIND_KIND = 'morning';
const remindKey = (userId: string) => `remind:${userId}`;

async function scheduleReminder(ctx: BotContext, r: Reminder, after: Date): Promise<string> {
  const at = nextOccurrence(
    { time: r.time, timeZone: r.zone, ...(r.workdays && { weekdays: [1, 2, 3, 4, 5] }) },
    after,
  );
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: REMIND_KIND,
    payload: { ...r },
    run_at: at.toISOString(),
    dedupe_key: `morning:${r.user_id}:${localDate(at, r.zone)}:${r.time}`,
  });
  return at.toISOString();
}

async function loadReminder(ctx: BotContext, userId: string): Promise<Reminder | null> {
  try {
    return (await ctx.call(getBotData, { bot_id: ctx.bot.id, key: remindKey(userId) })).value as Reminder;
  } catch (e) {
    if (isAppError(e) && e.code === 'not_found') return null;
    throw e;
  }
}

async function remind(ctx: BotContext, cmd: CommandInvocation, args: string): Promise<string> {
  const words = args.split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    const r = await loadReminder(ctx, cmd.userId);
    return r
      ? `Your morning reminder: ${r.time} ${r.zone}${r.workdays ? ', Monday to Friday' : ', every day'}. \`/task remind off\` stops it.`
      : 'No morning reminder. `/task remind 08:30 Europe/Berlin` sets one.';
  }
  if (words[0]!.toLowerCase() === 'off') {
    await ctx.call(deleteBotData, { bot_id: ctx.bot.id, key: remindKey(cmd.userId) }).catch((e: unknown) => {
      if (!isAppError(e) || e.code !== 'not_found') throw e;
    });
    return 'Morning reminder off.';
  }
  const [time, ...rest] = words;
  if (!parseLocalTime(time!)) throw fail(`${time}: the time is HH:MM in 24-hour form, e.g. 08:30`);
  let zone = 'UTC';
  let workdays = false;
  for (const w of rest) {
    if (w.toLowerCase() === 'workdays') workdays = true;
    else {
      const z = canonicalTimeZone(w);
      if (!z) throw fail(`${w}: not a time zone (an IANA name such as Europe/Berlin)`);
      zone = z;
    }
  }
  const r: Reminder = { user_id: cmd.userId, time: time!, zone, workdays };
  await ctx.call(putBotData, { bot_id: ctx.bot.id, key: remindKey(cmd.userId), value: r });
  const first = await scheduleReminder(ctx, r, ctx.now());
  return `⏰ Every ${workdays ? 'workday' : 'day'} at ${r.time} (${zone}) I will DM you your open tasks; the first at ${first}.`;
}

async function morningJob(ctx: BotContext, job: BotJob): Promise<void> {
  const p = job.payload as Partial<Reminder>;
  if (typeof p.user_id !== 'string') return;
  const r = await loadReminder(ctx, p.user_id);
  // Changed or switched off since this occurrence was scheduled: its own chain ends here.
  if (!r || r.time !== p.time || r.zone !== p.zone || r.workdays !== p.workdays) return;
  let tasks: TaskView[];
  try {
    tasks = await openTasksOf(ctx, r.user_id);
  } catch (e) {
    // The user was deactivated or removed: no more reminders.
    if (isAppError(e) && (e.code === 'forbidden' || e.code === 'not_found')) return;
    throw e;
  }
  if (tasks.length > 0) {
    const names = await assigneeNames(ctx, r.user_id, tasks.slice(0, LIST_SHOWN));
    const more = tasks.length > LIST_SHOWN ? `\n…and ${tasks.length - LIST_SHOWN} more` : '';
    const text = [
      `☀️ Good morning! Your open tasks (${tasks.length}):`,
      ...tasks.slice(0, LIST_SHOWN).map((t) => taskLine(t, names)),
    ].join('\n');
    try {
      // Once per job, whatever the attempt (the text is the same unless tasks changed in between).
      await ctx.call(
        sendBotDm,
        { bot_id: ctx.bot.id, user_id: r.user_id, content: text + more },
        { idempotencyKey: `job:${job.id}:dm` },
      );
    } catch (e) {
      if (!isAppError(e) || e.code !== 'idempotency_conflict') throw e;
    }
  }
  // The next occurrence: after this one's due time, so a late or retried run does not skip a day.
  await scheduleReminder(ctx, r, new Date(Date.parse(job.runAt) + 60_000));
}

export const tasksBot: BuiltinBot = {
  key: 'tasks',
  type: 'system',
  name: 'Tasks',
  description: 'Adds, lists and completes the tasks of a topic: /task add|list|done',
  events: [],
  commands: [
    {
      name: 'task',
      description: 'Add, list or complete tasks of this topic (answer shown to you only)',
      usage:
        '/task add <title> [@assignee] [due:YYYY-MM-DD] [!priority] · /task list [mine|<status>] · /task done <ref>',
    },
  ],
  // Everything runs as the invoking user; the bot itself DMs the morning reminder.
  scopes: ['messages:write', 'tasks:read'],

  async onCommand(ctx, cmd) {
    const m = /^(\S+)\s*([\s\S]*)$/.exec(cmd.args.trim());
    const sub = m?.[1]?.toLowerCase() ?? '';
    const rest = m?.[2]?.trim() ?? '';
    let content: string;
    if (sub === 'add') content = await add(ctx, cmd, rest);
    else if (sub === 'list' || sub === 'ls') content = await list(ctx, cmd, rest);
    else if (sub === 'done') content = await done(ctx, cmd, rest);
    else if (sub === 'remind') content = await remind(ctx, cmd, rest);
    else content = sub === '' || sub === 'help' ? USAGE : `Unknown subcommand ${md(sub)}.\n${USAGE}`;
    return { content, ephemeral: true };
  },

  async onJob(ctx, job) {
    if (job.kind === REMIND_KIND) await morningJob(ctx, job);
    else ctx.log.warn({ kind: job.kind }, 'tasks bot: unknown job kind');
  },
};
