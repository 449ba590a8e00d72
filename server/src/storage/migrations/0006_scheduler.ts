import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Indexes for the scheduler and bot data (tables of 0005), per bot:
 * - a bot's jobs in run_at order (`jobs.list`), and of one state (the limit on open jobs, lists by
 *   state);
 * - on PostgreSQL, bot data keys in byte order (`collate "C"`), the order of prefix lists and cursors
 *   whatever the database's collation (SQLite compares bytes already: the primary key serves).
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('scheduled_jobs_bot')
    .on('scheduled_jobs')
    .columns(['bot_id', 'run_at', 'id'])
    .execute();
  await db.schema
    .createIndex('scheduled_jobs_bot_state')
    .on('scheduled_jobs')
    .columns(['bot_id', 'state', 'run_at', 'id'])
    .execute();
  if (dialect === 'postgres') {
    await sql`create index bot_data_key_bytes on bot_data (bot_id, key collate "C")`.execute(db);
  }
}
