import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { EventData } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { Clock } from '../runtime/clock.js';
import type { NotificationRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { DeliveredAttempt, DeliveryTarget } from '../storage/stores/deliveries.js';
import type { Stores } from '../storage/stores/index.js';
import type { AttemptResult } from './attempt.js';
import type { Claimed } from './claim.js';
import { MAX_RETRY_AFTER_MS, parseRetryAfterMs, retryDelayMs } from './schedule.js';
import { SOCKET_LOG } from './socket.js';
import type { Throughput } from './throughput.js';
import { withFields } from '../domain/objects.js';

/**
 * The record stage of the delivery worker (claim → attempt → record, worker.ts): finished attempts in,
 * the delivery's next state out, written in batches (one transaction for the attempts that ended in the
 * same turn of the event loop; up to `Throughput.recordLanes` batches at once). Each attempt is recorded
 * (time, status, duration, error, the first 1 KB of the answer) in the same transaction as the
 * delivery's next state: delivered; pending again at now + back-off (schedule.ts); or failed (the owner
 * notified). A 410 turns the bot's webhook off; `pauseAfter` failures in a row pause it.
 */

/** A finished attempt waiting to be recorded. */
export interface Finished {
  c: Claimed;
  attempt: number;
  startedAt: string;
  result: AttemptResult;
  /** Called once it is recorded (or given up at shutdown): it no longer counts against its bot's round. */
  recorded: () => void;
}

export interface RecorderOptions {
  storage: Storage;
  log: Logger;
  webhooks: Config['webhooks'];
  /** Socket attempts' own budget and wait (socket.ts). */
  sockets: Config['sockets'];
  clock: Clock;
  throughput: Throughput;
  /** Shutting down: a failed write is not tried again (the leases end and the rows are sent again). */
  stopping: () => boolean;
  /** The delivery's attempt is recorded: the worker no longer holds it. */
  released: (deliveryId: string) => void;
}

export class Recorder {
  readonly #o: RecorderOptions;
  readonly #records: Finished[] = [];
  /** Record batches being written (up to Throughput.recordLanes). */
  readonly #lanes = new Set<Promise<void>>();
  #soon = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(opts: RecorderOptions) {
    this.#o = opts;
  }

  /** Queues a finished attempt; it is written in the next batch. */
  push(f: Finished): void {
    this.#records.push(f);
    // A lane at work takes what is recorded meanwhile.
    if (this.#soon || this.#lanes.size >= this.#o.throughput.recordLanes) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      void this.flush();
    });
  }

  /** Records what is queued, in lanes; resolves when none is left (or a write failed). */
  flush(): Promise<void> {
    const lanes = this.#o.throughput.recordLanes;
    while (this.#lanes.size < lanes && this.#records.length > 0 && !this.#retry) {
      const lane: Promise<void> = this.#lane().finally(() => this.#lanes.delete(lane));
      this.#lanes.add(lane);
    }
    return Promise.all([...this.#lanes]).then(() => undefined);
  }

  /** Shutdown: no more retries of failed writes. */
  stopRetrying(): void {
    clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  /** Waits for the batches being written. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#lanes]);
  }

  /** Writes record batches until none is left (or one failed: then a retry is due in a second). */
  async #lane(): Promise<void> {
    const { storage, throughput: t, log } = this.#o;
    while (this.#records.length > 0) {
      const batch = this.#records.splice(0, t.recordBatch);
      try {
        if (!t.sync && batch.every((f) => f.result.ok && !asksSomething(f.result))) {
          // PostgreSQL, all delivered: one statement, atomic by itself (no transaction round trips).
          await this.#recordBatch(storage.stores, batch);
        } else {
          await storage.transaction(async (stores) => {
            const measured = t.measureLoop();
            await this.#recordBatch(stores, batch);
            measured();
          });
        }
      } catch (err) {
        if (this.#o.stopping()) {
          // Shutting down: not recorded, so sent again when their leases end (at least once).
          log.warn({ err }, 'could not record webhook attempts at shutdown');
          for (const f of batch) f.recorded();
          continue;
        }
        // Their leases keep them from being sent again meanwhile; try again in a second.
        this.#records.unshift(...batch);
        log.error({ err }, 'could not record webhook attempts; retrying');
        if (!this.#retry) {
          this.#retry = setTimeout(() => {
            this.#retry = undefined;
            void this.flush();
          }, 1000);
          this.#retry.unref();
        }
        return;
      }
      for (const f of batch) {
        this.#o.released(f.c.row.id);
        f.recorded();
      }
    }
  }

  async #recordBatch(stores: Stores, batch: Finished[]): Promise<void> {
    const now = this.#o.clock.nowIso();
    const delivered: DeliveredAttempt[] = [];
    for (const f of batch) {
      if (!f.result.ok) continue;
      delivered.push({
        attemptId: newId(),
        deliveryId: f.c.row.id,
        botId: f.c.row.bot_id,
        attempt: f.attempt,
        startedAt: f.startedAt,
        durationMs: f.result.durationMs,
        status: f.result.status ?? null,
        snippet: f.result.snippet ?? null,
      });
    }
    await stores.deliveries.recordDelivered(delivered, now);
    for (const f of batch) {
      if (f.result.ok) continue;
      if (f.result.socket === 'waiting' || f.result.socket === 'elsewhere')
        await recordWaiting(stores, f, now, this.#o.webhooks, this.#o.sockets);
      else await recordFailure(stores, f, now, this.#o.webhooks, this.#o.sockets);
    }
    for (const f of batch) if (asksSomething(f.result)) await honourReceiver(stores, f, now);
  }
}

/** The receiver asked for something beyond this attempt: a pause (Retry-After) or to be disabled. */
const asksSomething = (r: AttemptResult): boolean => r.retryAfter !== undefined || r.receiver === 'disable';

/** What a receiver's answer says about its endpoint as a whole (docs/WEBHOOKS.md, "Receiver control"). */
async function honourReceiver(stores: Stores, f: Finished, now: string): Promise<void> {
  const { c, result: r } = f;
  const { row, target } = c;
  if (!target || r.gone) return;
  if (r.receiver === 'disable') {
    const health = await stores.deliveries.getHealth(row.bot_id);
    if (!health?.paused_at) {
      await stores.deliveries.putHealth({
        bot_id: row.bot_id,
        consecutive_failures: health?.consecutive_failures ?? 0,
        paused_at: now,
        paused_reason: `its receiver answered webhook-delivery: disable (delivery ${row.id})`,
        updated_at: now,
      });
      await notifyOwners(
        stores,
        target,
        now,
        'webhook.paused',
        `The webhook of ${target.name} was paused by its receiver`,
        `Its receiver answered delivery ${row.id} with the header webhook-delivery: disable. Its deliveries ` +
          'are kept; resume it when the receiver wants them again.',
        row.id,
      );
    }
  }
  if (r.retryAfter !== undefined) {
    const nowMs = Date.parse(now);
    const ms = parseRetryAfterMs(r.retryAfter, nowMs);
    if (ms !== null && ms > 0) {
      const until = new Date(nowMs + Math.min(ms, MAX_RETRY_AFTER_MS)).toISOString();
      const status = r.status === null || r.status === undefined ? '' : ` with HTTP ${r.status}`;
      await stores.deliveries.hold(
        row.bot_id,
        until,
        `Retry-After: ${r.retryAfter.trim()} (answered${status})`,
        now,
      );
    }
  }
}

/** A failed attempt: the attempt row, then the delivery's next state and the webhook's health. */
/** The delivery log's word for a message its receiver dropped. */
export const ABORTED = 'aborted by the receiver (webhook-delivery: abort-message)';

/**
 * A bot with no webhook URL and no socket connected: nothing was sent, so no attempt is recorded; the
 * row waits (its `last_error` says so), looked at again after the first retry delay and woken at once
 * when one of the bot's sockets connects (`wakeWaiting`). After WORKROOM_SOCKET_WAIT it fails, quietly.
 * The bot's socket on another instance (a cluster): the row is due again in a second, for that
 * instance's worker to claim (no attempt either).
 */
async function recordWaiting(
  stores: Stores,
  { c, result }: Finished,
  now: string,
  webhooks: Config['webhooks'],
  sockets: Config['sockets'],
): Promise<void> {
  const nowMs = Date.parse(now);
  const { row } = c;
  if (nowMs - Date.parse(row.created_at) >= sockets.waitMs) {
    await stores.deliveries.update(row.id, {
      state: 'failed',
      last_error: SOCKET_LOG.gaveUp(sockets.waitMs),
      next_attempt_at: now,
      updated_at: now,
    });
    return;
  }
  const elsewhere = result.socket === 'elsewhere';
  const again = elsewhere
    ? 1000
    : Math.max(1000, Math.min(webhooks.retryDelaysMs[0] ?? 60_000, sockets.waitMs));
  await stores.deliveries.update(row.id, {
    state: 'pending',
    last_error: elsewhere ? SOCKET_LOG.elsewhere : SOCKET_LOG.waiting,
    next_attempt_at: new Date(nowMs + again).toISOString(),
    updated_at: now,
  });
}

async function recordFailure(
  stores: Stores,
  { c, attempt, startedAt, result: r }: Finished,
  now: string,
  webhooks: Config['webhooks'],
  sockets: Config['sockets'],
): Promise<void> {
  const { row, target } = c;
  await stores.deliveries.recordAttempt({
    id: newId(),
    delivery_id: row.id,
    attempt,
    started_at: startedAt,
    duration_ms: r.durationMs,
    status: r.status ?? null,
    error: r.receiver === 'abort-message' ? `${r.error ?? 'failed'}; ${ABORTED}` : (r.error ?? null),
    response_snippet: r.snippet ?? null,
  });
  // Spread last where it is used (a literal that starts with a spread is slow: domain/objects.ts).
  const common = {
    attempts: attempt,
    last_attempt_at: startedAt,
    last_status: r.status ?? null,
    updated_at: now,
  };
  if (r.receiver === 'abort-message' && !r.gone) {
    // The receiver says: drop this message. Not retried, not counted as the endpoint's failure, nobody
    // notified; the delivery log shows it aborted (redeliver still works).
    await stores.deliveries.update(row.id, {
      state: 'failed',
      last_error: ABORTED,
      next_attempt_at: now,
      ...common,
    });
    return;
  }
  if (r.gone && target) {
    // 410 Gone: the receiver says this webhook is no more. Turn it off; the rest would fail too.
    const error = 'HTTP 410 Gone: the webhook URL was removed from the bot';
    await stores.deliveries.update(row.id, {
      state: 'failed',
      last_error: error,
      next_attempt_at: now,
      ...common,
    });
    await stores.bots.update(row.bot_id, { webhook_url: null }, now);
    await stores.deliveries.failPending(row.bot_id, 'not sent: the webhook answered 410 Gone before', now);
    await notifyOwners(
      stores,
      target,
      now,
      'webhook.disabled',
      `The webhook of ${target.name} was turned off`,
      `Its receiver answered 410 Gone to delivery ${row.id}. Set a webhook URL again to resume.`,
      row.id,
    );
    return;
  }
  const nowMs = Date.parse(now);
  // A socket closed before the ack, or a lease ran out: sent again at once (the bot's next socket, or
  // its webhook), within the sockets' own budget of attempts.
  const delay = r.final
    ? null
    : r.socket === 'closed' || r.socket === 'expired'
      ? attempt < sockets.maxAttempts
        ? 0
        : null
      : retryDelayMs(attempt, webhooks.retryDelaysMs, r.retryAfter, Math.random, nowMs);
  if (delay === null) {
    await stores.deliveries.update(row.id, {
      state: 'failed',
      last_error: r.error ?? null,
      next_attempt_at: now,
      ...common,
    });
    if (target)
      await notifyOwners(
        stores,
        target,
        now,
        'webhook.failed',
        `A webhook delivery to ${target.name} failed`,
        `${row.event_type} (delivery ${row.id}) failed after ${attempt} attempt(s): ${r.error ?? 'unknown error'}. ` +
          'You can redeliver it from the delivery log.',
        row.id,
      );
  } else {
    const next = new Date(nowMs + delay).toISOString();
    await stores.deliveries.update(row.id, {
      state: 'pending',
      last_error: r.error ?? null,
      next_attempt_at: next,
      ...common,
    });
  }
  // A socket that closed or a slow ack says nothing about the bot's webhook endpoint.
  if (!target || r.final || r.socket !== undefined) return;
  const health = await stores.deliveries.countFailure(row.bot_id, now);
  const limit = webhooks.pauseAfter;
  if (limit > 0 && health.consecutive_failures >= limit && !health.paused_at) {
    await stores.deliveries.putHealth(
      withFields(health, {
        paused_at: now,
        paused_reason: `${health.consecutive_failures} failed attempts in a row`,
        updated_at: now,
      }),
    );
    await notifyOwners(
      stores,
      target,
      now,
      'webhook.paused',
      `The webhook of ${target.name} was paused`,
      `${health.consecutive_failures} attempts in a row failed (last: ${r.error ?? 'unknown'}). ` +
        'Its deliveries are kept; resume it when the receiver works again.',
      row.id,
    );
  }
}

async function notifyOwners(
  stores: Stores,
  target: DeliveryTarget,
  now: string,
  kind: string,
  title: string,
  body: string,
  deliveryId: string,
): Promise<void> {
  if (!target.created_by || !(await stores.users.get(target.created_by))) return;
  const row: NotificationRow = {
    id: newId(),
    org_id: target.org_id,
    user_id: target.created_by,
    kind,
    title,
    body,
    data: JSON.stringify({ bot_id: target.bot_id, delivery_id: deliveryId }),
    created_at: now,
    read_at: null,
  };
  await stores.notifications.insertMany([row]);
  // Internal event (never delivered to webhooks): the notifications bot relays it as a DM (bots/).
  const event: EventData<'notification.created'> = {
    notification_id: row.id,
    user_id: row.user_id,
    kind,
    title,
    body,
    data: { bot_id: target.bot_id, delivery_id: deliveryId },
  };
  await stores.events.append([
    {
      id: newId(),
      org_id: row.org_id,
      type: 'notification.created',
      data: JSON.stringify(event),
      created_at: now,
    },
  ]);
}

/**
 * Leased deliveries not attempted (or cut off by shutdown) go back to the table, due at `now`; with
 * `inOrder`, due since their event's time, so that a claim takes them before their bots' later rows.
 * Nothing is recorded: the next attempt has the same number and `webhook-id`.
 */
export async function handBack(
  storage: Storage,
  ids: string[],
  now: string,
  inOrder: boolean,
): Promise<void> {
  await storage.transaction((s) =>
    s.db
      .updateTable('webhook_deliveries')
      .set((eb) => ({ next_attempt_at: inOrder ? eb.ref('event_created_at') : eb.val(now) }))
      .where('id', 'in', ids)
      .where('state', '=', 'pending')
      .execute(),
  );
}

/**
 * One of the bot's sockets connected: its deliveries waiting for a socket (`recordWaiting`) are due
 * again, since their event's time (so a claim takes them in outbox order, before later rows); how many.
 */
export async function wakeWaiting(storage: Storage, botId: string): Promise<number> {
  const res = await storage.transaction((s) =>
    s.db
      .updateTable('webhook_deliveries')
      .set((eb) => ({ next_attempt_at: eb.ref('event_created_at') }))
      .where('bot_id', '=', botId)
      .where('state', '=', 'pending')
      .where('last_error', '=', SOCKET_LOG.waiting)
      .executeTakeFirst(),
  );
  return Number(res.numUpdatedRows);
}
