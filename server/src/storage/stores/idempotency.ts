import type { IdempotencyKeyRow } from '../schema.js';
import type { Executor } from './executor.js';

/** Idempotency-Key records: one row per (actor, key); the primary key decides concurrent duplicates. */
export class IdempotencyStore {
  constructor(private readonly db: Executor) {}

  /** Inserts a pending row; returns false when the key is already taken. */
  async claim(key: string, requestHash: string, now: string): Promise<boolean> {
    const res = await this.db
      .insertInto('idempotency_keys')
      .values({
        key,
        request_hash: requestHash,
        state: 'pending',
        status_code: null,
        response: null,
        created_at: now,
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  get(key: string): Promise<IdempotencyKeyRow | undefined> {
    return this.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirst();
  }

  async complete(key: string, statusCode: number, response: string): Promise<void> {
    await this.db
      .updateTable('idempotency_keys')
      .set({ state: 'done', status_code: statusCode, response })
      .where('key', '=', key)
      .execute();
  }

  /** Removes a pending claim, but only if it is still the one created at `createdAt`. */
  async release(key: string, createdAt: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('key', '=', key)
      .where('created_at', '=', createdAt)
      .where('state', '=', 'pending')
      .execute();
  }

  /** Deletes one key if it was created before `before` (expired, or a pending claim that was abandoned). */
  async deleteIfOlder(key: string, before: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('key', '=', key)
      .where('created_at', '<', before)
      .execute();
  }

  /** Deletes every record created before `before`; returns how many. */
  async purgeOlderThan(before: string): Promise<number> {
    const res = await this.db
      .deleteFrom('idempotency_keys')
      .where('created_at', '<', before)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
