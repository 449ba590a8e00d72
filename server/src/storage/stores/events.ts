import type { EventDeadLetterRow, EventRow } from '../schema.js';
import type { Executor } from './executor.js';
import { CompiledQuery, type Selectable } from 'kysely';
import { namePgStatement } from '../pg-statements.js';
import { prepared } from './prepared.js';

// Appended on every change: prepared once, not rebuilt; sent with the change's last statement on
// PostgreSQL (storage/pg-deferred-transaction.ts).
const INSERT = prepared(
  (db, id: string, org_id: string, type: string, data: string, created_at: string) =>
    db.insertInto('events').values({ id, org_id, type, data, created_at }),
  { deferrable: true },
);

/** The outbox sequencer's numbering pass (migration 0008): see numberCommitted. */
const NUMBER_EVENTS = 'select workroom_number_events($1, $2) as n';

/** The transactional outbox. Appended inside the transaction of the change; read in `seq` order. */
export class EventStore {
  constructor(private readonly db: Executor) {}

  async append(rows: Omit<EventRow, 'seq'>[]): Promise<void> {
    for (const r of rows) await INSERT(this.db, r.id, r.org_id, r.type, r.data, r.created_at);
  }

  /**
   * PostgreSQL only: one numbering pass of the outbox sequencer (migration 0008), in one statement
   * outside any transaction (run it on the database, not in a transaction: the lock and the NOTIFY
   * belong to the statement's own). Numbers up to `maxRows` committed events; when it numbered any,
   * notifies `workroom_outbox` with the schema and `readerId`. Returns how many it numbered.
   */
  async numberCommitted(maxRows: number, readerId: string): Promise<number> {
    // A named statement (pg-statements.ts): parsed and planned once per connection, not on every pass
    // (PostgreSQL's CPU per pass with nothing to number: 137–160 µs unnamed, 77–110 µs named, load ~15).
    namePgStatement(NUMBER_EVENTS);
    const r = await this.db.executeQuery(
      CompiledQuery.raw(NUMBER_EVENTS, [maxRows, readerId]) as CompiledQuery<{ n: number }>,
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  listAfter(seq: number, limit: number, orgId?: string): Promise<Selectable<EventRow>[]> {
    let q = this.db.selectFrom('events').selectAll().where('seq', '>', seq);
    if (orgId) q = q.where('org_id', '=', orgId);
    return q.orderBy('seq').limit(limit).execute();
  }

  /**
   * Records outbox events that failed their schema on read (dead letters, migration 0010). Several
   * readers (consumers, instances) may find the same row: the first record stands.
   */
  async deadLetter(rows: EventDeadLetterRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db
      .insertInto('event_dead_letters')
      .values(rows)
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute();
  }

  async countDeadLetters(): Promise<number> {
    const r = await this.db
      .selectFrom('event_dead_letters')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /** Dead letters, oldest position first. */
  async listDeadLetters(limit = 100): Promise<EventDeadLetterRow[]> {
    const rows = await this.db
      .selectFrom('event_dead_letters')
      .selectAll()
      .orderBy('position')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, position: Number(r.position) }));
  }
}
