import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * The per-bot incoming-webhook token (for senders that cannot set an Authorization header): at most
 * one per bot, stored as its SHA-256 like API keys; issuing a new one replaces the old.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('bot_incoming_tokens')
    .addColumn('bot_id', 'text', (c) => c.primaryKey().references('bots.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
