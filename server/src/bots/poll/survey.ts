import { AppError, isAppError } from '../../domain/errors.js';
import { scheduleJob } from '../../operations/bots/jobs.js';
import { getChannel, listChannelMembers } from '../../operations/containers/channels.js';
import { sendBotDm } from '../../operations/dm/bot-dm.js';
import { editMessage } from '../../operations/messages/edit-delete.js';
import { getUser } from '../../operations/users/users.js';
import type { ActionInvocation, BotContext, BotEvent, CommandInvocation } from '../types.js';
import { parseSurvey, SURVEY_LIMITS, SURVEY_USAGE } from './parse.js';
import {
  surveyAnsweredContent,
  surveyQuestionActions,
  surveyQuestionContent,
  surveySummary,
  surveyThanksContent,
  SURVEY_SKIP,
  utc,
  type AnswerDoc,
  type SurveyDoc,
} from './render.js';
import { deleteDoc, getDoc, listDocs, putDoc, updateDoc } from './store.js';

/**
 * Surveys (docs/bots/POLL.md): `/survey "Title" "Q1" "Q2 [A|B]" …` asks every
 * member of the channel, by DM, one question after the other: a choice question with buttons, a text
 * question answered by replying in the DM (or `skip`). A member in several surveys at once gets them
 * one after the other (their queue, `survey-user/<user id>`). At the closing time the creator gets a
 * summary by DM.
 *
 * Documents: `survey/<id>` (the survey), `survey/<id>/a/<user id>` (a member's answers and the DMs
 * that asked them), `survey-user/<user id>` (the member's queue of surveys). All of them are deleted
 * when the survey closes, once the summary is sent.
 */

export const JOB_SURVEY_START = 'survey.start';
export const JOB_SURVEY_CLOSE = 'survey.close';

const surveyKey = (id: string) => `survey/${id}`;
const answersPrefix = (id: string) => `survey/${id}/a/`;
const answerKey = (id: string, userId: string) => `${answersPrefix(id)}${userId}`;
const queueKey = (userId: string) => `survey-user/${userId}`;

interface QueueDoc {
  queue: string[];
}

/** A member's answers as stored: with the DM room the bot asks them in, and the last DM reply used. */
type StoredAnswers = AnswerDoc & { room?: string; last_msg?: string };
type StoredSurvey = SurveyDoc & { summary_message_id?: string };

/** `/survey …`: stores the survey and schedules its start (the DMs) now and its closing. */
export async function createSurvey(ctx: BotContext, cmd: CommandInvocation): Promise<string> {
  const spec = parseSurvey(cmd.args);
  if (!cmd.channelId) {
    throw new AppError(
      'invalid_input',
      `A survey asks the members of a channel: run ${SURVEY_USAGE} in a channel`,
    );
  }
  const channel = await ctx.call(getChannel, { channel_id: cmd.channelId });
  const members = (await ctx.call(listChannelMembers, { channel_id: cmd.channelId })).items.filter(
    (m) => m.member_type === 'user',
  );
  if (members.length > SURVEY_LIMITS.maxParticipants) {
    throw new AppError(
      'invalid_input',
      `A survey asks at most ${SURVEY_LIMITS.maxParticipants} members; this channel has ${members.length}`,
    );
  }
  const participants: { id: string; name: string }[] = [];
  let creatorName = 'someone';
  for (const m of members) {
    const u = await ctx.call(getUser, { user_id: m.member_id }).catch(() => null);
    if (!u || u.status !== 'active') continue;
    participants.push({ id: u.id, name: u.display_name });
    if (u.id === cmd.userId) creatorName = u.display_name;
  }
  if (creatorName === 'someone') {
    creatorName =
      (await ctx.call(getUser, { user_id: cmd.userId }).catch(() => null))?.display_name ?? creatorName;
  }
  const id = cmd.invocationId;
  const now = ctx.now();
  const survey: StoredSurvey = {
    v: 1,
    id,
    title: spec.title,
    questions: spec.questions,
    anonymous: spec.anonymous,
    creator_id: cmd.userId,
    creator_name: creatorName,
    channel_id: cmd.channelId,
    topic_id: null,
    place_name: `#${channel.name}`,
    participants,
    created_at: now.toISOString(),
    closes_at: new Date(now.getTime() + spec.closesMs).toISOString(),
    state: 'open',
  };
  if ((await putDoc(ctx, surveyKey(id), survey, 0)) === null) return 'This survey was started already.';
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: JOB_SURVEY_START,
    payload: { survey_id: id },
    run_at: now.toISOString(),
    dedupe_key: `survey-start:${id}`,
  });
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: JOB_SURVEY_CLOSE,
    payload: { survey_id: id },
    run_at: survey.closes_at,
    dedupe_key: `survey:${id}`,
  });
  return (
    `📝 Survey **${spec.title.replace(/[*_`\\]/g, '\\$&')}** started: ${participants.length} ` +
    `${participants.length === 1 ? 'member' : 'members'} of #${channel.name} get its ${spec.questions.length} ` +
    `${spec.questions.length === 1 ? 'question' : 'questions'} by DM. You get the results by DM on ${utc(survey.closes_at)}.`
  );
}

/** The start job: enrols every participant (their answers document, their queue) and asks those who are free. */
export async function startSurvey(ctx: BotContext, surveyId: string): Promise<void> {
  const s = await getDoc<StoredSurvey>(ctx, surveyKey(surveyId));
  if (!s || s.value.state !== 'open') return;
  for (const p of s.value.participants) {
    await putDoc<StoredAnswers>(ctx, answerKey(surveyId, p.id), { name: p.name, answers: [], asked: [] }, 0);
    const q = await updateDoc<QueueDoc>(ctx, queueKey(p.id), (cur) =>
      cur?.queue.includes(surveyId) ? undefined : { queue: [...(cur?.queue ?? []), surveyId] },
    );
    if (q.value?.queue[0] === surveyId) await askNext(ctx, p.id);
  }
}

/** Takes the survey out of the member's queue. */
async function dequeue(ctx: BotContext, userId: string, surveyId: string): Promise<void> {
  const r = await updateDoc<QueueDoc>(ctx, queueKey(userId), (cur) =>
    cur?.queue.includes(surveyId) ? { queue: cur.queue.filter((x) => x !== surveyId) } : undefined,
  );
  if (r.written && r.value?.queue.length === 0) {
    const now = await getDoc<QueueDoc>(ctx, queueKey(userId));
    // Deleted only while still empty (a survey enrolled meanwhile keeps it).
    if (now && now.value.queue.length === 0) await deleteDoc(ctx, queueKey(userId), now.version);
  }
}

/**
 * Asks the member the next unanswered question of the first survey of their queue (once: a question
 * already asked is not asked again). Surveys that closed or were answered are taken off the queue.
 */
async function askNext(ctx: BotContext, userId: string): Promise<void> {
  for (let guard = 0; guard < 50; guard++) {
    const queue = await getDoc<QueueDoc>(ctx, queueKey(userId));
    const surveyId = queue?.value.queue[0];
    if (!surveyId) return;
    const s = await getDoc<StoredSurvey>(ctx, surveyKey(surveyId));
    const a = await getDoc<StoredAnswers>(ctx, answerKey(surveyId, userId));
    if (!s || s.value.state !== 'open' || !a || a.value.answers.length >= s.value.questions.length) {
      await dequeue(ctx, userId, surveyId);
      continue;
    }
    const q = a.value.answers.length;
    if (a.value.asked[q]) return; // asked already; waiting for the answer
    const dm = await ctx.call(
      sendBotDm,
      {
        bot_id: ctx.bot.id,
        user_id: userId,
        content: surveyQuestionContent(s.value, q),
        actions: surveyQuestionActions(s.value, q),
      },
      { idempotencyKey: `survey:${surveyId}:ask:${userId}:${q}` },
    );
    await updateDoc<StoredAnswers>(ctx, answerKey(surveyId, userId), (cur) => {
      if (!cur || cur.asked[q]) return undefined;
      const asked = [...cur.asked];
      asked[q] = dm.id;
      return { ...cur, asked, room: dm.dm_room_id ?? cur.room };
    });
    return;
  }
}

/**
 * Records the answer to question `q` of a member, once: a second click or a redelivered reply finds
 * the question answered and changes nothing. Then marks the DM answered and asks the next question
 * (or thanks them and moves on to their next survey).
 */
async function answer(
  ctx: BotContext,
  userId: string,
  surveyId: string,
  q: number,
  text: string | null,
  source: string,
): Promise<void> {
  const s = await getDoc<StoredSurvey>(ctx, surveyKey(surveyId));
  if (!s || s.value.state !== 'open') return;
  // Past its time but not closed (its closing job was skipped while the bot was disabled, or missed):
  // the answer comes too late, and closes it.
  if (Date.parse(s.value.closes_at) <= ctx.now().getTime()) return closeSurvey(ctx, surveyId);
  const r = await updateDoc<StoredAnswers>(ctx, answerKey(surveyId, userId), (cur) => {
    if (!cur || cur.answers.length !== q || cur.last_msg === source) return undefined;
    return { ...cur, answers: [...cur.answers, text], last_msg: source };
  });
  if (!r.written || !r.value) return;
  const asked = r.value.asked[q];
  if (asked) {
    await ctx.call(editMessage, {
      message_id: asked,
      content: surveyAnsweredContent(s.value, q, text),
      actions: null,
    });
  }
  if (q + 1 >= s.value.questions.length) {
    await ctx.call(
      sendBotDm,
      { bot_id: ctx.bot.id, user_id: userId, content: surveyThanksContent(s.value) },
      { idempotencyKey: `survey:${surveyId}:thanks:${userId}` },
    );
    await dequeue(ctx, userId, surveyId);
  }
  await askNext(ctx, userId);
}

/** A click on a choice question's button in a survey DM. */
export async function onSurveyAction(
  ctx: BotContext,
  action: ActionInvocation,
  v: { surveyId: string; q: number; c: number },
): Promise<void> {
  const s = await getDoc<StoredSurvey>(ctx, surveyKey(v.surveyId));
  const choice = s?.value.questions[v.q]?.choices?.[v.c];
  if (!s || choice === undefined) return;
  const a = await getDoc<StoredAnswers>(ctx, answerKey(v.surveyId, action.user_id));
  // Only the DM that asked this member this question counts.
  if (!a || a.value.asked[v.q] !== action.message_id) return;
  await answer(ctx, action.user_id, v.surveyId, v.q, choice, action.invocation_id);
}

/** A member's reply in their DM with the bot: the answer to the question they were asked last. */
export async function onSurveyReply(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  if (d.sender_type !== 'user' || typeof d.dm_room_id !== 'string' || typeof d.sender_id !== 'string') return;
  const userId = d.sender_id;
  const messageId = typeof d.id === 'string' ? d.id : event.id;
  const content = typeof d.content === 'string' ? d.content.trim() : '';
  const queue = await getDoc<QueueDoc>(ctx, queueKey(userId));
  const surveyId = queue?.value.queue[0];
  if (!surveyId) return;
  const s = await getDoc<StoredSurvey>(ctx, surveyKey(surveyId));
  const a = await getDoc<StoredAnswers>(ctx, answerKey(surveyId, userId));
  if (!s || !a || a.value.room !== d.dm_room_id) return;
  const q = a.value.answers.length;
  const question = s.value.questions[q];
  if (!question || !a.value.asked[q]) return;
  if (question.choices) {
    const choice = question.choices.find((c) => c.toLowerCase() === content.toLowerCase());
    if (choice !== undefined) return answer(ctx, userId, surveyId, q, choice, messageId);
    await ctx.call(
      sendBotDm,
      {
        bot_id: ctx.bot.id,
        user_id: userId,
        content: `Please answer question ${q + 1} with one of its buttons above (or type one of: ${question.choices.join(', ')}).`,
      },
      { idempotencyKey: `survey:${surveyId}:remind:${messageId}` },
    );
    return;
  }
  if (content === '') return;
  const text =
    content.toLowerCase() === SURVEY_SKIP
      ? null
      : content.length > SURVEY_LIMITS.answer
        ? `${content.slice(0, SURVEY_LIMITS.answer - 1)}…`
        : content;
  await answer(ctx, userId, surveyId, q, text, messageId);
}

/**
 * The closing job: marks the survey closed, DMs the creator the summary (once), tells members who had
 * not finished that it closed, moves them on to their next survey, and deletes the survey's documents.
 */
export async function closeSurvey(ctx: BotContext, surveyId: string): Promise<void> {
  const r = await updateDoc<StoredSurvey>(ctx, surveyKey(surveyId), (cur) =>
    cur && cur.state === 'open' ? { ...cur, state: 'closed', closed_at: ctx.now().toISOString() } : undefined,
  );
  const s = r.value;
  if (!s) return;
  const docs = await listDocs<StoredAnswers>(ctx, answersPrefix(surveyId));
  const answers = new Map(docs.map((d) => [d.key.slice(answersPrefix(surveyId).length), d.value]));
  if (!s.summary_message_id) {
    try {
      const dm = await ctx.call(
        sendBotDm,
        { bot_id: ctx.bot.id, user_id: s.creator_id, content: surveySummary(s, answers) },
        { idempotencyKey: `survey:${surveyId}:summary` },
      );
      await updateDoc<StoredSurvey>(ctx, surveyKey(surveyId), (cur) =>
        cur ? { ...cur, summary_message_id: dm.id } : undefined,
      );
    } catch (e) {
      // Sent already by an attempt that crashed before noting it (a late answer changed the text since).
      if (!(isAppError(e) && e.code === 'idempotency_conflict')) throw e;
    }
  }
  for (const p of s.participants) {
    const a = answers.get(p.id);
    const q = a?.answers.length ?? 0;
    const pending = a && q < s.questions.length ? a.asked[q] : undefined;
    if (pending) {
      await ctx
        .call(editMessage, {
          message_id: pending,
          content: `${surveyQuestionContent(s, q)}\n⏱ _The survey closed before this question was answered._`,
          actions: null,
        })
        .catch(() => undefined);
    }
    await dequeue(ctx, p.id, surveyId);
    await askNext(ctx, p.id);
  }
  for (const d of docs) await deleteDoc(ctx, d.key);
  await deleteDoc(ctx, surveyKey(surveyId));
}
