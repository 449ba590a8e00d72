import type { PendingActionRow } from '../schema.js';
import type { Executor } from './executor.js';

type Status = PendingActionRow['status'];

/**
 * Pending actions (migration 0020). Every change of status is a compare-and-set on the current
 * status, so that of two racing decisions (two clicks, two instances) exactly one wins.
 */
export class PendingActionStore {
  constructor(private readonly db: Executor) {}

  async insert(row: PendingActionRow): Promise<void> {
    await this.db.insertInto('pending_actions').values(row).execute();
  }

  get(id: string): Promise<PendingActionRow | undefined> {
    return this.db.selectFrom('pending_actions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Newest first; `before` pages back by requested_at. */
  listForOrg(
    orgId: string,
    f: { limit: number; status?: Status | undefined; before?: string | undefined },
  ): Promise<PendingActionRow[]> {
    let q = this.db.selectFrom('pending_actions').selectAll().where('org_id', '=', orgId);
    if (f.status) q = q.where('status', '=', f.status);
    if (f.before) q = q.where('requested_at', '<', f.before);
    return q.orderBy('requested_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  }

  /**
   * The actions of one API key, newest first (MCP tasks/list); `after` is the last row of the
   * previous page (requested_at, id). By organization first: its index (pending_actions_org) narrows.
   */
  listForKey(
    orgId: string,
    keyId: string,
    f: { limit: number; after?: { requested_at: string; id: string } | undefined },
  ): Promise<PendingActionRow[]> {
    let q = this.db
      .selectFrom('pending_actions')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('key_id', '=', keyId);
    const after = f.after;
    if (after)
      q = q.where((eb) =>
        eb.or([
          eb('requested_at', '<', after.requested_at),
          eb.and([eb('requested_at', '=', after.requested_at), eb('id', '<', after.id)]),
        ]),
      );
    return q.orderBy('requested_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  }

  /**
   * pending → rejected by the agent itself (MCP tasks/cancel): no decider, `error` says it was
   * withdrawn; only if still pending and not expired at `now`.
   */
  async withdraw(id: string, reason: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('pending_actions')
      .set({ status: 'rejected', decided_at: now, error: reason })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** pending → approved or rejected, if still pending and not expired at `now`. */
  async decide(id: string, to: 'approved' | 'rejected', by: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('pending_actions')
      .set({ status: to, decided_by: by, decided_at: now })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** pending → expired, once its time is up. */
  async expire(id: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('pending_actions')
      .set({ status: 'expired', decided_at: now })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** approved → executed (with the result) or failed (with the reason), once. */
  async finish(
    id: string,
    to: 'executed' | 'failed',
    f: { result?: string | null; error?: string | null },
    now: string,
  ): Promise<boolean> {
    const res = await this.db
      .updateTable('pending_actions')
      .set({ status: to, executed_at: now, result: f.result ?? null, error: f.error ?? null })
      .where('id', '=', id)
      .where('status', '=', 'approved')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async setCards(id: string, cards: string): Promise<void> {
    await this.db.updateTable('pending_actions').set({ cards }).where('id', '=', id).execute();
  }

  /** Marks the outcome as told (cards edited, bot told), once. */
  async markResolved(id: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('pending_actions')
      .set({ resolved_at: now })
      .where('id', '=', id)
      .where('resolved_at', 'is', null)
      .where('status', 'in', ['rejected', 'expired', 'executed', 'failed'])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Work left for the sweeper: approved and not executed, pending past expiry, outcomes not told. */
  listUnfinished(now: string, limit: number): Promise<PendingActionRow[]> {
    return this.db
      .selectFrom('pending_actions')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb('status', '=', 'approved'),
          eb.and([eb('status', '=', 'pending'), eb('expires_at', '<=', now)]),
          eb.and([
            eb('status', 'in', ['rejected', 'expired', 'executed', 'failed']),
            eb('resolved_at', 'is', null),
          ]),
        ]),
      )
      .orderBy('requested_at')
      .limit(limit)
      .execute();
  }
}
