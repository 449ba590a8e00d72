import { PostgresAdapter, sql } from 'kysely';
import type { Executor } from './executor.js';

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

export type UsageKind = 'upload_bytes' | 'bot_data_bytes' | 'bots';

/**
 * What an organization and its users use (operations/quotas.ts): byte counters kept with the rows they
 * count, and bot counts. Every change of a counter is one conditional UPDATE, so two transactions can
 * never both pass a limit that only one of them fits under: on SQLite transactions run one at a time; on
 * PostgreSQL the second UPDATE waits for the first's row lock and re-checks its condition on the
 * committed row.
 */
export class QuotaStore {
  constructor(private readonly db: Executor) {}

  async #ensure(orgId: string, kind: UsageKind, subject: string): Promise<void> {
    await this.db
      .insertInto('quota_usage')
      .values({ org_id: orgId, kind, subject, used: 0 })
      .onConflict((oc) => oc.columns(['org_id', 'kind', 'subject']).doNothing())
      .execute();
  }

  /** The counter's value (0 when it has none yet). */
  async used(orgId: string, kind: UsageKind, subject = ''): Promise<number> {
    const r = await this.db
      .selectFrom('quota_usage')
      .select('used')
      .where('org_id', '=', orgId)
      .where('kind', '=', kind)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return r ? Number(r.used) : 0;
  }

  /**
   * Adds `delta` (may be negative) to the counter if the result stays within `limit` (a decrease always
   * applies). Returns true when applied; false (nothing changed) when it would pass the limit.
   */
  async add(orgId: string, kind: UsageKind, subject: string, delta: number, limit: number): Promise<boolean> {
    if (delta === 0) return true;
    await this.#ensure(orgId, kind, subject);
    let q = this.db
      .updateTable('quota_usage')
      .set({ used: sql<number>`used + ${delta}` })
      .where('org_id', '=', orgId)
      .where('kind', '=', kind)
      .where('subject', '=', subject);
    if (delta > 0) q = q.where(sql<boolean>`used + ${delta} <= ${limit}`);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Holds the organization's `kind` row until the transaction ends (PostgreSQL; on SQLite transactions
   * already run one at a time): a count-then-insert under it cannot race another.
   */
  async lock(orgId: string, kind: UsageKind): Promise<void> {
    if (!isPostgres(this.db)) return;
    await this.#ensure(orgId, kind, '');
    await this.db
      .selectFrom('quota_usage')
      .select('used')
      .where('org_id', '=', orgId)
      .where('kind', '=', kind)
      .where('subject', '=', '')
      .forUpdate()
      .execute();
  }

  /** Custom bots (not deleted) of an organization, and of those the ones `userId` registered. */
  async countCustomBots(orgId: string, userId: string): Promise<{ org: number; member: number }> {
    const r = await this.db
      .selectFrom('bots')
      .select((eb) => [
        eb.fn.countAll<number | string>().as('org'),
        eb.fn
          .sum<number | string | null>(eb.case().when('created_by', '=', userId).then(1).else(0).end())
          .as('member'),
      ])
      .where('org_id', '=', orgId)
      .where('type', '=', 'custom')
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    return { org: Number(r.org), member: Number(r.member ?? 0) };
  }
}
