import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: slash commands forwarded to the instance that holds the bot's socket
 * (storage/command-forwards.ts, operations/commands/forward.ts). A row per command in flight: the
 * requesting instance writes it (the envelope), the holder claims it, marks it acked before posting
 * the bot's reply, and writes the outcome; the requester deletes it once answered. SQLite serves one
 * instance, which holds every socket it can use.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.schema
    .createTable('command_forwards')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('envelope', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('holder', 'text')
    .addColumn('result', 'text')
    .addColumn('created_at_ms', 'float8', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('command_forwards_created')
    .on('command_forwards')
    .column('created_at_ms')
    .execute();
}
