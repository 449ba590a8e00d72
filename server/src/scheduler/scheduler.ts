import type { Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { ScheduledJobRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import { systemClock, type Clock, type ClockTimer } from '../runtime/clock.js';
import type { Service } from '../runtime/lifecycle.js';
import type { JobHandler, ScheduledJob } from './job.js';
import { noMetrics, type MetricsHooks } from '../metrics/hooks.js';

/**
 * The durable scheduler (docs/SCHEDULER.md): jobs are rows of `scheduled_jobs`, so they survive
 * restarts, and are claimed like webhook deliveries, with a lease (and FOR UPDATE SKIP LOCKED on
 * PostgreSQL), so several instances share them and a crashed instance's claims are taken over.
 *
 *   pending ──due, claim (lease, attempt+1)──▶ running ──handler resolves──▶ done
 *      ▲                                          │ handler throws / times out, attempts left: pending
 *      └──────────────────────────────────────────┤   at now + retry delay
 *                                                 │ none left: failed (last_error)
 *   pending, due more than the grace ago ─────────┴──▶ failed ('missed')
 *
 * The loop sleeps until the earliest pending run_at (a timer), is woken at once when this process
 * schedules a job (`scheduled()`), and polls every WORKROOM_SCHEDULER_POLL as a safety net (jobs
 * scheduled by other instances, clock jumps). A claim's lease is renewed while its handler runs, so
 * only a dead runner's jobs are taken over. Every change of a claimed job is fenced by its attempt
 * number (a runner that lost its claim changes nothing).
 *
 * Time: due times, leases, the grace, retry times and the poll, due and renewal timers are read from
 * `clock` (runtime/clock.ts: business time, which a test can move); a handler's time-out and the
 * shutdown deadline measure work and stay on real time.
 */

/** Finished jobs are deleted this long after their last change. */
export const JOB_RETENTION_MS = 30 * 86_400_000;

export interface SchedulerOptions {
  storage: Storage;
  log: Logger;
  config: Config['scheduler'];
  handler: JobHandler;
  /** Business time; default: the system clock. */
  clock?: Clock;
  /** Counts jobs started (and how late) and how their attempts ended (docs/METRICS.md). */
  metrics?: MetricsHooks;
  /** Whether this instance does the singleton work (pruning; scheduler/leader.ts); default: yes. */
  isLeader?: () => boolean;
}

export class Scheduler implements Service {
  readonly name = 'scheduler';
  readonly #o: SchedulerOptions;
  readonly #clock: Clock;
  readonly #metrics: MetricsHooks;
  readonly #active = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  #claiming: Promise<void> | undefined;
  #again = false;
  #stopping = false;
  #soon = false;
  #poll: ClockTimer | undefined;
  #pruneTimer: ClockTimer | undefined;
  #dueTimer: ClockTimer | undefined;
  /** When the due timer fires (epoch ms), if armed. */
  #dueAt = Infinity;

  constructor(opts: SchedulerOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#metrics = opts.metrics ?? noMetrics;
  }

  get maxAttempts(): number {
    return this.#o.config.retryDelaysMs.length + 1;
  }

  start(): void {
    this.#poll = this.#clock.setInterval(() => this.wake(), this.#o.config.pollMs);
    this.#pruneTimer = this.#clock.setInterval(() => {
      if (this.#o.isLeader?.() ?? true) void this.prune(); // once for all instances
    }, 3_600_000);
    this.wake();
  }

  /** A job was scheduled in this process (operations call it through `Services.jobs`). */
  scheduled(runAt: string): void {
    if (this.#stopping) return;
    const at = Date.parse(runAt);
    if (Number.isNaN(at) || at <= this.#clock.now()) this.wake();
    else this.#arm(at);
  }

  /** Claims and runs due jobs now (coalesces with a claim in progress). */
  wake(): void {
    if (this.#stopping) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    this.#claiming = this.#claimLoop()
      .catch((err: unknown) => this.#o.log.error({ err }, 'scheduler claim failed'))
      .finally(() => (this.#claiming = undefined));
  }

  /** Jobs this process is running now (ids). */
  running(): string[] {
    return [...this.#active.keys()];
  }

  /**
   * Stops claiming and waits for the handlers running until `deadlineMs`; handlers still running then
   * are aborted (signal) and their jobs left claimed: their leases run out and the next start (or
   * another instance) runs them again, which is why handlers must be idempotent.
   */
  async drain(deadlineMs: number): Promise<void> {
    this.#stopping = true;
    this.#clock.clearTimeout(this.#poll);
    this.#clock.clearTimeout(this.#pruneTimer);
    this.#clock.clearTimeout(this.#dueTimer);
    await this.#claiming;
    // The deadline is the lifecycle's, in real time.
    const left = Math.max(0, deadlineMs - Date.now());
    const all = [...this.#active.values()];
    await Promise.race([
      Promise.allSettled(all.map((a) => a.promise)),
      new Promise((r) => setTimeout(r, left).unref()),
    ]);
    for (const a of this.#active.values()) a.abort.abort(new Error('the server is stopping'));
  }

  async stop(): Promise<void> {
    if (!this.#stopping) await this.drain(Date.now());
  }

  /** Deletes finished jobs older than the retention, a batch at a time. */
  async prune(): Promise<number> {
    const before = new Date(this.#clock.now() - JOB_RETENTION_MS).toISOString();
    let total = 0;
    try {
      for (;;) {
        const n = await this.#o.storage.transaction((s) => s.scheduledJobs.prune(before, 1000));
        total += n;
        if (n < 1000 || this.#stopping) break;
      }
    } catch (err) {
      this.#o.log.error({ err }, 'scheduled job pruning failed');
    }
    return total;
  }

  async #claimLoop(): Promise<void> {
    do {
      this.#again = false;
      for (;;) {
        const free = this.#o.config.concurrency - this.#active.size;
        if (free <= 0 || this.#stopping) return;
        const n = await this.#claimOnce(free);
        if (n < free) break;
      }
    } while (this.#again && !this.#stopping);
    await this.#armNext();
  }

  async #claimOnce(limit: number): Promise<number> {
    const c = this.#o.config;
    const now = this.#clock.now();
    const { expired, claimed } = await this.#o.storage.transaction(async (stores) => {
      const args = {
        now: new Date(now).toISOString(),
        cutoff: new Date(now - c.graceMs).toISOString(),
        maxAttempts: this.maxAttempts,
      };
      const expired = await stores.scheduledJobs.expire({
        ...args,
        missedError: `missed: not run within the grace period (${Math.round(c.graceMs / 1000)} s) after run_at; the server was not running`,
        abandonedError: 'abandoned: the last attempt did not finish (the process running it stopped)',
        limit: 500,
      });
      const claimed = await stores.scheduledJobs.claim({
        ...args,
        leaseUntil: new Date(now + c.leaseMs).toISOString(),
        limit,
      });
      return { expired, claimed };
    });
    for (const j of expired) {
      this.#metrics.jobFinished(j.last_error?.startsWith('missed') ? 'missed' : 'abandoned');
      this.#o.log.warn(
        { job: j.id, bot: j.bot_id, kind: j.kind, error: j.last_error },
        'scheduled job not run',
      );
    }
    for (const row of claimed) {
      this.#metrics.jobStarted((now - Date.parse(row.run_at)) / 1000);
      this.#start(row);
    }
    return claimed.length;
  }

  /** Sleeps until the earliest pending job if it is due before the next poll. */
  async #armNext(): Promise<void> {
    if (this.#stopping) return;
    const next = await this.#o.storage.stores.scheduledJobs.nextRunAt();
    if (next) this.#arm(Date.parse(next));
  }

  #arm(at: number): void {
    if (this.#stopping || Number.isNaN(at)) return;
    const wait = at - this.#clock.now();
    if (wait <= 0) {
      this.#wakeSoon();
      return;
    }
    if (wait >= this.#o.config.pollMs) return; // the poll comes first
    if (this.#dueTimer && this.#dueAt <= at && this.#dueAt > this.#clock.now()) return; // an earlier one is armed
    this.#clock.clearTimeout(this.#dueTimer);
    this.#dueAt = at;
    this.#dueTimer = this.#clock.setTimeout(() => {
      this.#dueTimer = undefined;
      this.#dueAt = Infinity;
      this.wake();
    }, wait + 1);
  }

  #wakeSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.wake();
    });
  }

  #start(row: Selectable<ScheduledJobRow>): void {
    const abort = new AbortController();
    const promise = this.#run(row, abort)
      .catch((err: unknown) => this.#o.log.error({ err, job: row.id }, 'scheduled job bookkeeping failed'))
      .finally(() => {
        this.#active.delete(row.id);
        this.#wakeSoon();
      });
    this.#active.set(row.id, { promise, abort });
  }

  async #run(row: Selectable<ScheduledJobRow>, abort: AbortController): Promise<void> {
    const c = this.#o.config;
    const stores = this.#o.storage.stores;
    const job: ScheduledJob = {
      id: row.id,
      bot_id: row.bot_id,
      org_id: row.org_id,
      kind: row.kind,
      payload: parsePayload(row.payload),
      run_at: row.run_at,
      attempts: row.attempts,
      dedupe_key: row.dedupe_key,
    };
    const bot = await stores.bots.get(row.bot_id);
    if (!bot || bot.status !== 'active') {
      // A deleted bot's jobs end; a disabled bot's fail (not retried: it may stay disabled for long).
      await this.#o.storage.transaction((s) =>
        s.scheduledJobs.fail(
          row.id,
          row.attempts,
          bot ? 'the bot is disabled; not run' : 'the bot was deleted; not run',
          null,
          this.#clock.nowIso(),
          bot ? 'failed' : 'cancelled',
        ),
      );
      this.#metrics.jobFinished(bot ? 'failed' : 'cancelled');
      return;
    }

    // Keep the claim while the handler runs.
    const renewEvery = Math.max(200, Math.floor(c.leaseMs / 3));
    const renew = this.#clock.setInterval(() => {
      this.#o.storage
        .transaction((s) =>
          s.scheduledJobs.renew(row.id, row.attempts, new Date(this.#clock.now() + c.leaseMs).toISOString()),
        )
        .then((held) => {
          if (!held) abort.abort(new Error('the claim on the job was lost'));
        })
        .catch((err: unknown) => this.#o.log.warn({ err, job: row.id }, 'could not renew a job lease'));
    }, renewEvery);
    let timeout: NodeJS.Timeout | undefined;
    let error: string | undefined;
    try {
      const timedOut = new Promise<never>((_, reject) => {
        timeout = setTimeout(() => {
          const err = new Error(`timed out after ${c.jobTimeoutMs} ms`);
          abort.abort(err);
          reject(err);
        }, c.jobTimeoutMs);
        timeout.unref();
      });
      await Promise.race([this.#o.handler.run(job, abort.signal), timedOut]);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    } finally {
      this.#clock.clearTimeout(renew);
      clearTimeout(timeout);
    }
    if (this.#stopping && abort.signal.aborted) return; // shutdown: the lease hands it on
    const now = this.#clock.nowIso();
    if (error === undefined) {
      // False when the handler completed it itself (job.due) or the claim was lost: nothing to do.
      await this.#o.storage.transaction((s) => s.scheduledJobs.complete(row.id, row.attempts, now));
      this.#metrics.jobFinished('succeeded');
      return;
    }
    const delay = c.retryDelaysMs[row.attempts - 1];
    const retryAt =
      delay === undefined
        ? null
        : new Date(this.#clock.now() + Math.round(delay * (1 + Math.random() * 0.1))).toISOString();
    this.#o.log.warn(
      { job: row.id, kind: row.kind, attempt: row.attempts, err: error, retryAt },
      'scheduled job failed',
    );
    await this.#o.storage.transaction((s) =>
      s.scheduledJobs.fail(row.id, row.attempts, error.slice(0, 1000), retryAt, now),
    );
    this.#metrics.jobFinished(retryAt === null ? 'failed' : 'retrying');
  }
}

function parsePayload(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
