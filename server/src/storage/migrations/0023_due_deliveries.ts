import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: the delivery worker's look at the due rows (DeliveryStore.due) as a function whose plan
 * does not depend on the table's statistics. A claim wants the earliest `p_limit` due rows: the
 * `webhook_deliveries_due` index read in order, stopping at the limit. When the statistics say there
 * are few due rows (a table analyzed while its queue was short, or never analyzed, and then a backlog),
 * PostgreSQL reads every due row through a bitmap, sorts them all and locks the first few: each claim
 * then costs the whole backlog (50,000 due rows: ~20 ms and a sort spilled to disk, against 0.3 ms for
 * the index read in order), and a backlog drains in quadratic time. The function's settings leave the
 * ordered index read as the only plan without a penalty; they hold for the function's own statements
 * only. JIT is off: should a penalized plan ever be the only one left, its cost would have it
 * compiled first (~100 ms a call). Same rows, same order and same locks (FOR UPDATE SKIP LOCKED) as
 * the query it replaces.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    create function workroom_due_deliveries(p_now text, p_limit integer, p_busy_bots text[],
      p_busy_orgs text[])
    returns table (id text, org_id text, bot_id text, attempts integer, next_attempt_at text,
      event_position bigint)
    language plpgsql volatile
    set enable_seqscan = off set enable_bitmapscan = off set enable_sort = off set jit = off
    as $fn$
    #variable_conflict use_column
    begin
      return query
        select d.id, d.org_id, d.bot_id, d.attempts, d.next_attempt_at, d.event_position
        from webhook_deliveries d
        where d.state = 'pending' and d.next_attempt_at <= p_now
          and d.bot_id <> all(p_busy_bots) and d.org_id <> all(p_busy_orgs)
          and not exists (select 1 from webhook_health h where h.bot_id = d.bot_id
            and (h.paused_at is not null or h.hold_until > p_now))
        order by d.next_attempt_at limit p_limit for update of d skip locked;
    end
    $fn$`.execute(db);
}
