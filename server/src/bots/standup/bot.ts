import { z } from 'zod';
import { AppError, isAppError } from '../../domain/errors.js';
import { cancelJob, scheduleJob } from '../../operations/bots/jobs.js';
import { getChannel, listChannelMembers } from '../../operations/containers/channels.js';
import { getUser } from '../../operations/users/users.js';
import { jobStepKey } from '../../scheduler/run-as-bot.js';
import { BotData } from '../platform-kit/data.js';
import { alreadyDone, dmOnce, effectKey, Names, postOnce } from '../platform-kit/effects.js';
import { addDays, formatInstant, todayIn } from '../platform-kit/time.js';
import { cut, cutBytes } from '../platform-kit/text.js';
import type { BotContext, BotEvent, BotJob, BuiltinBot, CommandInvocation } from '../types.js';
import {
  jobs,
  keys,
  RUNS_KEPT,
  STANDUP_LIMITS,
  type Participant,
  type Queue,
  type QueueEntry,
  type StandupConfig,
  type StandupRun,
} from './model.js';
import { parseStandup, resolveDate, STANDUP_USAGE, type SetupArgs } from './parse.js';
import { followingStart, futureSkips, heldOn, nextStart, runTimes, type Occurrence } from './plan.js';
import {
  askText,
  cutText,
  IDLE_TEXT,
  lateText,
  reminderText,
  showText,
  summaryText,
  thanksText,
  waitText,
} from './render.js';

/**
 * The stand-up bot (platform; docs/BUILTIN-BOTS.md "Stand-up bot"). Set up per channel with
 * `/standup setup`; at the time, every user member of the channel gets the questions by DM, one at a
 * time; their DM replies are the answers, in order; a reminder goes to those who have not finished
 * before the summary; one summary message is posted in the channel, naming who has not answered.
 *
 * Scheduling: a channel's stand-ups are a chain of scheduler jobs. Only the next start is scheduled
 * (dedupe key channel + local date + set-up generation); a start schedules the following one, then
 * the reminder and summary of its own date (one each per channel and date). The occurrence document
 * of a date is created once (compare-and-set), so a date never has two stand-ups, whatever runs twice.
 * Every message carries an idempotency key naming it (question k of a date to a member, the summary
 * of a job…), so a job re-run after a crash (SIGKILL while it sends) sends nothing twice.
 */

const fail = (message: string) => new AppError('invalid_input', message);

const StartPayload = z.object({
  channel_id: z.string(),
  date: z.string(),
  at: z.string(),
  gen: z.number(),
});
const RunPayload = z.object({ channel_id: z.string(), date: z.string() });

// --- arming the chain -------------------------------------------------------------------------------

async function cancelQuietly(ctx: BotContext, jobId: string | undefined): Promise<void> {
  if (!jobId) return;
  try {
    await ctx.call(cancelJob, { bot_id: ctx.bot.id, job_id: jobId });
  } catch (e) {
    // Already running, done or gone: its generation is stale, so it does nothing when it runs.
    if (!isAppError(e)) throw e;
  }
}

/** Schedules a start (idempotent: one job per channel, date and generation). */
async function scheduleStart(ctx: BotContext, c: StandupConfig, occ: Occurrence): Promise<string> {
  const job = await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: jobs.start,
    run_at: occ.at,
    dedupe_key: jobs.startKey(c.channel_id, occ.date, c.gen),
    payload: { channel_id: c.channel_id, date: occ.date, at: occ.at, gen: c.gen },
  });
  return job.id;
}

/** Records the scheduled next start in the set-up, if it is still of that generation. */
async function recordNext(ctx: BotContext, ch: string, gen: number, next: StandupConfig['next']) {
  await new BotData(ctx).update<StandupConfig>(keys.config(ch), (c) => {
    if (!c || c.gen !== gen) return undefined;
    if (c.next && next && Date.parse(c.next.at) > Date.parse(next.at)) return undefined; // a later one is recorded
    return { ...c, next };
  });
}

/** Schedules the next start of a set-up from now (a new set-up, a resume, or a chain that broke). */
async function arm(ctx: BotContext, c: StandupConfig): Promise<void> {
  if (c.paused) return;
  const occ = nextStart(c, ctx.now().getTime());
  const jobId = await scheduleStart(ctx, c, occ);
  await recordNext(ctx, c.channel_id, c.gen, { ...occ, job_id: jobId });
}

/**
 * A chain breaks when its start could not run: the server was down longer than the scheduler's grace
 * period, or the bot was disabled when it was due. Any command in the channel (and any message there)
 * arms it again.
 */
function chainBroken(c: StandupConfig, now: number): boolean {
  return !c.paused && (c.next === null || Date.parse(c.next.at) < now - 60_000);
}

async function ensureArmed(ctx: BotContext, ch: string): Promise<void> {
  const doc = await new BotData(ctx).get<StandupConfig>(keys.config(ch));
  if (doc && chainBroken(doc.value, ctx.now().getTime())) await arm(ctx, doc.value);
}

// --- commands ---------------------------------------------------------------------------------------

async function setup(ctx: BotContext, cmd: CommandInvocation, ch: string, s: SetupArgs): Promise<string> {
  const data = new BotData(ctx);
  const now = ctx.now();
  let old: StandupConfig | null = null;
  const c = (await data.update<StandupConfig>(keys.config(ch), (cur) => {
    old = cur;
    return {
      channel_id: ch,
      time: s.time,
      days: s.days,
      tz: s.tz,
      questions: s.questions,
      window_ms: s.window_ms!,
      remind_ms: s.remind_ms,
      paused: false,
      skip: futureSkips(cur?.skip ?? [], todayIn(s.tz, now)),
      gen: (cur?.gen ?? 0) + 1,
      created_by: cur?.created_by ?? cmd.userId,
      updated_by: cmd.userId,
      updated_at: now.toISOString(),
      next: null,
      last_date: cur?.last_date ?? null,
    };
  }))!;
  await cancelQuietly(ctx, (old as StandupConfig | null)?.next?.job_id);
  await arm(ctx, c);
  const next = nextHeld(c, now.getTime());
  return [
    `✅ Stand-up ${old ? 'updated' : 'set up'} for this channel.`,
    showText(c, next ? formatInstant(next.at, c.tz) : null, null)
      .split('\n')
      .slice(1)
      .join('\n'),
  ].join('\n');
}

/** The next occurrence that will be held (skip dates passed over), within 60 occurrences. */
function nextHeld(c: StandupConfig, after: number): Occurrence | null {
  if (c.paused) return null;
  let occ = nextStart(c, after);
  for (let i = 0; i < 60 && !heldOn(c, occ.date); i++) occ = nextStart(c, Date.parse(occ.at));
  return heldOn(c, occ.date) ? occ : null;
}

async function requireConfig(ctx: BotContext, ch: string): Promise<StandupConfig> {
  const doc = await new BotData(ctx).get<StandupConfig>(keys.config(ch));
  if (!doc)
    throw fail('No stand-up is set up in this channel: /standup setup 09:30 mon-fri Europe/Berlin "…"');
  return doc.value;
}

async function show(ctx: BotContext, ch: string): Promise<string> {
  const data = new BotData(ctx);
  const c = (await data.get<StandupConfig>(keys.config(ch)))?.value ?? null;
  if (c && chainBroken(c, ctx.now().getTime())) await arm(ctx, c);
  const runs = c ? await data.list<StandupRun>(keys.runs(ch), 100) : [];
  const last = runs.length > 0 ? runs[runs.length - 1]!.value : null;
  const next = c ? nextHeld(c, ctx.now().getTime()) : null;
  return showText(c, next ? formatInstant(next.at, c!.tz) : null, last);
}

async function setSkip(
  ctx: BotContext,
  cmd: CommandInvocation,
  ch: string,
  add: boolean,
  arg: Parameters<typeof resolveDate>[0],
) {
  const c = await requireConfig(ctx, ch);
  const today = todayIn(c.tz, ctx.now());
  const date = resolveDate(arg, today);
  if (add && date < today) throw fail(`${date} has passed (today is ${today} in ${c.tz})`);
  if (add && date > addDays(today, 366)) throw fail('Skip dates may be at most a year ahead');
  let tooMany = false;
  await new BotData(ctx).update<StandupConfig>(keys.config(ch), (cur) => {
    if (!cur) return undefined;
    const skip = futureSkips(cur.skip, today).filter((d) => d !== date);
    if (add) {
      if (skip.length >= STANDUP_LIMITS.skipDates) {
        tooMany = true;
        return undefined;
      }
      skip.push(date);
    }
    return { ...cur, skip: skip.sort(), updated_by: cmd.userId, updated_at: ctx.now().toISOString() };
  });
  if (tooMany)
    throw fail(`At most ${STANDUP_LIMITS.skipDates} skip dates; remove one with /standup unskip <date>`);
  await ensureArmed(ctx, ch);
  return add
    ? `⏭ No stand-up on ${date} in this channel.`
    : `The stand-up on ${date} is held again (if it falls on a stand-up day).`;
}

async function pauseResume(ctx: BotContext, cmd: CommandInvocation, ch: string, pause: boolean) {
  const c0 = await requireConfig(ctx, ch);
  if (c0.paused === pause) return pause ? 'The stand-up is paused already.' : 'The stand-up is not paused.';
  const c = (await new BotData(ctx).update<StandupConfig>(keys.config(ch), (cur) =>
    cur
      ? {
          ...cur,
          paused: pause,
          gen: cur.gen + 1,
          next: null,
          updated_by: cmd.userId,
          updated_at: ctx.now().toISOString(),
        }
      : undefined,
  ))!;
  await cancelQuietly(ctx, c0.next?.job_id);
  if (pause) return '⏸ Stand-up paused in this channel; `/standup resume` starts it again.';
  await arm(ctx, c);
  const next = nextHeld(c, ctx.now().getTime());
  return `▶️ Stand-up resumed; next: ${next ? formatInstant(next.at, c.tz) : 'none'}.`;
}

async function remove(ctx: BotContext, ch: string): Promise<string> {
  const c = await requireConfig(ctx, ch);
  await new BotData(ctx).delete(keys.config(ch));
  await cancelQuietly(ctx, c.next?.job_id);
  return '🗑 Stand-up removed from this channel (a stand-up in progress still gets its summary).';
}

async function onCommand(ctx: BotContext, cmd: CommandInvocation) {
  const parsed = parseStandup(cmd.args);
  if (parsed.kind === 'help') return { content: STANDUP_USAGE, ephemeral: true };
  const ch = cmd.channelId;
  if (!ch) throw fail('A stand-up belongs to a channel: run /standup in the channel whose members take part');
  switch (parsed.kind) {
    case 'setup':
      return { content: await setup(ctx, cmd, ch, parsed.setup) };
    case 'show':
      return { content: await show(ctx, ch), ephemeral: true };
    case 'skip':
    case 'unskip':
      return { content: await setSkip(ctx, cmd, ch, parsed.kind === 'skip', parsed.date) };
    case 'pause':
    case 'resume':
      return { content: await pauseResume(ctx, cmd, ch, parsed.kind === 'pause') };
    case 'remove':
      return { content: await remove(ctx, ch) };
  }
}

// --- asking -----------------------------------------------------------------------------------------

const askKey = (run: QueueEntry, user: string, k: number) =>
  effectKey('su', 'ask', run.channel_id, run.date, user, String(k));

/** Asks the member the next question of a stand-up they have not finished (once per question). */
async function askNext(ctx: BotContext, run: StandupRun, user: string): Promise<void> {
  const p = (await new BotData(ctx).get<Participant>(keys.participant(run.channel_id, run.date, user)))
    ?.value;
  if (!p || p.closed) return;
  const k = p.answers.length;
  if (k >= run.questions.length) return;
  await dmOnce(ctx, askKey(run, user, k), user, askText(run, k));
}

const sameEntry = (a: QueueEntry, b: QueueEntry) => a.channel_id === b.channel_id && a.date === b.date;

/** Takes a stand-up out of a member's queue; answers the new head when the removed one was the head. */
async function dequeue(ctx: BotContext, user: string, entry: QueueEntry): Promise<QueueEntry | null> {
  let wasHead = false;
  const q = await new BotData(ctx).update<Queue>(keys.queue(user), (cur) => {
    if (!cur || !cur.runs.some((r) => sameEntry(r, entry))) return undefined;
    wasHead = sameEntry(cur.runs[0]!, entry);
    const runs = cur.runs.filter((r) => !sameEntry(r, entry));
    return runs.length === 0 ? null : { runs };
  });
  return wasHead && q && q.runs.length > 0 ? q.runs[0]! : null;
}

/** Asks the next stand-up in a member's queue, passing over those that closed meanwhile. */
async function askHead(ctx: BotContext, user: string, head: QueueEntry | null): Promise<void> {
  for (let i = 0; head && i < STANDUP_LIMITS.queue; i++) {
    const run = (await new BotData(ctx).get<StandupRun>(keys.run(head.channel_id, head.date)))?.value;
    if (run && run.state === 'open') {
      await askNext(ctx, run, user);
      return;
    }
    head = await dequeue(ctx, user, head);
  }
}

// --- jobs -------------------------------------------------------------------------------------------

async function startJob(ctx: BotContext, job: BotJob): Promise<void> {
  const p = StartPayload.parse(job.payload);
  const data = new BotData(ctx);
  const c = (await data.get<StandupConfig>(keys.config(p.channel_id)))?.value;
  // Removed, paused or set up again since this was scheduled: the new set-up has its own chain.
  if (!c || c.gen !== p.gen) return;
  const now = ctx.now().getTime();
  // 1. The chain: the following start (the same one on every re-run of this job).
  const following = followingStart(c, p.at, now);
  const jobId = await scheduleStart(ctx, c, following);
  await recordNext(ctx, c.channel_id, c.gen, { ...following, job_id: jobId });
  if (!heldOn(c, p.date)) return;

  // 2. The occurrence of this date, once (a second start of the same date joins the first).
  let run = (await data.get<StandupRun>(keys.run(p.channel_id, p.date)))?.value;
  if (!run) {
    const channel = await ctx.call(getChannel, { channel_id: p.channel_id }).catch((e: unknown) => {
      if (isAppError(e) && (e.code === 'not_found' || e.code === 'forbidden')) return null;
      throw e;
    });
    if (!channel) {
      ctx.log.info({ channel: p.channel_id }, 'stand-up: the bot is no longer in the channel; not held');
      return;
    }
    const members = await ctx.call(listChannelMembers, { channel_id: p.channel_id });
    const users: string[] = [];
    for (const m of members.items) {
      if (m.member_type !== 'user') continue;
      const u = await ctx.call(getUser, { user_id: m.member_id }).catch(() => null);
      if (u?.status === 'active') users.push(u.id);
    }
    const times = runTimes(p.at, now, c.window_ms, c.remind_ms);
    const fresh: StandupRun = {
      channel_id: p.channel_id,
      channel_name: channel.name,
      date: p.date,
      tz: c.tz,
      questions: c.questions,
      planned_at: p.at,
      ...times,
      participants: users.slice(0, STANDUP_LIMITS.participants),
      left_out: Math.max(0, users.length - STANDUP_LIMITS.participants),
      state: 'open',
      summary_message_id: null,
    };
    run = (await data.create(keys.run(p.channel_id, p.date), fresh)).doc.value;
    await data.update<StandupConfig>(keys.config(p.channel_id), (cur) =>
      cur && cur.last_date !== p.date ? { ...cur, last_date: p.date } : undefined,
    );
  }
  if (run.state !== 'open') return;

  // 3. Its reminder and summary (one job each per channel and date).
  const entry = { channel_id: run.channel_id, date: run.date };
  if (run.remind_at) {
    await ctx.call(scheduleJob, {
      bot_id: ctx.bot.id,
      kind: jobs.remind,
      run_at: laterOf(run.remind_at, now),
      dedupe_key: jobs.remindKey(run.channel_id, run.date),
      payload: entry,
    });
  }
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: jobs.summary,
    run_at: laterOf(run.summary_at, now),
    dedupe_key: jobs.summaryKey(run.channel_id, run.date),
    payload: entry,
  });

  // 4. Every member: their answer sheet, their queue, and the first question (or a note to wait).
  for (const user of run.participants) {
    await data.create<Participant>(keys.participant(run.channel_id, run.date, user), {
      user_id: user,
      answers: [],
      closed: false,
    });
    const q = await data.update<Queue>(keys.queue(user), (cur) => {
      const runs = cur?.runs ?? [];
      if (runs.some((r) => sameEntry(r, entry)) || runs.length >= STANDUP_LIMITS.queue) return undefined;
      return { runs: [...runs, entry] };
    });
    const head = q?.runs[0];
    if (!head || !q.runs.some((r) => sameEntry(r, entry))) continue; // queue full: not asked
    if (sameEntry(head, entry)) await askNext(ctx, run, user);
    else
      await dmOnce(ctx, effectKey('su', 'wait', run.channel_id, run.date, user), user, waitText(run)).catch(
        ignoreDone,
      );
  }
}

/** A job may not be scheduled in the past (more than a minute): a late run schedules for now. */
const laterOf = (iso: string, now: number) => new Date(Math.max(Date.parse(iso), now)).toISOString();

function ignoreDone(e: unknown): void {
  if (!alreadyDone(e)) throw e;
}

async function remindJob(ctx: BotContext, job: BotJob): Promise<void> {
  const p = RunPayload.parse(job.payload);
  const data = new BotData(ctx);
  const run = (await data.get<StandupRun>(keys.run(p.channel_id, p.date)))?.value;
  if (!run || run.state !== 'open') return;
  for (const user of run.participants) {
    const part = (await data.get<Participant>(keys.participant(run.channel_id, run.date, user)))?.value;
    if (!part || part.closed || part.answers.length >= run.questions.length) continue;
    await dmOnce(ctx, jobStepKey(job.id, `remind:${user}`), user, reminderText(run)).catch(ignoreDone);
  }
}

async function summaryJob(ctx: BotContext, job: BotJob): Promise<void> {
  const p = RunPayload.parse(job.payload);
  const data = new BotData(ctx);
  const runKey = keys.run(p.channel_id, p.date);
  let run = (await data.get<StandupRun>(runKey))?.value;
  if (!run) return;
  if (run.state === 'open') {
    // Close every answer sheet first (compare-and-set against a reply being recorded), then freeze
    // the summary text: whatever happens later, this is the text that is posted.
    for (const user of run.participants) {
      await data.update<Participant>(keys.participant(run.channel_id, run.date, user), (cur) =>
        cur?.closed ? undefined : { user_id: user, answers: cur?.answers ?? [], closed: true },
      );
    }
    run = (await data.update<StandupRun>(runKey, (cur) =>
      cur && cur.state === 'open' ? { ...cur, state: 'closed' } : undefined,
    ))!;
  }
  if (run.state === 'closed') {
    let text = (await data.get<{ text: string }>(keys.summary(run.channel_id, run.date)))?.value.text;
    if (text === undefined) {
      const sheets = await data.list<Participant>(
        keys.participants(run.channel_id, run.date),
        STANDUP_LIMITS.participants + 10,
      );
      const answers = new Map(sheets.map((s) => [s.value.user_id, s.value]));
      const names = await new Names(ctx).users(run.participants);
      text = (
        await data.create(keys.summary(run.channel_id, run.date), { text: summaryText(run, answers, names) })
      ).doc.value.text;
    }
    let messageId: string | null = null;
    try {
      messageId = (await postOnce(ctx, jobStepKey(job.id, 'summary'), run.channel_id, text)).id;
    } catch (e) {
      // The bot was removed from the channel, or the channel is gone: nobody to post to.
      if (!(isAppError(e) && (e.code === 'not_found' || e.code === 'forbidden'))) throw e;
      ctx.log.info({ channel: run.channel_id, err: e.message }, 'stand-up: summary not posted');
    }
    run = (await data.update<StandupRun>(runKey, (cur) =>
      cur && cur.state === 'closed' ? { ...cur, state: 'posted', summary_message_id: messageId } : undefined,
    ))!;
  }
  // Posted: out of every queue (the next stand-up waiting for a member is asked), then clean up.
  const entry = { channel_id: run.channel_id, date: run.date };
  for (const user of run.participants) await askHead(ctx, user, await dequeue(ctx, user, entry));
  for (const user of run.participants) await data.delete(keys.participant(run.channel_id, run.date, user));
  await data.delete(keys.summary(run.channel_id, run.date));
  const runs = await data.list<StandupRun>(keys.runs(run.channel_id), 200);
  for (const old of runs.slice(0, Math.max(0, runs.length - RUNS_KEPT))) await data.delete(old.key);
}

// --- replies in the DM ------------------------------------------------------------------------------

async function onDm(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  const user = String(d.sender_id);
  const messageId = String(d.message_id);
  const content = typeof d.content === 'string' ? d.content : '';
  const data = new BotData(ctx);
  for (let i = 0; i < STANDUP_LIMITS.queue; i++) {
    const q = (await data.get<Queue>(keys.queue(user)))?.value;
    const head = q?.runs[0];
    if (!head) {
      await dmOnce(ctx, effectKey('su', 'idle', messageId), user, IDLE_TEXT).catch(ignoreDone);
      return;
    }
    const run = (await data.get<StandupRun>(keys.run(head.channel_id, head.date)))?.value;
    if (!run || run.state !== 'open') {
      // Closed while the member was answering: this reply was meant for it.
      if (run)
        await dmOnce(ctx, effectKey('su', 'late', messageId), user, lateText(run.channel_name)).catch(
          ignoreDone,
        );
      await askHead(ctx, user, await dequeue(ctx, user, head));
      return;
    }
    let outcome = 'added' as 'added' | 'again' | 'late' | 'complete';
    const text = cutBytes(cut(content, STANDUP_LIMITS.answerChars), STANDUP_LIMITS.answerBytes);
    const sheet = await data.update<Participant>(keys.participant(run.channel_id, run.date, user), (cur) => {
      if (!cur || cur.closed) {
        outcome = 'late';
        return undefined;
      }
      if (cur.answers.some((a) => a.message_id === messageId)) {
        outcome = 'again'; // a repeated delivery of the same reply
        return undefined;
      }
      if (cur.answers.length >= run.questions.length) {
        outcome = 'complete';
        return undefined;
      }
      outcome = 'added';
      return { ...cur, answers: [...cur.answers, { text, message_id: messageId, at: event.timestamp }] };
    });
    if (outcome === 'late') {
      await dmOnce(ctx, effectKey('su', 'late', messageId), user, lateText(run.channel_name)).catch(
        ignoreDone,
      );
      await askHead(ctx, user, await dequeue(ctx, user, head));
      return;
    }
    if (outcome === 'complete') {
      // Finished already (a crash came before it left the queue): the reply is for the next one.
      await dequeue(ctx, user, head);
      continue;
    }
    if (outcome === 'added' && text.length < content.length) {
      await dmOnce(ctx, effectKey('su', 'cut', messageId), user, cutText(STANDUP_LIMITS.answerChars)).catch(
        ignoreDone,
      );
    }
    const n = sheet!.answers.length;
    if (n < run.questions.length) {
      await dmOnce(ctx, askKey(head, user, n), user, askText(run, n));
      return;
    }
    await dmOnce(ctx, effectKey('su', 'thanks', run.channel_id, run.date, user), user, thanksText(run)).catch(
      ignoreDone,
    );
    await askHead(ctx, user, await dequeue(ctx, user, head));
    return;
  }
}

export const standupBot: BuiltinBot = {
  key: 'standup',
  type: 'platform',
  name: 'Stand-up',
  description:
    'Daily stand-ups per channel: asks every member by DM at the set time, collects the answers and posts one summary',
  events: ['message.created'],
  commands: [
    {
      name: 'standup',
      description: 'Set up, show, skip, pause or resume the stand-up of this channel',
      usage:
        '/standup setup <HH:MM> <days> <time zone> "question" … · show · skip <date> · pause · resume · remove',
    },
  ],
  scopes: ['messages:read', 'messages:write', 'channels:read', 'users:read'],
  onCommand,

  async onEvent(ctx, event) {
    if (event.type !== 'message.created') return;
    const d = event.data;
    if (d.sender_type !== 'user') return;
    if (typeof d.dm_room_id === 'string') return onDm(ctx, event);
    // A message in a channel of the bot: a broken chain (long downtime, the bot was disabled) resumes.
    if (typeof d.channel_id === 'string') await ensureArmed(ctx, d.channel_id);
  },

  async onJob(ctx, job) {
    if (job.kind === jobs.start) return startJob(ctx, job);
    if (job.kind === jobs.remind) return remindJob(ctx, job);
    if (job.kind === jobs.summary) return summaryJob(ctx, job);
    ctx.log.warn({ kind: job.kind }, 'stand-up: unknown job kind');
  },
};
