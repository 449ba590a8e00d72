import { PostgresAdapter, sql, type RawBuilder, type Selectable } from 'kysely';
import type { ScheduledJobRow } from '../schema.js';
import type { Executor } from './executor.js';

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * The ids an `update … where id in (…)` changes, picked once. On PostgreSQL the pick (`locked`, which
 * locks its rows SKIP LOCKED) is a materialized CTE: as a subquery of `id in (…)` the planner may run it
 * again for each row it joins (it did once statistics existed), and each run can pick other rows — 17
 * jobs claimed for a limit of 8. SQLite (one writer, no row locks) runs `plain` as the subquery.
 */
function pickedOnce(
  locked: RawBuilder<unknown> | undefined,
  plain: RawBuilder<unknown>,
): { head: RawBuilder<unknown>; ids: RawBuilder<unknown> } {
  return locked === undefined
    ? { head: sql``, ids: plain }
    : { head: sql`with picked as materialized (${locked}) `, ids: sql`select id from picked` };
}

export type JobState = ScheduledJobRow['state'];
/** States in which a job still counts toward a bot's limit (it will run, or is running). */
export const OPEN_JOB_STATES: readonly JobState[] = ['pending', 'running'];

/**
 * The durable scheduler's jobs (docs/SCHEDULER.md): a job is `pending` until due, then claimed
 * (`running`, with a lease and one more attempt), then `done`, back to `pending` for a retry, `failed`
 * or `cancelled`. Every change of a claimed job is fenced by its attempt number: a runner whose claim
 * was taken over (its lease ran out) can no longer change the job.
 */
export class ScheduledJobStore {
  constructor(private readonly db: Executor) {}

  /**
   * Locks the bot's row until the transaction ends, on PostgreSQL, so that per-bot limits (counted
   * then inserted) hold under concurrent requests; SQLite has one writer anyway.
   */
  async lockBot(botId: string): Promise<void> {
    if (!isPostgres(this.db)) return;
    await this.db.selectFrom('bots').select('id').where('id', '=', botId).forNoKeyUpdate().execute();
  }

  /** Inserts a job; false when the bot already has a job with its dedupe_key (nothing inserted). */
  async insert(row: ScheduledJobRow): Promise<boolean> {
    const r = await this.db
      .insertInto('scheduled_jobs')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  get(id: string): Promise<Selectable<ScheduledJobRow> | undefined> {
    return this.db.selectFrom('scheduled_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  byDedupeKey(botId: string, dedupeKey: string): Promise<Selectable<ScheduledJobRow> | undefined> {
    return this.db
      .selectFrom('scheduled_jobs')
      .selectAll()
      .where('bot_id', '=', botId)
      .where('dedupe_key', '=', dedupeKey)
      .executeTakeFirst();
  }

  /** Jobs of a bot that will still run (pending or running). */
  async countOpen(botId: string): Promise<number> {
    const r = await this.db
      .selectFrom('scheduled_jobs')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('bot_id', '=', botId)
      .where('state', 'in', OPEN_JOB_STATES)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** A bot's jobs in run_at order (then id), optionally of one state, after a (run_at, id) cursor. */
  listForBot(
    botId: string,
    opts: { state?: JobState | undefined; after?: { run_at: string; id: string } | undefined; limit: number },
  ): Promise<Selectable<ScheduledJobRow>[]> {
    let q = this.db.selectFrom('scheduled_jobs').selectAll().where('bot_id', '=', botId);
    if (opts.state) q = q.where('state', '=', opts.state);
    const after = opts.after;
    if (after) {
      q = q.where((eb) =>
        eb.or([
          eb('run_at', '>', after.run_at),
          eb.and([eb('run_at', '=', after.run_at), eb('id', '>', after.id)]),
        ]),
      );
    }
    return q.orderBy('run_at').orderBy('id').limit(opts.limit).execute();
  }

  /** Cancels a pending job of a bot; the job as it is afterwards (undefined: no such job). */
  async cancel(botId: string, id: string, now: string): Promise<Selectable<ScheduledJobRow> | undefined> {
    await this.db
      .updateTable('scheduled_jobs')
      .set({ state: 'cancelled', lease_until: null, updated_at: now, done_at: now })
      .where('id', '=', id)
      .where('bot_id', '=', botId)
      .where('state', '=', 'pending')
      .execute();
    return this.db
      .selectFrom('scheduled_jobs')
      .selectAll()
      .where('id', '=', id)
      .where('bot_id', '=', botId)
      .executeTakeFirst();
  }

  /**
   * Ends the jobs that must not run any more, before a claim: pending jobs due more than the grace
   * period ago (`missed`: the server was not running in time), and claimed jobs whose lease ran out
   * when they were that late or had used their last attempt (`abandoned`). On PostgreSQL rows another
   * instance is claiming are skipped.
   */
  async expire(a: {
    now: string;
    /** run_at before this is too late (now - grace). */
    cutoff: string;
    maxAttempts: number;
    missedError: string;
    abandonedError: string;
    limit: number;
  }): Promise<Selectable<ScheduledJobRow>[]> {
    const pick = sql`
      select id from scheduled_jobs
      where (state = 'pending' and run_at < ${a.cutoff})
         or (state = 'running' and lease_until <= ${a.now} and (run_at < ${a.cutoff} or attempts >= ${a.maxAttempts}))
      order by run_at limit ${a.limit}`;
    const { head, ids } = pickedOnce(
      isPostgres(this.db) ? sql`${pick} for update skip locked` : undefined,
      pick,
    );
    const res = await sql<Selectable<ScheduledJobRow>>`
      ${head}update scheduled_jobs set
        state = 'failed',
        last_error = case when run_at < ${a.cutoff} then ${a.missedError} else ${a.abandonedError} end,
        lease_until = null, updated_at = ${a.now}, done_at = ${a.now}
      where id in (${ids}) returning *`.execute(this.db);
    return res.rows;
  }

  /**
   * Claims due jobs, earliest first: pending ones due by `now`, and running ones whose lease ran out
   * (their runner died); none due before `cutoff` (those are expired, see `expire`). Each becomes
   * `running` until `leaseUntil`, with one more attempt. On PostgreSQL, rows another instance is
   * claiming are skipped (FOR UPDATE SKIP LOCKED), so several instances share the work and never run
   * one claim twice; SQLite has one writer.
   */
  async claim(a: {
    now: string;
    leaseUntil: string;
    cutoff: string;
    maxAttempts: number;
    limit: number;
  }): Promise<Selectable<ScheduledJobRow>[]> {
    // PostgreSQL: migration 0024's function, one ordered read per state up to the limit, each locked
    // SKIP LOCKED (an OR of the two states read and sorted every due job for each claim).
    const { head, ids } = pickedOnce(
      isPostgres(this.db)
        ? sql`select id from workroom_claimable_jobs(${a.now}, ${a.cutoff}, ${a.maxAttempts}, ${a.limit})`
        : undefined,
      sql`
      select id from scheduled_jobs
      where ((state = 'pending' and run_at <= ${a.now})
          or (state = 'running' and lease_until <= ${a.now} and attempts < ${a.maxAttempts}))
        and run_at >= ${a.cutoff}
      order by run_at, id limit ${a.limit}`,
    );
    const res = await sql<Selectable<ScheduledJobRow>>`
      ${head}update scheduled_jobs set state = 'running', lease_until = ${a.leaseUntil},
        attempts = attempts + 1, updated_at = ${a.now}
      where id in (${ids}) returning *`.execute(this.db);
    return res.rows.sort((x, y) => (x.run_at < y.run_at ? -1 : x.run_at > y.run_at ? 1 : 0));
  }

  /** Extends the lease of a claim still held (same attempt); false when the claim was lost. */
  async renew(id: string, attempt: number, leaseUntil: string): Promise<boolean> {
    const r = await this.db
      .updateTable('scheduled_jobs')
      .set({ lease_until: leaseUntil })
      .where('id', '=', id)
      .where('state', '=', 'running')
      .where('attempts', '=', attempt)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Marks a claimed job done; false when the claim was lost (taken over, cancelled, already done). */
  async complete(id: string, attempt: number, now: string): Promise<boolean> {
    const r = await this.db
      .updateTable('scheduled_jobs')
      .set({ state: 'done', lease_until: null, last_error: null, updated_at: now, done_at: now })
      .where('id', '=', id)
      .where('state', '=', 'running')
      .where('attempts', '=', attempt)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * A claimed job's attempt failed: pending again at `retryAt`, or `failed` for good when `retryAt` is
   * null (or `state` says so, e.g. cancelled because its bot is gone). False when the claim was lost.
   */
  async fail(
    id: string,
    attempt: number,
    error: string,
    retryAt: string | null,
    now: string,
    finalState: 'failed' | 'cancelled' = 'failed',
  ): Promise<boolean> {
    const r = await this.db
      .updateTable('scheduled_jobs')
      .set(
        retryAt
          ? { state: 'pending', run_at: retryAt, lease_until: null, last_error: error, updated_at: now }
          : { state: finalState, lease_until: null, last_error: error, updated_at: now, done_at: now },
      )
      .where('id', '=', id)
      .where('state', '=', 'running')
      .where('attempts', '=', attempt)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** The earliest run_at of a pending job (the scheduler's next wake-up), or null. */
  async nextRunAt(): Promise<string | null> {
    const r = await this.db
      .selectFrom('scheduled_jobs')
      .select((eb) => eb.fn.min('run_at').as('at'))
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return r?.at ?? null;
  }

  /** Deletes finished jobs (done, failed, cancelled) last changed before `before`, a batch at a time. */
  async prune(before: string, limit: number): Promise<number> {
    const ids = this.db
      .selectFrom('scheduled_jobs')
      .select('id')
      .where('state', 'in', ['done', 'failed', 'cancelled'])
      .where('updated_at', '<', before)
      .limit(limit);
    const r = await this.db.deleteFrom('scheduled_jobs').where('id', 'in', ids).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
