import type { Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { nowIso } from '../domain/ids.js';
import type { ScheduledJobRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { Service } from '../runtime/lifecycle.js';
import type { JobHandler, ScheduledJob } from './job.js';

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
 */

/** Finished jobs are deleted this long after their last change. */
export const JOB_RETENTION_MS = 30 * 86_400_000;

export interface SchedulerOptions {
  storage: Storage;
  log: Logger;
  config: Config['scheduler'];
  handler: JobHandler;
}

export class Scheduler implements Service {
  readonly name = 'scheduler';
  readonly #o: SchedulerOptions;
  readonly #active = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  #claiming: Promise<void> | undefined;
  #again = false;
  #stopping = false;
  #soon = false;
  #poll: NodeJS.Timeout | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #dueTimer: NodeJS.Timeout | undefined;
  /** When the due timer fires (epoch ms), if armed. */
  #dueAt = Infinity;

  constructor(opts: SchedulerOptions) {
    this.#o = opts;
  }

  get maxAttempts(): number {
    return this.#o.config.retryDelaysMs.length + 1;
  }

  start(): void {
    this.#poll = setInterval(() => this.wake(), this.#o.config.pollMs);
    this.#poll.unref();
    this.#pruneTimer = setInterval(() => void this.prune(), 3_600_000);
    this.#pruneTimer.unref();
    this.wake();
  }

  /** A job was scheduled in this process (operations call it through `Services.jobs`). */
  scheduled(runAt: string): void {
    if (this.#stopping) return;
    const at = Date.parse(runAt);
    if (Number.isNaN(at) || at <= Date.now()) this.wake();
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
    clearInterval(this.#poll);
    clearInterval(this.#pruneTimer);
    clearTimeout(this.#dueTimer);
    await this.#claiming;
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
    const before = new Date(Date.now() - JOB_RETENTION_MS).toISOString();
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
    const now = Date.now();
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
      this.#o.log.warn(
        { job: j.id, bot: j.bot_id, kind: j.kind, error: j.last_error },
        'scheduled job not run',
      );
    }
    for (const row of claimed) this.#start(row);
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
    const wait = at - Date.now();
    if (wait <= 0) {
      this.#wakeSoon();
      return;
    }
    if (wait >= this.#o.config.pollMs) return; // the poll comes first
    if (this.#dueTimer && this.#dueAt <= at && this.#dueAt > Date.now()) return; // an earlier one is armed
    clearTimeout(this.#dueTimer);
    this.#dueAt = at;
    this.#dueTimer = setTimeout(() => {
      this.#dueTimer = undefined;
      this.#dueAt = Infinity;
      this.wake();
    }, wait + 1);
    this.#dueTimer.unref();
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
          nowIso(),
          bot ? 'failed' : 'cancelled',
        ),
      );
      return;
    }

    // Keep the claim while the handler runs.
    const renewEvery = Math.max(200, Math.floor(c.leaseMs / 3));
    const renew = setInterval(() => {
      this.#o.storage
        .transaction((s) =>
          s.scheduledJobs.renew(row.id, row.attempts, new Date(Date.now() + c.leaseMs).toISOString()),
        )
        .then((held) => {
          if (!held) abort.abort(new Error('the claim on the job was lost'));
        })
        .catch((err: unknown) => this.#o.log.warn({ err, job: row.id }, 'could not renew a job lease'));
    }, renewEvery);
    renew.unref();
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
      clearInterval(renew);
      clearTimeout(timeout);
    }
    if (this.#stopping && abort.signal.aborted) return; // shutdown: the lease hands it on
    const now = nowIso();
    if (error === undefined) {
      // False when the handler completed it itself (job.due) or the claim was lost: nothing to do.
      await this.#o.storage.transaction((s) => s.scheduledJobs.complete(row.id, row.attempts, now));
      return;
    }
    const delay = c.retryDelaysMs[row.attempts - 1];
    const retryAt =
      delay === undefined
        ? null
        : new Date(Date.now() + Math.round(delay * (1 + Math.random() * 0.1))).toISOString();
    this.#o.log.warn(
      { job: row.id, kind: row.kind, attempt: row.attempts, err: error, retryAt },
      'scheduled job failed',
    );
    await this.#o.storage.transaction((s) =>
      s.scheduledJobs.fail(row.id, row.attempts, error.slice(0, 1000), retryAt, now),
    );
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
