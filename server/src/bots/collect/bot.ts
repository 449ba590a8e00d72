import { z } from 'zod';
import { AppError, isAppError } from '../../domain/errors.js';
import { cancelJob, scheduleJob } from '../../operations/bots/jobs.js';
import { getChannel, listChannelMembers } from '../../operations/containers/channels.js';
import { getFileForDownload } from '../../operations/files/files.js';
import { getUser } from '../../operations/users/users.js';
import { BotData } from '../platform-kit/data.js';
import { alreadyDone, dmOnce, effectKey, Names, postOnce } from '../platform-kit/effects.js';
import { jsonBytes } from '../platform-kit/text.js';
import type { BotContext, BotEvent, BotJob, BuiltinBot, CommandInvocation } from '../types.js';
import {
  COLLECT_LIMITS,
  jobs,
  keys,
  KEPT_PER_CHANNEL,
  refOf,
  type ChannelIndex,
  type Collection,
  type FileRef,
  type Inbox,
  type Reply,
  type Result,
} from './model.js';
import { COLLECT_USAGE, parseCollect, type CreateArgs } from './parse.js';
import {
  ackText,
  closedNote,
  createdText,
  fileProblemText,
  FULL_TEXT,
  IDLE_TEXT,
  lateText,
  listText,
  reminderText,
  requestText,
  resultChunks,
} from './render.js';

/**
 * The collection bot (platform; docs/BUILTIN-BOTS.md "Collection bot"): `/collect "…" due:friday` in a
 * channel asks every other user member by DM; their DM replies (text, and links to files uploaded in
 * the channel) are gathered until the deadline; those who have not replied are reminded before it; at
 * the deadline the result goes to the requester by DM (and is posted in the channel with
 * `share:channel`; otherwise a short note there says it closed).
 *
 * Three scheduler jobs per collection — open (send the requests, at once), remind, close — each with a
 * dedupe key of the collection. Messages carry idempotency keys naming them (the request to a member,
 * chunk n of the result…), and the result is frozen before it is sent, so a re-run after a crash, or
 * a close by the requester racing the deadline, delivers it once.
 */

const fail = (message: string) => new AppError('invalid_input', message);
const IdPayload = z.object({ id: z.string() });

function ignoreDone(e: unknown): void {
  if (!alreadyDone(e)) throw e;
}

const gone = (e: unknown) => isAppError(e) && (e.code === 'not_found' || e.code === 'forbidden');

// --- commands ---------------------------------------------------------------------------------------

async function channelCollections(data: BotData, ch: string): Promise<Collection[]> {
  const index = (await data.get<ChannelIndex>(keys.channel(ch)))?.value.ids ?? [];
  const out: Collection[] = [];
  for (const id of index) {
    const c = (await data.get<Collection>(keys.collection(id)))?.value;
    if (c) out.push(c);
  }
  return out;
}

async function create(ctx: BotContext, cmd: CommandInvocation, ch: string, a: CreateArgs): Promise<string> {
  const data = new BotData(ctx);
  const existing = await channelCollections(data, ch);
  if (existing.filter((c) => c.state === 'open').length >= COLLECT_LIMITS.openPerChannel) {
    throw fail(
      `This channel has ${COLLECT_LIMITS.openPerChannel} open collections, the most it may have; close or cancel one first`,
    );
  }
  const channel = await ctx.call(getChannel, { channel_id: ch });
  const members = await ctx.call(listChannelMembers, { channel_id: ch });
  const users: string[] = [];
  for (const m of members.items) {
    if (m.member_type !== 'user' || m.member_id === cmd.userId) continue;
    const u = await ctx.call(getUser, { user_id: m.member_id }).catch(() => null);
    if (u?.status === 'active') users.push(u.id);
  }
  if (users.length === 0) throw fail('Nobody else is in this channel to ask');
  const requester = await ctx.call(getUser, { user_id: cmd.userId });
  const id = cmd.invocationId;
  const fresh: Collection = {
    id,
    channel_id: ch,
    channel_name: channel.name,
    requester_id: cmd.userId,
    requester_name: requester.display_name,
    prompt: a.prompt,
    due_at: a.due_at,
    remind_at: a.remind_at,
    tz: a.tz,
    share: a.share,
    recipients: users.slice(0, COLLECT_LIMITS.recipients),
    left_out: Math.max(0, users.length - COLLECT_LIMITS.recipients),
    state: 'open',
    created_at: ctx.now().toISOString(),
    jobs: { remind: null, close: null },
  };
  const c = (await data.create(keys.collection(id), fresh)).doc.value;
  await data.update<ChannelIndex>(keys.channel(ch), (cur) =>
    cur?.ids.includes(id) ? undefined : { ids: [...(cur?.ids ?? []), id] },
  );
  const schedule = (kind: string, runAt: string, dedupe: string) =>
    ctx.call(scheduleJob, { bot_id: ctx.bot.id, kind, run_at: runAt, dedupe_key: dedupe, payload: { id } });
  await schedule(jobs.open, ctx.now().toISOString(), jobs.openKey(id));
  const remind = c.remind_at ? (await schedule(jobs.remind, c.remind_at, jobs.remindKey(id))).id : null;
  const close = (await schedule(jobs.close, c.due_at, jobs.closeKey(id))).id;
  await data.update<Collection>(keys.collection(id), (cur) =>
    cur ? { ...cur, jobs: { remind, close } } : undefined,
  );
  await prune(data, ch);
  return createdText(c);
}

/** Keeps a channel's last KEPT_PER_CHANNEL collections (and every open one). */
async function prune(data: BotData, ch: string): Promise<void> {
  const all = await channelCollections(data, ch);
  const finished = all.filter((c) => c.state === 'delivered' || c.state === 'cancelled');
  const drop = new Set(finished.slice(0, Math.max(0, all.length - KEPT_PER_CHANNEL)).map((c) => c.id));
  if (drop.size === 0) return;
  await data.update<ChannelIndex>(keys.channel(ch), (cur) =>
    cur ? { ids: cur.ids.filter((i) => !drop.has(i)) } : undefined,
  );
  for (const id of drop) await data.delete(keys.collection(id));
}

async function findByRef(data: BotData, ch: string, ref: string): Promise<Collection> {
  const hits = (await channelCollections(data, ch)).filter((c) => c.id === ref || c.id.endsWith(ref));
  if (hits.length === 0)
    throw new AppError('not_found', `No collection ${ref} in this channel (see /collect list)`);
  if (hits.length > 1) throw fail(`${ref} names ${hits.length} collections; give more characters`);
  return hits[0]!;
}

async function mayManage(ctx: BotContext, c: Collection, userId: string): Promise<void> {
  if (c.requester_id === userId) return;
  const u = await ctx.call(getUser, { user_id: userId });
  if (u.role !== 'org_admin' && u.role !== 'system_admin') {
    throw new AppError(
      'forbidden',
      'Only the member who started a collection (or an org admin) closes or cancels it',
    );
  }
}

async function cancelQuietly(ctx: BotContext, jobId: string | null): Promise<void> {
  if (!jobId) return;
  await ctx.call(cancelJob, { bot_id: ctx.bot.id, job_id: jobId }).catch((e: unknown) => {
    if (!isAppError(e)) throw e;
  });
}

async function cancel(ctx: BotContext, cmd: CommandInvocation, ch: string, ref: string): Promise<string> {
  const data = new BotData(ctx);
  const c = await findByRef(data, ch, ref);
  await mayManage(ctx, c, cmd.userId);
  if (c.state !== 'open')
    throw new AppError('conflict', `The collection ${refOf(c.id)} is ${c.state} already`);
  const after = await data.update<Collection>(keys.collection(c.id), (cur) =>
    cur && cur.state === 'open' ? { ...cur, state: 'cancelled' } : undefined,
  );
  if (after?.state !== 'cancelled')
    throw new AppError('conflict', `The collection ${refOf(c.id)} has just closed`);
  await cancelQuietly(ctx, c.jobs.remind);
  await cancelQuietly(ctx, c.jobs.close);
  return `🚫 The collection “${c.prompt.slice(0, 120)}” (\`${refOf(c.id)}\`) was cancelled; nothing more is gathered.`;
}

async function closeNow(ctx: BotContext, cmd: CommandInvocation, ch: string, ref: string): Promise<string> {
  const data = new BotData(ctx);
  const c = await findByRef(data, ch, ref);
  await mayManage(ctx, c, cmd.userId);
  if (c.state !== 'open')
    throw new AppError('conflict', `The collection ${refOf(c.id)} is ${c.state} already`);
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: jobs.close,
    run_at: ctx.now().toISOString(),
    dedupe_key: jobs.closeNowKey(c.id),
    payload: { id: c.id },
  });
  await cancelQuietly(ctx, c.jobs.remind);
  return `Closing \`${refOf(c.id)}\` now; the result goes to ${c.requester_name} by DM.`;
}

async function onCommand(ctx: BotContext, cmd: CommandInvocation) {
  const parsed = parseCollect(cmd.args, ctx.now().getTime());
  if (parsed.kind === 'help') return { content: COLLECT_USAGE, ephemeral: true };
  const ch = cmd.channelId;
  if (!ch) throw fail('A collection asks the members of a channel: run /collect in that channel');
  switch (parsed.kind) {
    case 'create':
      return { content: await create(ctx, cmd, ch, parsed.create) };
    case 'list': {
      const all = await channelCollections(new BotData(ctx), ch);
      for (const c of all) if (overdue(c, ctx.now().getTime())) await closeOverdue(ctx, c);
      return { content: listText(all), ephemeral: true };
    }
    case 'cancel':
      return { content: await cancel(ctx, cmd, ch, parsed.ref) };
    case 'close':
      return { content: await closeNow(ctx, cmd, ch, parsed.ref), ephemeral: true };
  }
}

// --- jobs -------------------------------------------------------------------------------------------

async function openJob(ctx: BotContext, id: string): Promise<void> {
  const data = new BotData(ctx);
  const c = (await data.get<Collection>(keys.collection(id)))?.value;
  if (!c || c.state !== 'open') return;
  for (const user of c.recipients) {
    await data.update<Inbox>(keys.inbox(user), (cur) => {
      const ids = cur?.ids ?? [];
      return ids.includes(id) || ids.length >= COLLECT_LIMITS.inbox ? undefined : { ids: [...ids, id] };
    });
    await dmOnce(ctx, effectKey('co', 'ask', id, user), user, requestText(c)).catch((e: unknown) => {
      if (!gone(e)) throw e; // deactivated since: not asked
    });
  }
}

async function remindJob(ctx: BotContext, id: string): Promise<void> {
  const data = new BotData(ctx);
  const c = (await data.get<Collection>(keys.collection(id)))?.value;
  if (!c || c.state !== 'open') return;
  for (const user of c.recipients) {
    const r = (await data.get<Reply>(keys.reply(id, user)))?.value;
    if (r && (r.closed || r.parts.length > 0)) continue;
    await dmOnce(ctx, effectKey('co', 'remind', id, user), user, reminderText(c)).catch((e: unknown) => {
      if (!gone(e)) ignoreDone(e);
    });
  }
}

async function closeJob(ctx: BotContext, id: string): Promise<void> {
  const data = new BotData(ctx);
  const ckey = keys.collection(id);
  let c = (await data.get<Collection>(ckey))?.value;
  if (!c || c.state === 'cancelled') return;
  if (c.state === 'open') {
    // Every reply sheet closed first (compare-and-set against a reply being added), then the result
    // is frozen: what is sent below is that text, whatever runs again.
    for (const user of c.recipients) {
      await data.update<Reply>(keys.reply(id, user), (cur) =>
        cur?.closed ? undefined : { user_id: user, parts: cur?.parts ?? [], closed: true },
      );
    }
    c = (await data.update<Collection>(ckey, (cur) =>
      cur?.state === 'open' ? { ...cur, state: 'closed' } : undefined,
    ))!;
    if (c.state === 'cancelled') return;
  }
  if (c.state === 'closed') {
    let result = (await data.get<Result>(keys.result(id)))?.value;
    if (!result) {
      const sheets = await data.list<Reply>(keys.replies(id), COLLECT_LIMITS.recipients + 10);
      const replies = new Map(sheets.map((s) => [s.value.user_id, s.value]));
      const names = await new Names(ctx).users(c.recipients);
      const chunks = resultChunks(c, replies, names);
      const replied = c.recipients.filter((u) => (replies.get(u)?.parts.length ?? 0) > 0).length;
      // One document holds the result while it is sent; beyond 64 KB, its chunks are sent unfrozen
      // (each still once per key; only a crash in between could then make a later chunk differ).
      const value: Result = { chunks, replied };
      result = jsonBytes(value) <= 60_000 ? (await data.create(keys.result(id), value)).doc.value : value;
    }
    const r = result;
    for (const [n, chunk] of r.chunks.entries()) {
      await dmOnce(ctx, effectKey('co', 'res', id, 'dm', String(n)), c.requester_id, chunk).catch(
        (e: unknown) => {
          if (!gone(e)) ignoreDone(e);
        },
      );
    }
    try {
      if (c.share === 'channel') {
        for (const [n, chunk] of r.chunks.entries()) {
          await postOnce(ctx, effectKey('co', 'res', id, 'post', String(n)), c.channel_id, chunk).catch(
            ignoreDone,
          );
        }
      } else {
        await postOnce(
          ctx,
          effectKey('co', 'res', id, 'note'),
          c.channel_id,
          closedNote(c, r.replied, c.recipients.length),
        ).catch(ignoreDone);
      }
    } catch (e) {
      if (!gone(e)) throw e;
      ctx.log.info(
        { channel: c.channel_id },
        'collection: the bot is no longer in the channel; result sent by DM only',
      );
    }
    c = (await data.update<Collection>(ckey, (cur) =>
      cur?.state === 'closed' ? { ...cur, state: 'delivered' } : undefined,
    ))!;
  }
  // Delivered: out of every inbox, replies and result deleted.
  for (const user of c.recipients) {
    await data.update<Inbox>(keys.inbox(user), (cur) => {
      if (!cur?.ids.includes(id)) return undefined;
      const ids = cur.ids.filter((i) => i !== id);
      return ids.length === 0 ? null : { ids };
    });
    await data.delete(keys.reply(id, user));
  }
  await data.delete(keys.result(id));
  await prune(data, c.channel_id);
}

/**
 * A collection still open a minute after its deadline: its close job did not run (the bot was
 * disabled then, or the server was down beyond the scheduler's grace). It is closed now, once.
 */
const overdue = (c: Collection, now: number) => c.state === 'open' && Date.parse(c.due_at) < now - 60_000;

async function closeOverdue(ctx: BotContext, c: Collection): Promise<void> {
  await ctx.call(scheduleJob, {
    bot_id: ctx.bot.id,
    kind: jobs.close,
    run_at: ctx.now().toISOString(),
    dedupe_key: jobs.closeLateKey(c.id),
    payload: { id: c.id },
  });
}

// --- replies in the DM ------------------------------------------------------------------------------

const FILE_RE = /(?:\/api\/files\/|\bfile:)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/gi;

/** The files a message links to, checked: each must be a file of the collection's channel. */
async function filesOf(
  ctx: BotContext,
  c: Collection,
  content: string,
): Promise<{ files: FileRef[]; problems: string[] }> {
  const ids = [...new Set([...content.matchAll(FILE_RE)].map((m) => m[1]!.toLowerCase()))];
  const files: FileRef[] = [];
  const problems: string[] = [];
  if (ids.length > COLLECT_LIMITS.filesPerReply) {
    return { files, problems: [`more than ${COLLECT_LIMITS.filesPerReply} files in one reply`] };
  }
  for (const fileId of ids) {
    const f = await ctx
      .call(getFileForDownload, { file_id: fileId })
      .then((r) => r.file)
      .catch((e: unknown) => {
        if (gone(e)) return null;
        throw e;
      });
    if (!f) problems.push(`file ${refOf(fileId)} was not found in #${c.channel_name}`);
    else if (f.channel_id !== c.channel_id)
      problems.push(`${f.filename} is not a file of #${c.channel_name}`);
    else files.push({ id: f.id, filename: f.filename, size: f.size });
  }
  return { files, problems };
}

async function onDm(ctx: BotContext, event: BotEvent): Promise<void> {
  const d: Readonly<Record<string, unknown>> = event.data; // its checks as they were
  const user = String(d.sender_id);
  const messageId = String(d.message_id);
  const content = typeof d.content === 'string' ? d.content : '';
  const data = new BotData(ctx);
  const ids = (await data.get<Inbox>(keys.inbox(user)))?.value.ids ?? [];
  const open: { c: Collection; replied: boolean }[] = [];
  const stale: string[] = [];
  for (const id of ids) {
    const c = (await data.get<Collection>(keys.collection(id)))?.value;
    if (!c || c.state === 'cancelled' || c.state === 'delivered') {
      stale.push(id);
      continue;
    }
    const r = (await data.get<Reply>(keys.reply(id, user)))?.value;
    if (r?.parts.some((p) => p.message_id === messageId)) return; // a repeated delivery: done before
    if (overdue(c, ctx.now().getTime())) {
      await closeOverdue(ctx, c);
      continue;
    }
    open.push({ c, replied: (r?.parts.length ?? 0) > 0 });
  }
  if (stale.length > 0) {
    await data.update<Inbox>(keys.inbox(user), (cur) => {
      if (!cur) return undefined;
      const left = cur.ids.filter((i) => !stale.includes(i));
      return left.length === cur.ids.length ? undefined : left.length === 0 ? null : { ids: left };
    });
  }
  // The oldest request not replied to yet; else the newest one (more messages add to a reply).
  const target = open.find((o) => !o.replied) ?? open[open.length - 1];
  if (!target) {
    await dmOnce(ctx, effectKey('co', 'idle', messageId), user, IDLE_TEXT).catch(ignoreDone);
    return;
  }
  const c = target.c;
  const { files, problems } = await filesOf(ctx, c, content);
  if (problems.length > 0) {
    await dmOnce(ctx, effectKey('co', 'files', messageId), user, fileProblemText(problems)).catch(ignoreDone);
    return;
  }
  let outcome = 'added' as 'added' | 'late' | 'full' | 'again';
  await data.update<Reply>(keys.reply(c.id, user), (cur) => {
    const r = cur ?? { user_id: user, parts: [], closed: false };
    if (r.closed) {
      outcome = 'late';
      return undefined;
    }
    if (r.parts.some((p) => p.message_id === messageId)) {
      outcome = 'again';
      return undefined;
    }
    const parts = [...r.parts, { message_id: messageId, text: content, files, at: event.timestamp }];
    const chars = parts.reduce((n, p) => n + p.text.length, 0);
    const nFiles = parts.reduce((n, p) => n + p.files.length, 0);
    if (
      chars > COLLECT_LIMITS.replyChars ||
      nFiles > COLLECT_LIMITS.filesPerReply ||
      jsonBytes(parts) > COLLECT_LIMITS.replyBytes
    ) {
      outcome = 'full';
      return undefined;
    }
    outcome = 'added';
    return { ...r, parts };
  });
  if (outcome === 'again') return;
  if (outcome === 'late') {
    await dmOnce(ctx, effectKey('co', 'late', messageId), user, lateText(c)).catch(ignoreDone);
    return;
  }
  if (outcome === 'full') {
    await dmOnce(ctx, effectKey('co', 'full', messageId), user, FULL_TEXT).catch(ignoreDone);
    return;
  }
  const next = open.find((o) => !o.replied && o.c.id !== c.id)?.c ?? null;
  await dmOnce(ctx, effectKey('co', 'ack', messageId), user, ackText(c, files.length, next)).catch(
    ignoreDone,
  );
}

export const collectBot: BuiltinBot = {
  key: 'collect',
  type: 'platform',
  name: 'Collection',
  description:
    'Asks every member of a channel for something by DM (/collect "…" due:friday), gathers the replies and files, reminds, and hands the result to the requester',
  events: ['message.created'],
  commands: [
    {
      name: 'collect',
      description: 'Ask every member of this channel for something by DM and gather the replies',
      usage:
        '/collect "Send your weekly report" due:friday [remind:2h|off] [share:channel] [tz:<zone>] · list · close <ref> · cancel <ref>',
    },
  ],
  scopes: ['messages:read', 'messages:write', 'channels:read', 'users:read', 'files:read'],
  onCommand,

  async onEvent(ctx, event) {
    if (event.type !== 'message.created') return;
    const d = event.data;
    if (d.sender_type === 'user' && typeof d.dm_room_id === 'string') await onDm(ctx, event);
  },

  async onJob(ctx, job: BotJob) {
    const { id } = IdPayload.parse(job.payload);
    if (job.kind === jobs.open) return openJob(ctx, id);
    if (job.kind === jobs.remind) return remindJob(ctx, id);
    if (job.kind === jobs.close) return closeJob(ctx, id);
    ctx.log.warn({ kind: job.kind }, 'collection: unknown job kind');
  },
};
