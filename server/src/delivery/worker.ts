import { setMaxListeners } from 'node:events';
import type { Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { newId, nowIso } from '../domain/ids.js';
import { decryptSecret } from '../domain/secrets.js';
import type { DeliveryRow, NotificationRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { DeliveryTarget } from '../storage/stores/deliveries.js';
import type { Stores } from '../storage/stores/index.js';
import { OutboundError, type OutboundClient } from './outbound.js';
import { retryDelayMs } from './schedule.js';
import { signDelivery } from './sign.js';

/**
 * The webhook worker: a durable state machine over `webhook_deliveries` (Svix's worker is the model).
 *
 *   pending ──claim (lease)──▶ sending ──2xx──▶ delivered
 *      ▲                          │ failure, retries left: pending at now + delay (jitter, Retry-After)
 *      └──────────────────────────┤ failure, none left / 410 / bot gone: failed (+ owners notified)
 *
 * "sending" is not a stored state: a claim moves next_attempt_at to the end of a lease. If the process
 * dies mid-attempt, nothing is recorded and the delivery is simply due again when the lease ends: at
 * least once, and every attempt carries the delivery id as `webhook-id`, so receivers drop duplicates.
 * Each finished attempt is recorded (time, status, duration, error, the first 1 KB of the answer) in
 * the same transaction as the delivery's next state.
 *
 * Isolation: attempts in flight are bounded overall and per bot endpoint, and a claim never takes a
 * bot's deliveries beyond its free slots, so a receiver that hangs holds at most its own slots (each
 * for at most the time-out) while every other bot's deliveries keep flowing.
 */

export interface WorkerOptions {
  storage: Storage;
  log: Logger;
  webhooks: Config['webhooks'];
  encryptionKey: Buffer;
  client: OutboundClient;
  /** Fallback poll for due retries and work of other instances. */
  pollMs?: number;
}

const SNIPPET_BYTES = 1024;

export class DeliveryWorker {
  readonly #o: WorkerOptions;
  readonly #pollMs: number;
  readonly #leaseMs: number;
  /** Claimed, not yet finished, per bot (running or waiting for a slot of that bot). */
  readonly #perBot = new Map<string, { running: number; queue: Claimed[] }>();
  #held = 0;
  readonly #active = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #claiming: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #dueTimer: NodeJS.Timeout | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #stopping = false;
  #soon = false;

  constructor(opts: WorkerOptions) {
    this.#o = opts;
    this.#pollMs = opts.pollMs ?? 500;
    // Every attempt in flight listens on the one shutdown signal (up to WORKROOM_WEBHOOK_CONCURRENCY).
    setMaxListeners(0, this.#abort.signal);
    // Long enough that a live worker always records before its claim runs out: the time-out, plus
    // the wait of a delivery queued behind its bot's other slots (one more time-out), plus slack.
    this.#leaseMs = 2 * opts.webhooks.timeoutMs + 5_000;
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#pollMs);
    this.#timer.unref();
    const pruneEvery = Math.min(60_000, Math.max(1000, this.#o.webhooks.retentionMs / 10));
    this.#pruneTimer = setInterval(() => void this.prune(), pruneEvery);
    this.#pruneTimer.unref();
    this.wake();
  }

  /** Look for due deliveries now (new deliveries, a redelivery, a resumed webhook). */
  wake(): void {
    if (this.#stopping) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    this.#claiming = this.#claimLoop()
      .catch((err: unknown) => this.#o.log.error({ err }, 'webhook claim failed'))
      .finally(() => (this.#claiming = undefined));
  }

  /** After an attempt ends: attempts that end in the same turn share one claim. */
  #wakeSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.wake();
    });
  }

  /**
   * Stops claiming and waits for attempts in flight until `deadlineMs` (epoch ms); then cancels the rest
   * and hands their deliveries back (due now), so that the next start sends them at once.
   */
  async drain(deadlineMs: number): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#timer);
    clearInterval(this.#pruneTimer);
    clearTimeout(this.#dueTimer);
    await this.#claiming;
    const queued = [...this.#perBot.values()].flatMap((b) => b.queue.splice(0));
    const left = Math.max(0, deadlineMs - Date.now());
    await Promise.race([
      Promise.allSettled([...this.#active]),
      new Promise((r) => setTimeout(r, left).unref()),
    ]);
    this.#abort.abort();
    await Promise.allSettled([...this.#active]);
    await this.#release(queued.map((c) => c.row.id));
  }

  async stop(): Promise<void> {
    if (!this.#stopping) await this.drain(Date.now());
  }

  /** Deletes delivered and failed deliveries older than the retention, a batch at a time. */
  async prune(): Promise<number> {
    const before = new Date(Date.now() - this.#o.webhooks.retentionMs).toISOString();
    let total = 0;
    try {
      for (;;) {
        const n = await this.#o.storage.transaction((s) => s.deliveries.prune(before, 1000));
        total += n;
        if (n < 1000 || this.#stopping) break;
      }
    } catch (err) {
      this.#o.log.error({ err }, 'webhook delivery pruning failed');
    }
    return total;
  }

  async #claimLoop(): Promise<void> {
    do {
      this.#again = false;
      for (;;) {
        const free = this.#o.webhooks.concurrency - this.#held;
        if (free <= 0 || this.#stopping) return;
        const n = await this.#claimOnce(free);
        if (n < free) break;
      }
    } while (this.#again && !this.#stopping);
    await this.#armDueTimer();
  }

  async #claimOnce(limit: number): Promise<number> {
    const perBot = this.#o.webhooks.perEndpointConcurrency;
    const busyBots = [...this.#perBot]
      .filter(([, b]) => b.running + b.queue.length >= perBot)
      .map(([id]) => id);
    const now = Date.now();
    const claimed = await this.#o.storage.transaction(async (stores) => {
      const rows = await stores.deliveries.claim({
        now: new Date(now).toISOString(),
        leaseUntil: new Date(now + this.#leaseMs).toISOString(),
        limit,
        perBot,
        busyBots,
      });
      if (rows.length === 0) return [];
      const data = await stores.deliveries.eventData(
        rows.map((r) => r.event_seq).filter((s): s is number => s !== null),
      );
      const targets = await stores.deliveries.targets([...new Set(rows.map((r) => r.bot_id))]);
      return rows.map((row) => ({
        row,
        data: row.event_seq !== null ? (data.get(row.event_seq) ?? 'null') : (row.payload ?? 'null'),
        target: targets.get(row.bot_id),
      }));
    });
    for (const c of claimed) this.#enqueue(c);
    return claimed.length;
  }

  /** Sleeps until the earliest future retry (the poll is the fallback). */
  async #armDueTimer(): Promise<void> {
    if (this.#stopping) return;
    const next = await this.#o.storage.stores.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('at'))
      .where('state', '=', 'pending')
      .executeTakeFirst();
    const at = next?.at ? Date.parse(next.at) : NaN;
    if (Number.isNaN(at)) return;
    const wait = at - Date.now();
    if (wait <= 0 || wait >= this.#pollMs) return;
    clearTimeout(this.#dueTimer);
    this.#dueTimer = setTimeout(() => this.wake(), wait + 1);
    this.#dueTimer.unref();
  }

  #enqueue(c: Claimed): void {
    this.#held++;
    const b = this.#perBot.get(c.row.bot_id) ?? { running: 0, queue: [] };
    this.#perBot.set(c.row.bot_id, b);
    b.queue.push(c);
    this.#startNext(c.row.bot_id);
  }

  #startNext(botId: string): void {
    const b = this.#perBot.get(botId);
    if (!b) return;
    while (b.running < this.#o.webhooks.perEndpointConcurrency && b.queue.length > 0 && !this.#stopping) {
      const c = b.queue.shift()!;
      b.running++;
      const p = this.#attempt(c)
        .catch((err: unknown) => this.#o.log.error({ err, delivery: c.row.id }, 'webhook attempt failed'))
        .finally(() => {
          this.#active.delete(p);
          b.running--;
          this.#held--;
          if (b.running === 0 && b.queue.length === 0) this.#perBot.delete(botId);
          this.#startNext(botId);
          this.#wakeSoon();
        });
      this.#active.add(p);
    }
  }

  async #attempt({ row, data, target }: Claimed): Promise<void> {
    const startedAt = nowIso();
    const attempt = row.attempts + 1;
    let result: AttemptResult;
    const gone = !target || target.deleted_at !== null || target.status !== 'active';
    if (gone) {
      result = { final: true, durationMs: 0, error: 'the bot is disabled or deleted; not sent' };
    } else if (!target.webhook_url) {
      result = { final: true, durationMs: 0, error: 'the bot has no webhook URL; not sent' };
    } else if (!target.secret_encrypted) {
      result = { durationMs: 0, error: 'the bot has no webhook secret (POST /api/bots/{id}/webhook-secret)' };
    } else {
      result = await this.#send(row, data, target, target.webhook_url, target.secret_encrypted);
      if (result.cancelled) {
        await this.#release([row.id]);
        return;
      }
    }
    await this.#o.storage.transaction((stores) =>
      this.#record(stores, row, target, attempt, startedAt, result),
    );
  }

  async #send(
    row: Selectable<DeliveryRow>,
    data: string,
    target: DeliveryTarget,
    url: string,
    secretEncrypted: string,
  ): Promise<AttemptResult> {
    const signed = signDelivery({
      secret: decryptSecret(secretEncrypted, this.#o.encryptionKey),
      webhookId: row.id,
      timestampSeconds: Math.floor(Date.now() / 1000),
      envelope: {
        event_type: row.event_type,
        timestamp: row.event_created_at,
        bot_id: target.bot_id,
        data: JSON.parse(data) as unknown,
        event_id: row.event_id,
      },
    });
    const t0 = performance.now();
    try {
      const res = await this.#o.client.post(url, signed.body, signed.headers, { signal: this.#abort.signal });
      const ok = res.status >= 200 && res.status < 300;
      return {
        status: res.status,
        durationMs: res.durationMs,
        snippet: snippet(res.body),
        ok,
        gone: res.status === 410,
        retryAfter: res.status === 429 || res.status === 503 ? res.headers['retry-after'] : undefined,
        error: ok ? undefined : `HTTP ${res.status}`,
      };
    } catch (err) {
      const durationMs = Math.round(performance.now() - t0);
      if (this.#abort.signal.aborted) return { durationMs, cancelled: true };
      const error = err instanceof OutboundError ? `${err.kind}: ${err.message}` : `error: ${String(err)}`;
      return { durationMs, error };
    }
  }

  async #record(
    stores: Stores,
    row: Selectable<DeliveryRow>,
    target: DeliveryTarget | undefined,
    attempt: number,
    startedAt: string,
    r: AttemptResult,
  ): Promise<void> {
    const now = nowIso();
    await stores.deliveries.recordAttempt({
      id: newId(),
      delivery_id: row.id,
      attempt,
      started_at: startedAt,
      duration_ms: r.durationMs,
      status: r.status ?? null,
      error: r.error ?? null,
      response_snippet: r.snippet ?? null,
    });
    const common = {
      attempts: attempt,
      last_attempt_at: startedAt,
      last_status: r.status ?? null,
      updated_at: now,
    };
    if (r.ok) {
      await stores.deliveries.markDelivered(row, attempt, startedAt, r.status!, now);
      return;
    }
    if (r.gone && target) {
      // 410 Gone: the receiver says this webhook is no more. Turn it off; the rest would fail too.
      const error = 'HTTP 410 Gone: the webhook URL was removed from the bot';
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'failed',
        last_error: error,
        next_attempt_at: now,
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
    const delay = r.final ? null : retryDelayMs(attempt, this.#o.webhooks.retryDelaysMs, r.retryAfter);
    if (delay === null) {
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'failed',
        last_error: r.error ?? null,
        next_attempt_at: now,
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
      const next = new Date(Date.now() + delay).toISOString();
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'pending',
        last_error: r.error ?? null,
        next_attempt_at: next,
      });
    }
    if (!target || r.final) return;
    const health = await stores.deliveries.countFailure(row.bot_id, now);
    const limit = this.#o.webhooks.pauseAfter;
    if (limit > 0 && health.consecutive_failures >= limit && !health.paused_at) {
      await stores.deliveries.putHealth({
        ...health,
        paused_at: now,
        paused_reason: `${health.consecutive_failures} failed attempts in a row`,
        updated_at: now,
      });
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

  /** Makes claimed deliveries due again now (shutdown, cancelled attempts). */
  async #release(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      const now = nowIso();
      await this.#o.storage.transaction((s) =>
        s.db
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: now })
          .where('id', 'in', ids)
          .where('state', '=', 'pending')
          .execute(),
      );
    } catch (err) {
      // Their leases run out anyway; they are only sent a little later.
      this.#o.log.warn({ err }, 'could not hand back claimed deliveries');
    }
  }
}

interface Claimed {
  row: Selectable<DeliveryRow>;
  /** The event's data as JSON text. */
  data: string;
  target: DeliveryTarget | undefined;
}

interface AttemptResult {
  durationMs: number;
  status?: number;
  ok?: boolean;
  gone?: boolean;
  /** No retry: the bot cannot receive anything. */
  final?: boolean;
  cancelled?: boolean;
  retryAfter?: string | undefined;
  error?: string | undefined;
  snippet?: string;
}

function snippet(body: string): string {
  const b = Buffer.from(body, 'utf8');
  return b.length <= SNIPPET_BYTES ? body : b.subarray(0, SNIPPET_BYTES).toString('utf8');
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
}
