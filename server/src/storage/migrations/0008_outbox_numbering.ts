import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: the outbox sequencer's numbering pass (events/outbox-reader.ts) as one function, so that
 * a pass is one round trip instead of five (begin, lock, update, notify, commit). Called outside an
 * explicit transaction, the statement is its own transaction: the advisory lock is held until its
 * commit, and the NOTIFY is sent at that commit. In a VOLATILE PL/pgSQL function every statement takes
 * a new snapshot (READ COMMITTED), so the UPDATE sees everything committed before the lock was granted,
 * including the previous pass's numbering — the property the sequencer rests on. SQLite has no
 * sequencer (seq is the position there). The NOTIFY's channel and payload: OUTBOX_CHANNEL in
 * events/outbox-reader.ts.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    create function workroom_number_events(max_rows integer, reader_id text) returns integer
    language plpgsql volatile as $fn$
    declare
      numbered integer;
    begin
      perform pg_advisory_xact_lock(hashtext('workroom.outbox.' || current_schema()));
      with ready as (
        select seq, row_number() over (order by seq) as n from (
          select seq from events where position is null order by seq limit max_rows
        ) r
      ), base as (select coalesce(max(position), 0) as p from events)
      update events e set position = base.p + ready.n
      from ready, base where e.seq = ready.seq;
      get diagnostics numbered = row_count;
      if numbered > 0 then
        perform pg_notify('workroom_outbox', current_schema() || ' ' || reader_id);
      end if;
      return numbered;
    end
    $fn$`.execute(db);
}
