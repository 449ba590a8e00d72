import { createHash } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { ActiveGrants } from '../domain/grants.js';
import { newId } from '../domain/ids.js';
import type { NotificationRow } from '../storage/schema.js';
import type { Stores } from '../storage/stores/index.js';
import type { KeyRecentTextStore } from '../storage/stores/key-recent-texts.js';
import type { BotActor, OpContext, Services } from './context.js';
import { outsideRequest, write } from './write.js';

/**
 * Guard rails of agent grants (issue 21; docs/API.md, "Guard rails"): the write budgets
 * (writes_per_hour, writes_per_day) and the two rules that pause a key with grants:
 *
 * - budget: a key whose writes keep meeting a spent budget is paused at the `refusals`-th refusal
 *   within `window_minutes` (default 5 in 10). Counted in a token bucket of the rate limiter (shared by
 *   every instance on PostgreSQL), so an agent that backs off as told (Retry-After) is never paused;
 *   dry runs are not counted.
 * - burst: the same text (normalized: Unicode NFKC, lower case, runs of white space as one) sent to
 *   `targets` distinct channels, topics, DM rooms or users within `window_minutes` (default 5 in 10),
 *   as a message or as a new task (its title and description)
 *   pauses the key; the send that would reach the `targets`-th is refused and nothing is written. The
 *   window is in the database (key_recent_texts: one row per key, text hash and target), so that it
 *   holds across instances: one indexed read and one upsert in the send's own transaction.
 *
 * A paused key is refused with 403 key_paused (when, why, how to resume) on every operation but
 * `bots.auth` until a manager of the bot resumes it (PATCH api-keys `{ "paused": false }`). The pause
 * is a column of the key (read with the key on every request), and pausing tells the bot's owner and
 * the organization's admins (a notification the notifications bot relays as a DM) once.
 */

export interface PausedState {
  at: string;
  reason: string;
}

export function keyPausedError(actor: Pick<BotActor, 'botId' | 'keyId'>, p: PausedState): AppError {
  return new AppError(
    'key_paused',
    `This API key was paused at ${p.at}: ${p.reason}. Nothing was done. A manager of the bot resumes it in the admin screen (Bots, the key's Resume button) or with PATCH /api/bots/${actor.botId}/api-keys/${actor.keyId} {"paused": false}`,
    { paused: p },
  );
}

/** Refuses every operation of a paused key but `bots.auth` (which lets an agent see why). */
export function checkNotPaused(opName: string, actor: BotActor): void {
  if (actor.paused && opName !== 'bots.auth') throw keyPausedError(actor, actor.paused);
}

const HOUR_S = 3600;
const DAY_S = 86_400;
const hourKey = (actor: BotActor) => `grant-writes:${actor.keyId}`;
const dayKey = (actor: BotActor) => `grant-writes-day:${actor.keyId}`;
const refusalKey = (actor: BotActor) => `grant-refusals:${actor.keyId}`;

/**
 * Takes one write from each budget the grants set (a dry run only asks whether one is there). Returns
 * a function that gives them back (the write then failed), or undefined when none was taken. A spent
 * budget refuses with write_budget_exceeded, or key_paused when that refusal trips the budget rule.
 */
export async function takeWriteBudgets(
  ctx: OpContext,
  actor: BotActor,
  g: ActiveGrants,
): Promise<(() => Promise<void>) | undefined> {
  const limiter = ctx.services.rateLimiter;
  const cost = ctx.dryRun ? 0 : 1;
  const buckets: { key: string; perSecond: number; size: number; grant: string }[] = [];
  if (g.writesPerHour !== null)
    buckets.push({
      key: hourKey(actor),
      perSecond: g.writesPerHour / HOUR_S,
      size: g.writesPerHour,
      grant: 'writes_per_hour',
    });
  if (g.writesPerDay !== null)
    buckets.push({
      key: dayKey(actor),
      perSecond: g.writesPerDay / DAY_S,
      size: g.writesPerDay,
      grant: 'writes_per_day',
    });
  if (buckets.length === 0) return undefined;
  const taken: typeof buckets = [];
  const giveBack = async () => {
    for (const b of taken) await limiter.give(b.key, b.perSecond, b.size, 1);
  };
  for (const b of buckets) {
    const d = await limiter.take(b.key, b.perSecond, b.size, cost);
    if (!d.allowed) {
      await giveBack().catch(() => undefined);
      if (!ctx.dryRun) await countBudgetRefusal(ctx, actor, g, b.grant);
      throw new AppError(
        'write_budget_exceeded',
        `This API key's write budget (grant ${b.grant}: ${b.size}) is spent; retry in ${d.retryAfterSeconds} s`,
        { grant: b.grant, retryAfterSeconds: d.retryAfterSeconds },
      );
    }
    if (cost > 0) taken.push(b);
  }
  return cost > 0 ? giveBack : undefined;
}

/** The budget rule: one more refusal; at the rule's count within its window the key is paused. */
async function countBudgetRefusal(ctx: OpContext, actor: BotActor, g: ActiveGrants, grant: string) {
  const rule = g.pauseOnBudget;
  if (!rule) return;
  let trips = rule.refusals <= 1;
  if (!trips) {
    // Room for refusals − 1, refilled at that many per window: the refusals-th within it finds none.
    const size = rule.refusals - 1;
    const d = await ctx.services.rateLimiter.take(refusalKey(actor), size / (rule.windowMs / 1000), size, 1);
    trips = !d.allowed;
  }
  if (!trips) return;
  const minutes = Math.round(rule.windowMs / 60_000);
  const p = await pauseKey(
    ctx.services,
    actor,
    `its writes met a spent write budget (grant ${grant}) ${rule.refusals} time(s) within ${minutes} min (guard rail pause_on.budget)`,
    'budget',
  );
  throw keyPausedError(actor, p);
}

/**
 * The text a write sends and where to, for the burst rule: a message (messages.send, bots.dm.send) and
 * a new task (tasks.create: its title and description, to its topic).
 */
function burstSubject(opName: string, input: unknown): { text: string; target: string } | null {
  if (input === null || typeof input !== 'object') return null;
  const i = input as Record<string, unknown>;
  if (opName === 'tasks.create') {
    if (typeof i.title !== 'string' || typeof i.topic_id !== 'string') return null;
    const description = typeof i.description === 'string' ? i.description : '';
    return { text: `${i.title}\n${description}`, target: i.topic_id };
  }
  if (typeof i.content !== 'string') return null;
  let target: unknown;
  if (opName === 'messages.send') target = i.channel_id ?? i.topic_id ?? i.dm_room_id;
  else if (opName === 'bots.dm.send')
    target = typeof i.user_id === 'string' ? `user:${i.user_id}` : undefined;
  return typeof target === 'string' ? { text: i.content, target } : null;
}

/** The hash the burst rule compares: NFKC, lower case, white space runs as one, trimmed. */
export function textHash(text: string): string {
  const norm = text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();
  return createHash('sha256').update(norm).digest('base64url').slice(0, 22);
}

/** Thrown inside a send's transaction when the send would trip the burst rule (rolls it back). */
class BurstTripped extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * The burst rule of a send. A real send gets what runs inside its write transaction (write.ts): it
 * reads the window and, when this text already went to targets − 1 other targets, throws (the send is
 * rolled back; `burstRefusal` then pauses the key), else records the send — one read and one upsert,
 * no commit of their own. A dry run reads the window outside and says whether the real call would
 * pause the key. Undefined when the rule does not apply.
 */
export async function checkBurst(
  ctx: OpContext,
  actor: BotActor,
  g: ActiveGrants,
  opName: string,
  input: unknown,
): Promise<((tx: Stores, now: string) => Promise<void>) | undefined> {
  const rule = g.pauseOnBurst;
  if (!rule) return undefined;
  const subject = burstSubject(opName, input);
  if (!subject) return undefined;
  const hash = textHash(subject.text);
  const tripped = async (texts: KeyRecentTextStore, now: string): Promise<string | null> => {
    const since = new Date(Date.parse(now) - rule.windowMs).toISOString();
    const others = (await texts.targetsSince(actor.keyId, hash, since)).filter((t) => t !== subject.target);
    if (others.length + 1 < rule.targets) return null;
    const minutes = Math.round(rule.windowMs / 60_000);
    return `it sent the same text to ${others.length + 1} different channels, topics, DM rooms or users within ${minutes} min (guard rail pause_on.burst: ${rule.targets})`;
  };
  if (ctx.dryRun) {
    // A dry run changes nothing: it says that the real call would be refused and pause the key.
    const reason = await tripped(ctx.services.storage.stores.keyRecentTexts, ctx.services.clock.nowIso());
    if (reason !== null)
      throw new AppError(
        'grant_denied',
        `This call would pause this API key: ${reason}. Nothing was done (dry run)`,
        {
          grant: 'pause_on.burst',
        },
      );
    return undefined;
  }
  return async (tx: Stores, now: string) => {
    const reason = await tripped(tx.keyRecentTexts, now);
    if (reason !== null) throw new BurstTripped(reason);
    await tx.keyRecentTexts.touch(actor.keyId, hash, subject.target, now);
  };
}

/**
 * What a failed write of a key with grants answers: when the burst rule stopped it (inside its
 * transaction, so nothing was written), the key is paused and the call refused with key_paused;
 * any other error as it is.
 */
export async function burstRefusal(ctx: OpContext, err: unknown): Promise<unknown> {
  if (!(err instanceof BurstTripped) || ctx.actor.kind !== 'bot') return err;
  return keyPausedError(ctx.actor, await pauseKey(ctx.services, ctx.actor, err.reason, 'burst'));
}

/**
 * Pauses the key (if it is not already) and tells the bot's owner and the organization's admins, once:
 * a notification each, which the notifications bot relays as a DM. Returns the key's pause.
 */
export async function pauseKey(
  services: Services,
  actor: BotActor,
  reason: string,
  rule: 'budget' | 'burst',
): Promise<PausedState> {
  const p = await write(outsideRequest(services), async (tx) => {
    const paused = await tx.stores.bots.pauseKey(actor.keyId, tx.now, reason);
    if (!paused) {
      const key = await tx.stores.bots.getKey(actor.botId, actor.keyId);
      return { at: key?.paused_at ?? tx.now, reason: key?.paused_reason ?? reason, fresh: false };
    }
    const bot = await tx.stores.bots.get(actor.botId);
    const admins = await tx.stores.users.list({ orgId: actor.orgId, role: 'org_admin', limit: 50 });
    const to = new Set<string>();
    if (bot?.created_by) to.add(bot.created_by);
    for (const a of admins) if (a.status === 'active') to.add(a.id);
    const name = bot?.name ?? 'a bot';
    const title = `An API key of ${name} was paused`;
    const body =
      `Key ${actor.keyId} was paused: ${reason}. Its calls are refused (key_paused) until a manager of the bot ` +
      'resumes it: admin screen, Bots, the key, Resume.';
    const data = { bot_id: actor.botId, key_id: actor.keyId, rule };
    const rows: NotificationRow[] = [...to].map((userId) => ({
      id: newId(),
      org_id: actor.orgId,
      user_id: userId,
      kind: 'key.paused',
      title,
      body,
      data: JSON.stringify(data),
      created_at: tx.now,
      read_at: null,
    }));
    await tx.stores.notifications.insertMany(rows);
    for (const r of rows)
      tx.emit('notification.created', actor.orgId, {
        notification_id: r.id,
        user_id: r.user_id,
        kind: r.kind,
        title,
        body,
        data,
      });
    return { at: tx.now, reason, fresh: true };
  });
  if (p.fresh)
    services.toolCalls.record(actor, 'key.paused', 'ok', null, 0, {
      surface: 'guardrail',
      grant: `pause_on.${rule}`,
      reason,
    });
  return { at: p.at, reason: p.reason };
}
