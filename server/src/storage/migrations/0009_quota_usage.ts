import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Quotas (operations/quotas.ts, docs/API.md "Quotas"): bytes used per organization and per user, kept in
 * the database next to what they count and changed in the same transaction as it (a file row, a bot-data
 * document), so every instance sees one number. A SUM over the counted rows inside the write transaction
 * cost 120-370 ms at 900,000 bot-data rows on SQLite, all of it holding the one writer: the counter is
 * the SUM kept up to date, started here from the SUM of what exists.
 *
 * One row per (organization, kind, subject): kind `upload_bytes` or `bot_data_bytes`, subject '' for the
 * whole organization or `user:<id>` for one user's uploads. Bot counts need no row (a COUNT of at most a
 * few hundred bots); their check locks the row of kind `bots` instead.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('quota_usage')
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('used', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('quota_usage_pk', ['org_id', 'kind', 'subject'])
    .execute();

  const bytes = dialect === 'postgres' ? sql`octet_length(value)` : sql`length(cast(value as blob))`;
  await sql`
    insert into quota_usage (org_id, kind, subject, used)
    select org_id, 'upload_bytes', '', sum(size) from files where deleted_at is null group by org_id
  `.execute(db);
  await sql`
    insert into quota_usage (org_id, kind, subject, used)
    select org_id, 'upload_bytes', 'user:' || uploader_id, sum(size) from files
    where deleted_at is null and uploader_type = 'user' group by org_id, uploader_id
  `.execute(db);
  await sql`
    insert into quota_usage (org_id, kind, subject, used)
    select org_id, 'bot_data_bytes', '', sum(${bytes}) from bot_data group by org_id
  `.execute(db);
  // Bots counted per organization and per creator (operations/quotas.ts).
  await db.schema
    .createIndex('bots_org_creator')
    .on('bots')
    .columns(['org_id', 'created_by'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}
