import type { IncomingWebhookRow } from '../schema.js';
import type { Executor } from './executor.js';

/** Slack-compatible incoming webhooks (migration 0012): their secrets' hashes only. */
export class IncomingWebhookStore {
  constructor(private readonly db: Executor) {}

  async insert(row: IncomingWebhookRow): Promise<void> {
    await this.db.insertInto('incoming_webhooks').values(row).execute();
  }

  get(id: string): Promise<IncomingWebhookRow | undefined> {
    return this.db.selectFrom('incoming_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Webhooks of an organization, newest first; `createdBy` narrows to one creator's. */
  list(
    orgId: string,
    opts: { createdBy?: string | undefined; includeRevoked: boolean; limit: number },
  ): Promise<IncomingWebhookRow[]> {
    let q = this.db
      .selectFrom('incoming_webhooks')
      .selectAll()
      .where('org_id', '=', orgId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(opts.limit);
    if (opts.createdBy !== undefined) q = q.where('created_by', '=', opts.createdBy);
    if (!opts.includeRevoked) q = q.where('revoked_at', 'is', null);
    return q.execute();
  }

  /** Marks it revoked; false when it already was (or does not exist). */
  async revoke(id: string, now: string): Promise<boolean> {
    const r = await this.db
      .updateTable('incoming_webhooks')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }
}
