import type { EventRow } from '../schema.js';
import type { Executor } from './executor.js';
import type { Selectable } from 'kysely';

/** The transactional outbox. Appended inside the transaction of the change; read in `seq` order. */
export class EventStore {
  constructor(private readonly db: Executor) {}

  async append(rows: Omit<EventRow, 'seq'>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.insertInto('events').values(rows).execute();
  }

  listAfter(seq: number, limit: number, orgId?: string): Promise<Selectable<EventRow>[]> {
    let q = this.db.selectFrom('events').selectAll().where('seq', '>', seq);
    if (orgId) q = q.where('org_id', '=', orgId);
    return q.orderBy('seq').limit(limit).execute();
  }
}
