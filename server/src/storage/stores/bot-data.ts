import { PostgresAdapter, sql, type Selectable } from 'kysely';
import type { BotDataRow } from '../schema.js';
import type { Executor } from './executor.js';

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * A bot's own small JSON documents by key (docs/SCHEDULER.md "Bot data"), each with a version that
 * grows by one on every write, for compare-and-set. Keys compare byte-wise on both databases (the
 * "C" collation on PostgreSQL), so prefixes and cursors mean the same everywhere.
 */
export class BotDataStore {
  constructor(private readonly db: Executor) {}

  /** The key column compared byte-wise. */
  #key() {
    return isPostgres(this.db) ? sql<string>`key collate "C"` : sql<string>`key`;
  }

  /** See ScheduledJobStore.lockBot: serializes the count-then-insert of one bot on PostgreSQL. */
  async lockBot(botId: string): Promise<void> {
    if (!isPostgres(this.db)) return;
    await this.db.selectFrom('bots').select('id').where('id', '=', botId).forNoKeyUpdate().execute();
  }

  /** One document; `forUpdate` locks it until the transaction ends (PostgreSQL). */
  get(botId: string, key: string, forUpdate = false): Promise<Selectable<BotDataRow> | undefined> {
    let q = this.db.selectFrom('bot_data').selectAll().where('bot_id', '=', botId).where('key', '=', key);
    if (forUpdate && isPostgres(this.db)) q = q.forUpdate();
    return q.executeTakeFirst();
  }

  async count(botId: string): Promise<number> {
    const r = await this.db
      .selectFrom('bot_data')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('bot_id', '=', botId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Documents whose key starts with `prefix`, in key order, after the key `after`. */
  list(
    botId: string,
    opts: { prefix: string; after?: string | undefined; limit: number },
  ): Promise<Selectable<BotDataRow>[]> {
    const key = this.#key();
    let q = this.db.selectFrom('bot_data').selectAll().where('bot_id', '=', botId);
    if (opts.prefix !== '') {
      // Keys are [A-Za-z0-9_.:/-]: '~' sorts after every character a key may hold.
      q = q.where(key, '>=', opts.prefix).where(key, '<', `${opts.prefix}~`);
    }
    if (opts.after !== undefined) q = q.where(key, '>', opts.after);
    return q.orderBy(key).limit(opts.limit).execute();
  }

  /** Inserts a new document; false when the key exists already (nothing inserted). */
  async insert(row: BotDataRow): Promise<boolean> {
    const r = await this.db
      .insertInto('bot_data')
      .values(row)
      .onConflict((oc) => oc.columns(['bot_id', 'key']).doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  /** Replaces a document's value if it still has `version`; the new row, or undefined if it changed. */
  update(
    botId: string,
    key: string,
    version: number,
    value: string,
    now: string,
  ): Promise<Selectable<BotDataRow> | undefined> {
    return this.db
      .updateTable('bot_data')
      .set({ value, version: version + 1, updated_at: now })
      .where('bot_id', '=', botId)
      .where('key', '=', key)
      .where('version', '=', version)
      .returningAll()
      .executeTakeFirst();
  }

  /** Deletes a document (only at `version` when given); whether one was deleted. */
  async delete(botId: string, key: string, version?: number): Promise<boolean> {
    let q = this.db.deleteFrom('bot_data').where('bot_id', '=', botId).where('key', '=', key);
    if (version !== undefined) q = q.where('version', '=', version);
    const r = await q.executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
