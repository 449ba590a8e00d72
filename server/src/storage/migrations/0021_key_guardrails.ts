import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Guard rails of agent grants (issue 21, operations/guardrails.ts): a bot API key can be paused (when,
 * why; refused with key_paused until a manager resumes it), and the burst rule's window of recent
 * texts per key: one row per (key, normalized text's hash, target), its last time (indexed for the
 * pruning of old rows). Both dialects.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('bot_api_keys').addColumn('paused_at', 'text').execute();
  await db.schema.alterTable('bot_api_keys').addColumn('paused_reason', 'text').execute();
  await db.schema
    .createTable('key_recent_texts')
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('text_hash', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('key_recent_texts_pk', ['key_id', 'text_hash', 'target_id'])
    .execute();
  // The leader's pruning of rows a day old (app.ts), without a scan of the table.
  await db.schema.createIndex('key_recent_texts_at').on('key_recent_texts').column('at').execute();
}
