import type { ExpressionBuilder, Selectable } from 'kysely';
import type { Database } from '../schema.js';
import type { NotificationRow } from '../schema.js';
import type { Executor } from './executor.js';

/** Notifications for users (a webhook that failed for good, …), shown by the web app. */
export class NotificationStore {
  constructor(private readonly db: Executor) {}

  async insertMany(rows: NotificationRow[]): Promise<void> {
    if (rows.length > 0) await this.db.insertInto('notifications').values(rows).execute();
  }

  /** A user's notifications, newest first, keyset-paged by (created_at, id). */
  listForUser(
    userId: string,
    opts: { unreadOnly: boolean; before?: { created_at: string; id: string } | undefined; limit: number },
  ): Promise<Selectable<NotificationRow>[]> {
    let q = this.db.selectFrom('notifications').selectAll().where('user_id', '=', userId);
    if (opts.unreadOnly) q = q.where('read_at', 'is', null);
    if (opts.before) q = q.where(olderThan(opts.before));
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
  }

  async markRead(userId: string, ids: string[], now: string): Promise<number> {
    if (ids.length === 0) return 0;
    const r = await this.db
      .updateTable('notifications')
      .set({ read_at: now })
      .where('user_id', '=', userId)
      .where('id', 'in', ids)
      .where('read_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
}

/** Keyset paging, newest first: rows before (created_at, id) of the last row of the previous page. */
export function olderThan<T extends 'notifications' | 'webhook_deliveries'>(before: {
  created_at: string;
  id: string;
}) {
  return (eb: ExpressionBuilder<Database, T>) => {
    const e = eb as unknown as ExpressionBuilder<Database, 'notifications'>;
    return e.or([
      e('created_at', '<', before.created_at),
      e.and([e('created_at', '=', before.created_at), e('id', '<', before.id)]),
    ]);
  };
}
