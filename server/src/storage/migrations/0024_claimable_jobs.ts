import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: the scheduler's look at the jobs it may claim (ScheduledJobStore.claim), one ordered and
 * limited read per state. The claim asked for pending jobs that are due OR running jobs whose lease ran
 * out, earliest first: no single index read in order serves an OR of two states, so PostgreSQL read
 * every due job, sorted them all and locked the first few. With 20,000 due jobs one claim of 8 took
 * 12.6 ms (a sequential scan of all of them, fresh statistics or not), so a backlog drained in
 * quadratic time. Here each state is read through `scheduled_jobs_due` (state, run_at) in order up to
 * the limit, each read locking its rows (FOR UPDATE SKIP LOCKED, as before); the two are merged and
 * limited again. The settings make the ordered index reads the only plans without a penalty whatever
 * the statistics say (as migration 0023 does for deliveries; with sorts allowed, statistics taken
 * before a backlog chose a full sort of every due job: 17 ms for 20,000, against 0.3 ms); they hold
 * for the function's own statements only. JIT is off too: the merge's sort carries the penalty in
 * every plan, and a plan that costly would be compiled first (~100-150 ms a call). The same jobs, in
 * the same order, as the query it replaces; rows of a read left over after the merge stay locked only
 * until the claim's statement ends.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    create function workroom_claimable_jobs(p_now text, p_cutoff text, p_max_attempts integer,
      p_limit integer)
    returns table (id text)
    language plpgsql volatile
    set enable_seqscan = off set enable_bitmapscan = off set enable_sort = off set jit = off
    as $fn$
    #variable_conflict use_column
    begin
      return query
        with pending as (
          select j.id, j.run_at from scheduled_jobs j
          where j.state = 'pending' and j.run_at <= p_now and j.run_at >= p_cutoff
          order by j.run_at, j.id limit p_limit for update of j skip locked
        ), lapsed as (
          select j.id, j.run_at from scheduled_jobs j
          where j.state = 'running' and j.lease_until <= p_now and j.attempts < p_max_attempts
            and j.run_at >= p_cutoff
          order by j.run_at, j.id limit p_limit for update of j skip locked
        )
        select c.id from (select * from pending union all select * from lapsed) c
        order by c.run_at, c.id limit p_limit;
    end
    $fn$`.execute(db);
}
