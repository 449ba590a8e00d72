import { z } from 'zod';
import { AppError, isAppError } from '../../domain/errors.js';
import { cancelJob, scheduleJob } from '../../operations/bots/jobs.js';
import { listContainers } from '../../operations/containers/list-containers.js';
import { addProjectMember, removeProjectMember } from '../../operations/containers/projects.js';
import { listTasks } from '../../operations/tasks/tasks.js';
import type { TaskView } from '../../operations/views.js';
import { BotData } from '../platform-kit/data.js';
import { alreadyDone, effectKey, Names, postOnce } from '../platform-kit/effects.js';
import { followingStart, nextStart } from '../standup/plan.js';
import type { BotContext, BotEvent, BotJob, BuiltinBot, CommandInvocation } from '../types.js';
import {
  jobs,
  keys,
  needsCheck,
  TN_LIMITS,
  type ChannelSubs,
  type ProjectIndex,
  type Sub,
  type TaskEventKind,
} from './model.js';
import { parseTaskNotify, TN_USAGE, type AddArgs } from './parse.js';
import { classify, digestText, eventLine, EVENT_LABEL, listText, type TaskEventLine } from './render.js';

/**
 * The task notifications bot (platform; docs/BUILTIN-BOTS.md "Task notifications bot"). In the channel
 * that should receive them, `/tasknotify add <project>[/<topic>] [events…]` subscribes the channel to
 * the task events of a project or one topic: created, assigned, status changed (posted as they happen,
 * from the events the bot receives as a member of the project), due soon and overdue (a daily check,
 * a scheduler job per subscription, posting one digest).
 *
 * The command runs as the invoking user: the source is found among the projects and topics they can
 * reach, and the bot is added to the project as them (so only where they may add members). Whoever
 * subscribes a channel decides that its members see the project's task titles.
 */

const fail = (message: string) => new AppError('invalid_input', message);
const gone = (e: unknown) => isAppError(e) && (e.code === 'not_found' || e.code === 'forbidden');
const CheckPayload = z.object({
  channel_id: z.string(),
  sub_id: z.string(),
  date: z.string(),
  at: z.string(),
});
const ALL_DAYS = [1, 2, 3, 4, 5, 6, 7];
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function ignoreDone(e: unknown): void {
  if (!alreadyDone(e)) throw e;
}

// --- the daily check chain --------------------------------------------------------------------------

const scheduleOf = (s: Sub) => ({ time: s.at, days: ALL_DAYS, tz: s.tz });

async function recordNext(ctx: BotContext, ch: string, subId: string, next: Sub['next']): Promise<void> {
  await new BotData(ctx).update<ChannelSubs>(keys.channel(ch), (cur) => {
    const s = cur?.subs.find((x) => x.id === subId);
    if (!cur || !s) return undefined;
    if (s.next && next && Date.parse(s.next.at) >= Date.parse(next.at)) return undefined;
    return { subs: cur.subs.map((x) => (x.id === subId ? { ...x, next } : x)) };
  });
}

async function scheduleCheck(ctx: BotContext, ch: string, s: Sub, occ: { date: string; at: string }) {
  const job = await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: jobs.check,
    run_at: occ.at,
    dedupe_key: jobs.checkKey(ch, s.id, occ.date),
    payload: { channel_id: ch, sub_id: s.id, date: occ.date, at: occ.at },
  });
  await recordNext(ctx, ch, s.id, { ...occ, job_id: job.id });
}

/** Arms the daily check of a subscription that needs one and has none coming (new, or the chain broke). */
async function ensureArmed(ctx: BotContext, ch: string, s: Sub): Promise<void> {
  if (!needsCheck(s)) return;
  const now = ctx.now().getTime();
  if (s.next && Date.parse(s.next.at) >= now - 60_000) return;
  await scheduleCheck(ctx, ch, s, nextStart(scheduleOf(s), now));
}

async function checkJob(ctx: BotContext, job: BotJob): Promise<void> {
  const p = CheckPayload.parse(job.payload);
  const data = new BotData(ctx);
  const s = (await data.get<ChannelSubs>(keys.channel(p.channel_id)))?.value.subs.find(
    (x) => x.id === p.sub_id,
  );
  if (!s || !needsCheck(s)) return; // removed since: the chain ends
  await scheduleCheck(ctx, p.channel_id, s, followingStart(scheduleOf(s), p.at, ctx.now().getTime()));

  const dkey = keys.digest(p.channel_id, s.id, p.date);
  let frozen = (await data.get<{ text: string | null }>(dkey))?.value;
  if (!frozen) {
    const topics = await ctx
      .call(listContainers, { type: 'topics', project_id: s.project_id })
      .then((r) => r.topics ?? [])
      .catch((e: unknown) => {
        if (gone(e)) return null; // the bot was removed from the project
        throw e;
      });
    if (topics === null) return;
    const wanted = topics
      .filter((t) => s.topic_id === null || t.id === s.topic_id)
      .slice(0, TN_LIMITS.topicsPerCheck);
    const tasks: (z.infer<typeof TaskView> & { topic: string })[] = [];
    for (const t of wanted) {
      const r = await ctx.call(listTasks, { topic_id: t.id });
      tasks.push(...r.items.map((x) => ({ ...x, topic: t.name })));
    }
    const found = classify(tasks, p.date, s.soon_days, s.events);
    const assignees = [
      ...new Set(
        [...found.overdue, ...found.soon].map((t) => t.assignee_id).filter((x): x is string => x !== null),
      ),
    ];
    const names = await new Names(ctx).users(assignees);
    const link = s.topic_id
      ? ctx.link({ topic_id: s.topic_id })
      : ctx.link({ topic_id: wanted[0]?.id ?? null });
    const text = digestText({ project: s.project_name, topic: s.topic_name, link }, p.date, found, names);
    frozen = (await data.create(dkey, { text })).doc.value;
  }
  if (frozen.text !== null) {
    await postOnce(
      ctx,
      effectKey('tn', 'digest', p.channel_id, s.id, p.date),
      p.channel_id,
      frozen.text,
    ).catch((e: unknown) => {
      if (gone(e))
        ctx.log.info(
          { channel: p.channel_id },
          'task notifications: the bot left the channel; digest not posted',
        );
      else ignoreDone(e);
    });
  }
  // Digests of earlier days are done with.
  for (const old of await data.list(keys.digests(p.channel_id, s.id), 50)) {
    if (old.key < dkey) await data.delete(old.key);
  }
}

// --- commands ---------------------------------------------------------------------------------------

/** The project (and topic) a user names, among those they can reach. */
async function resolveSource(ctx: BotContext, userId: string, a: { project: string; topic: string | null }) {
  const { projects = [] } = await ctx.callAsUser(userId, listContainers, { type: 'projects' });
  const pick = <T extends { id: string; name: string }>(
    items: T[],
    name: string,
    what: string,
    hint: string,
  ): T => {
    const byId = UUID_RE.test(name) ? items.filter((x) => x.id === name.toLowerCase()) : [];
    const hits = byId.length > 0 ? byId : items.filter((x) => x.name.toLowerCase() === name.toLowerCase());
    if (hits.length === 1) return hits[0]!;
    if (hits.length > 1) throw fail(`Several ${what}s are called ${name}; name it by its id`);
    throw new AppError('not_found', `No ${what} called "${name.slice(0, 100)}" that you can reach${hint}`);
  };
  const project = pick(projects, a.project, 'project', ' (quote names with spaces)');
  if (a.topic === null) return { project, topic: null };
  const { topics = [] } = await ctx.callAsUser(userId, listContainers, {
    type: 'topics',
    project_id: project.id,
  });
  return { project, topic: pick(topics, a.topic, 'topic', ` in ${project.name}`) };
}

async function add(ctx: BotContext, cmd: CommandInvocation, ch: string, a: AddArgs): Promise<string> {
  const { project, topic } = await resolveSource(ctx, cmd.userId, a);
  // The bot hears a project's task events as its member: added as the invoking user.
  await ctx.callAsUser(cmd.userId, addProjectMember, { project_id: project.id, bot_id: ctx.bot.id });
  const data = new BotData(ctx);
  const sub: Sub = {
    id: cmd.invocationId.slice(-8), // the random end of a time-ordered UUID
    kind: topic ? 'topic' : 'project',
    project_id: project.id,
    project_name: project.name,
    topic_id: topic?.id ?? null,
    topic_name: topic?.name ?? null,
    events: a.events,
    at: a.at,
    tz: a.tz,
    soon_days: a.soon_days,
    added_by: cmd.userId,
    added_at: ctx.now().toISOString(),
    next: null,
  };
  const same = (s: Pick<Sub, 'project_id' | 'topic_id'>) =>
    s.project_id === sub.project_id && s.topic_id === sub.topic_id;
  let replaced: Sub | null = null;
  let full = false;
  await data.update<ChannelSubs>(keys.channel(ch), (cur) => {
    const subs = cur?.subs ?? [];
    replaced = subs.find(same) ?? null;
    const rest = subs.filter((s) => !same(s) && s.id !== sub.id);
    full = rest.length >= TN_LIMITS.subsPerChannel;
    return full ? undefined : { subs: [...rest, sub] };
  });
  if (full)
    throw fail(`A channel has at most ${TN_LIMITS.subsPerChannel} task subscriptions; remove one first`);
  let tooMany = false;
  await data.update<ProjectIndex>(keys.project(project.id), (cur) => {
    const targets = (cur?.targets ?? []).filter((t) => !(t.channel_id === ch && t.topic_id === sub.topic_id));
    tooMany = targets.length >= TN_LIMITS.targetsPerProject;
    if (tooMany) return undefined;
    return {
      targets: [...targets, { channel_id: ch, sub_id: sub.id, topic_id: sub.topic_id, events: sub.events }],
    };
  });
  if (tooMany) {
    await data.update<ChannelSubs>(keys.channel(ch), (cur) =>
      cur ? { subs: cur.subs.filter((s) => s.id !== sub.id) } : undefined,
    );
    throw fail(`The project is posted to ${TN_LIMITS.targetsPerProject} places already, the most it may be`);
  }
  const old = replaced as Sub | null;
  if (old?.next) await cancelQuietly(ctx, old.next.job_id);
  await ensureArmed(ctx, ch, sub);
  const name = topic ? `topic **${project.name} › ${topic.name}**` : `project **${project.name}**`;
  return `🔔 This channel ${old ? 'now gets' : 'gets'} the task events of ${name}: ${sub.events.map((e) => EVENT_LABEL[e]).join(', ')}${
    needsCheck(sub) ? ` (checked daily at ${sub.at}, ${sub.tz})` : ''
  }.`;
}

async function cancelQuietly(ctx: BotContext, jobId: string): Promise<void> {
  await ctx.call(cancelJob, { bot_id: ctx.bot.id, job_id: jobId }).catch((e: unknown) => {
    if (!isAppError(e)) throw e;
  });
}

async function remove(
  ctx: BotContext,
  cmd: CommandInvocation,
  ch: string,
  target: { index: number } | { project: string; topic: string | null },
): Promise<string> {
  const data = new BotData(ctx);
  const subs = (await data.get<ChannelSubs>(keys.channel(ch)))?.value.subs ?? [];
  let s: Sub | undefined;
  if ('index' in target) {
    s = subs[target.index - 1];
    if (!s)
      throw new AppError('not_found', `There is no subscription ${target.index} (see /tasknotify list)`);
  } else {
    const want = target;
    s = subs.find(
      (x) =>
        x.project_name.toLowerCase() === want.project.toLowerCase() &&
        (want.topic === null
          ? x.topic_id === null
          : x.topic_name?.toLowerCase() === want.topic.toLowerCase()),
    );
    if (!s) throw new AppError('not_found', 'This channel has no such subscription (see /tasknotify list)');
  }
  const sub = s;
  await data.update<ChannelSubs>(keys.channel(ch), (cur) => {
    if (!cur) return undefined;
    const left = cur.subs.filter((x) => x.id !== sub.id);
    return left.length === 0 ? null : { subs: left };
  });
  const index = await data.update<ProjectIndex>(keys.project(sub.project_id), (cur) => {
    if (!cur) return undefined;
    const left = cur.targets.filter((t) => !(t.channel_id === ch && t.sub_id === sub.id));
    return left.length === 0 ? null : { targets: left };
  });
  if (sub.next) await cancelQuietly(ctx, sub.next.job_id);
  if (!index) {
    // Nothing posts this project's events any more: the bot leaves it (best effort, as the user).
    await ctx
      .callAsUser(cmd.userId, removeProjectMember, { project_id: sub.project_id, bot_id: ctx.bot.id })
      .catch((e: unknown) => {
        if (!isAppError(e)) throw e;
      });
  }
  const name = sub.topic_name === null ? sub.project_name : `${sub.project_name} › ${sub.topic_name}`;
  return `🔕 This channel no longer gets the task events of ${name}.`;
}

async function onCommand(ctx: BotContext, cmd: CommandInvocation) {
  const parsed = parseTaskNotify(cmd.args);
  if (parsed.kind === 'help') return { content: TN_USAGE, ephemeral: true };
  const ch = cmd.channelId;
  if (!ch) throw fail('Run /tasknotify in the channel that should receive the task notifications');
  switch (parsed.kind) {
    case 'add':
      return { content: await add(ctx, cmd, ch, parsed.add) };
    case 'list': {
      const subs = (await new BotData(ctx).get<ChannelSubs>(keys.channel(ch)))?.value.subs ?? [];
      for (const s of subs) await ensureArmed(ctx, ch, s);
      return { content: listText(subs), ephemeral: true };
    }
    case 'remove':
      return { content: await remove(ctx, cmd, ch, parsed.target) };
  }
}

// --- task events ------------------------------------------------------------------------------------

const KIND_OF: Record<string, TaskEventKind> = {
  'task.created': 'created',
  'task.assigned': 'assigned',
  'task.status_changed': 'status',
};

const TaskData = z.object({
  topic_id: z.string(),
  actor_type: z.enum(['user', 'bot']),
  actor_id: z.string(),
  task: z.object({
    id: z.string(),
    title: z.string(),
    status: z.string(),
    priority: z.string(),
    assignee_id: z.string().nullable(),
    due_date: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  }),
  assignee_id: z.string().nullable().optional(),
  previous_assignee_id: z.string().nullable().optional(),
  status: z.string().optional(),
  previous_status: z.string().optional(),
});

async function onTaskEvent(ctx: BotContext, event: BotEvent, kind: TaskEventKind): Promise<void> {
  const d = TaskData.parse(event.data);
  const { topics = [], projects = [] } = await ctx.call(listContainers, { type: 'all' });
  const topic = topics.find((t) => t.id === d.topic_id);
  if (!topic) return; // not in a project of the bot (any more)
  const data = new BotData(ctx);
  const targets = (await data.get<ProjectIndex>(keys.project(topic.project_id)))?.value.targets ?? [];
  const assignedAtCreation =
    kind === 'assigned' && !d.previous_assignee_id && d.task.created_at === d.task.updated_at;
  // A daily check whose chain broke (long downtime, the bot was disabled) is armed again.
  for (const ch of new Set(targets.map((t) => t.channel_id))) {
    const subs = (await data.get<ChannelSubs>(keys.channel(ch)))?.value.subs ?? [];
    for (const s of subs) if (s.project_id === topic.project_id) await ensureArmed(ctx, ch, s);
  }
  const channels = new Set<string>();
  for (const t of targets) {
    if (t.topic_id !== null && t.topic_id !== d.topic_id) continue;
    if (!t.events.includes(kind)) continue;
    // A task created with an assignee: the "created" line names the assignee already.
    if (assignedAtCreation && t.events.includes('created')) continue;
    channels.add(t.channel_id);
  }
  if (channels.size === 0) return;
  const names = new Names(ctx);
  const by = d.actor_type === 'user' ? await names.user(d.actor_id) : 'a bot';
  const who = async (id: string | null | undefined) => (id ? names.user(id) : null);
  const line: TaskEventLine =
    kind === 'created'
      ? { kind, task: d.task, assignee: await who(d.task.assignee_id), by }
      : kind === 'assigned'
        ? {
            kind,
            task: d.task,
            assignee: await who(d.assignee_id),
            previous: await who(d.previous_assignee_id),
            by,
          }
        : {
            kind: 'status',
            task: d.task,
            status: d.status ?? d.task.status,
            previous: d.previous_status ?? '?',
            by,
          };
  const project = projects.find((p) => p.id === topic.project_id);
  const text = eventLine(line, {
    project: project?.name ?? 'a project',
    topic: topic.name,
    link: ctx.link({ topic_id: topic.id }),
  });
  for (const ch of channels) {
    await postOnce(ctx, effectKey('tn', 'ev', event.id, ch), ch, text).catch((e: unknown) => {
      if (gone(e)) ctx.log.info({ channel: ch }, 'task notifications: the bot left the channel; not posted');
      else ignoreDone(e);
    });
  }
}

export const taskNotifyBot: BuiltinBot = {
  key: 'task-notify',
  type: 'platform',
  name: 'Task notifications',
  description:
    'Posts the task events of a project or topic (created, assigned, status changed, due soon, overdue) in a channel: /tasknotify add',
  events: ['task.created', 'task.assigned', 'task.status_changed'],
  commands: [
    {
      name: 'tasknotify',
      description: 'Choose which task events of a project or topic are posted in this channel',
      usage:
        '/tasknotify add <project>[/<topic>] [created] [assigned] [status] [due_soon] [overdue] · list · remove <n>',
    },
  ],
  scopes: ['messages:write', 'channels:read', 'tasks:read', 'users:read'],
  onCommand,

  async onEvent(ctx, event) {
    const kind = KIND_OF[event.type];
    if (kind) await onTaskEvent(ctx, event, kind);
  },

  async onJob(ctx, job) {
    if (job.kind === jobs.check) return checkJob(ctx, job);
    ctx.log.warn({ kind: job.kind }, 'task notifications: unknown job kind');
  },
};
