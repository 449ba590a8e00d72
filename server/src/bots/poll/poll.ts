import { AppError } from '../../domain/errors.js';
import { cancelJob, scheduleJob } from '../../operations/bots/jobs.js';
import { editMessage } from '../../operations/messages/edit-delete.js';
import { sendMessage } from '../../operations/messages/messages.js';
import { getUser } from '../../operations/users/users.js';
import type { ActionInvocation, BotContext, CommandInvocation } from '../types.js';
import {
  applyClick,
  pollKey,
  selection,
  selectionChanged,
  tally,
  voteKey,
  votePrefix,
  voterOf,
  type Voter,
  type VoteDoc,
} from './model.js';
import { parsePoll, POLL_LIMITS } from './parse.js';
import { frozenResult, pollActions, pollContent, resultContent, type PollDoc } from './render.js';
import { deleteDoc, getDoc, listDocs, putDoc, updateDoc } from './store.js';

/**
 * Polls (docs/bots/POLL.md). The poll is a bot data document `poll/<id>`
 * (its id is the command's invocation id), each voter's choice a document of their own
 * (model.ts), the poll message is re-rendered from the stored votes after every change, and a job of
 * the durable scheduler (dedupe key `poll:<id>`) closes it at its time.
 */

export const JOB_CLOSE = 'poll.close';
export const JOB_PURGE = 'poll.purge';
/** A closed poll's document is deleted this long after it closed (its message keeps the result). */
export const PURGE_AFTER_MS = 7 * 86_400_000;
/** Rounds of render-and-check before a handler leaves the message to the next one (see renderPoll). */
const RENDER_ROUNDS = 6;

async function displayName(ctx: BotContext, userId: string): Promise<string> {
  const u = await ctx.call(getUser, { user_id: userId }).catch(() => null);
  return u?.display_name ?? 'someone';
}

/** `/poll …`: stores the poll, posts its message with buttons, schedules its closing. */
export async function createPoll(ctx: BotContext, cmd: CommandInvocation): Promise<void> {
  const spec = parsePoll(cmd.args);
  if (!cmd.channelId && !cmd.topicId) {
    throw new AppError('invalid_input', 'A poll is posted in a channel or a topic: run /poll there');
  }
  const id = cmd.invocationId;
  const now = ctx.now();
  const closesGiven = spec.closesMs !== null;
  const closesAt = new Date(now.getTime() + (spec.closesMs ?? POLL_LIMITS.defaultOpenMs)).toISOString();
  const poll: PollDoc = {
    v: 1,
    id,
    question: spec.question,
    options: spec.options,
    multiple: spec.multiple,
    anonymous: spec.anonymous,
    creator_id: cmd.userId,
    creator_name: await displayName(ctx, cmd.userId),
    channel_id: cmd.channelId,
    topic_id: cmd.channelId ? null : cmd.topicId,
    message_id: null,
    created_at: now.toISOString(),
    closes_at: closesAt,
    closes_given: closesGiven,
    state: 'open',
  };
  const v1 = await putDoc(ctx, pollKey(id), poll, 0);
  if (v1 === null) return; // this invocation was handled already
  const place = poll.channel_id ? { channel_id: poll.channel_id } : { topic_id: poll.topic_id! };
  let message;
  try {
    message = await ctx.call(
      sendMessage,
      { ...place, content: pollContent(poll, []), actions: pollActions(poll) },
      { idempotencyKey: `poll:${id}:post` },
    );
  } catch (e) {
    await deleteDoc(ctx, pollKey(id)); // nothing was posted: leave no poll behind
    throw e;
  }
  const job = await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: JOB_CLOSE,
    payload: { poll_id: id },
    run_at: closesAt,
    dedupe_key: `poll:${id}`,
  });
  await putDoc(ctx, pollKey(id), { ...poll, message_id: message.id, close_job_id: job.id }, v1);
  // A click in the moment between posting and storing the message id was counted but not shown yet.
  if ((await listDocs(ctx, votePrefix(id))).length > 0) await renderPoll(ctx, id);
}

type StoredPoll = PollDoc & { close_job_id?: string; result_message_id?: string };

/** The stored votes of a poll as voters (one per user document). */
async function loadVoters(ctx: BotContext, pollId: string): Promise<Voter[]> {
  const docs = await listDocs<VoteDoc>(ctx, votePrefix(pollId));
  const out: Voter[] = [];
  for (const d of docs) {
    const userId = voterOf(pollId, d.key);
    if (userId) out.push({ userId, name: d.value.name, options: selection(d.value) });
  }
  return out;
}

/**
 * Brings the poll message up to date with the stored poll and votes. Correct even when handlers of
 * the same poll run at once: each handler renders, edits, then reads again and edits again if what it
 * would show changed meanwhile. The last edit to commit is followed by its handler's check, which saw
 * every vote committed before it; any vote committed after that check has a handler of its own that
 * edits later. So the message always ends showing every stored vote.
 */
export async function renderPoll(ctx: BotContext, pollId: string): Promise<void> {
  let shown: string | null = null;
  for (let round = 0; round < RENDER_ROUNDS; round++) {
    const doc = await getDoc<StoredPoll>(ctx, pollKey(pollId));
    if (!doc?.value.message_id) return;
    const poll = doc.value;
    const voters = poll.state === 'closed' ? [] : await loadVoters(ctx, pollId);
    const content = pollContent(poll, voters);
    const actions = pollActions(poll);
    const sig = JSON.stringify([content, actions]);
    if (sig === shown) return;
    await ctx.call(editMessage, { message_id: poll.message_id!, content, actions });
    shown = sig;
  }
}

/** A click on a poll message's button or select. */
export async function onPollAction(
  ctx: BotContext,
  action: ActionInvocation,
  pollId: string,
  what: number | 'retract' | 'close',
): Promise<void> {
  const doc = await getDoc<StoredPoll>(ctx, pollKey(pollId));
  // A click for a poll this bot does not have (deleted after closing) or on another message: nothing to
  // do. (The message id is not stored yet in the moment after posting; createPoll renders after storing it.)
  if (!doc || (doc.value.message_id !== null && doc.value.message_id !== action.message_id)) return;
  const poll = doc.value;
  if (what === 'close') {
    if (action.user_id !== poll.creator_id) return; // only the poll's creator closes it early
    await closePoll(ctx, pollId, action.user_id);
    return;
  }
  if (poll.state === 'closed') return; // a click that arrived after closing does not count
  // Past its time but not closed (the closing job was skipped while the bot was disabled, or missed
  // while the server was down longer than the scheduler's grace): the first click closes it.
  if (Date.parse(poll.closes_at) <= ctx.now().getTime()) {
    await closePoll(ctx, pollId, 'time');
    return;
  }
  const name = (action.user as { display_name?: unknown } | undefined)?.display_name;
  const click =
    what === 'retract'
      ? {
          kind: 'retract' as const,
          at: action.invoked_at,
          inv: action.invocation_id,
          name: String(name ?? 'someone'),
        }
      : {
          kind: 'vote' as const,
          option: what,
          at: action.invoked_at,
          inv: action.invocation_id,
          name: String(name ?? 'someone'),
        };
  const key = voteKey(pollId, action.user_id);
  const r = await updateDoc<VoteDoc>(
    ctx,
    key,
    (cur) =>
      applyClick(cur, click, { multiple: poll.multiple, optionCount: poll.options.length }) ?? undefined,
  );
  // A vote written while the poll closed is not counted (the count is frozen when it closes); closing
  // deletes the votes it finds, and the purge a week later any written after that. Rendering reads the
  // poll again, so it shows the closed poll then.
  if (r.written && r.value && selectionChanged(r.before, r.value)) await renderPoll(ctx, pollId);
}

/**
 * Closes a poll (at its time, or by its creator): freezes the count in the poll's document, shows the
 * closed state without buttons, posts the result message once, deletes the votes and schedules the
 * deletion of the poll's document. Every step can run again after a crash without repeating an effect.
 */
export async function closePoll(ctx: BotContext, pollId: string, by: string): Promise<void> {
  let doc = await getDoc<StoredPoll>(ctx, pollKey(pollId));
  for (let round = 0; doc && doc.value.state === 'open'; round++) {
    if (round >= 25) throw new Error(`poll ${pollId}: could not be closed (changed concurrently)`);
    const t = tally(doc.value.options.length, await loadVoters(ctx, pollId));
    const closed: StoredPoll = {
      ...doc.value,
      state: 'closed',
      closed_at: ctx.now().toISOString(),
      closed_by: by,
      result: frozenResult(doc.value, t),
    };
    const v = await putDoc(ctx, pollKey(pollId), closed, doc.version);
    doc = v === null ? await getDoc<StoredPoll>(ctx, pollKey(pollId)) : { value: closed, version: v };
  }
  if (!doc) return;
  const poll = doc.value;
  if (poll.message_id) await renderPoll(ctx, pollId);
  if (!poll.result_message_id && poll.message_id) {
    const place = poll.channel_id ? { channel_id: poll.channel_id } : { topic_id: poll.topic_id! };
    const posted = await ctx.call(
      sendMessage,
      { ...place, content: resultContent(poll, poll.result!) },
      { idempotencyKey: `poll:${pollId}:result` },
    );
    await updateDoc<StoredPoll>(ctx, pollKey(pollId), (cur) =>
      cur && !cur.result_message_id ? { ...cur, result_message_id: posted.id } : undefined,
    );
  }
  for (const d of await listDocs<VoteDoc>(ctx, votePrefix(pollId))) await deleteDoc(ctx, d.key);
  if (by !== 'time' && poll.close_job_id) {
    await ctx.call(cancelJob, { bot_id: ctx.bot.id, job_id: poll.close_job_id }).catch(() => undefined);
  }
  const purgeAt = new Date(Date.parse(poll.closed_at ?? ctx.now().toISOString()) + PURGE_AFTER_MS);
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: JOB_PURGE,
    payload: { poll_id: pollId },
    run_at: new Date(Math.max(purgeAt.getTime(), ctx.now().getTime())).toISOString(),
    dedupe_key: `poll-purge:${pollId}`,
  });
}

/** A closed poll's document is no longer needed (its message shows the result). */
export async function purgePoll(ctx: BotContext, pollId: string): Promise<void> {
  const doc = await getDoc<StoredPoll>(ctx, pollKey(pollId));
  if (!doc || doc.value.state !== 'closed') return;
  for (const d of await listDocs<VoteDoc>(ctx, votePrefix(pollId))) await deleteDoc(ctx, d.key);
  await deleteDoc(ctx, pollKey(pollId));
}
