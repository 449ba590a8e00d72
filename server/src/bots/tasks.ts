import { AppError } from '../domain/errors.js';
import { TASK_PRIORITIES, TASK_STATUSES, type TaskPriority, type TaskStatus } from '../domain/roles.js';
import { listContainers } from '../operations/containers/list-containers.js';
import { createTask, listTasks, updateTask } from '../operations/tasks/tasks.js';
import { getUser, listUsers } from '../operations/users/users.js';
import type { z } from 'zod';
import type { TaskView as TaskViewSchema } from '../operations/views.js';
import { md, oneLine, shortId, splitArgs } from './format.js';
import type { BotContext, BuiltinBot, CommandInvocation } from './types.js';

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

async function list(ctx: BotContext, cmd: CommandInvocation, filter: string): Promise<string> {
  const f = filter.toLowerCase() || 'all';
  if (f !== 'all' && f !== 'mine' && !(TASK_STATUSES as readonly string[]).includes(f)) {
    throw fail(`/task list takes mine, todo, in_progress, review or done (not ${filter})`);
  }
  let tasks: TaskView[];
  if (!cmd.topicId && f === 'mine') {
    const { topics = [] } = await ctx.callAsUser(cmd.userId, listContainers, { type: 'topics' });
    tasks = [];
    for (const topic of topics.slice(0, MINE_TOPICS)) {
      const r = await ctx.callAsUser(cmd.userId, listTasks, { topic_id: topic.id, assignee_id: cmd.userId });
      tasks.push(...r.items.filter((t) => t.status !== 'done'));
    }
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
  // Everything runs as the invoking user; the bot itself only reads.
  scopes: ['tasks:read'],

  async onCommand(ctx, cmd) {
    const m = /^(\S+)\s*([\s\S]*)$/.exec(cmd.args.trim());
    const sub = m?.[1]?.toLowerCase() ?? '';
    const rest = m?.[2]?.trim() ?? '';
    let content: string;
    if (sub === 'add') content = await add(ctx, cmd, rest);
    else if (sub === 'list' || sub === 'ls') content = await list(ctx, cmd, rest);
    else if (sub === 'done') content = await done(ctx, cmd, rest);
    else content = sub === '' || sub === 'help' ? USAGE : `Unknown subcommand ${md(sub)}.\n${USAGE}`;
    return { content, ephemeral: true };
  },
};
