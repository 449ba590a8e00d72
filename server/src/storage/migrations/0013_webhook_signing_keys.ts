import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Issue 20, point 5: an ed25519 key per bot, as an option, so that its deliveries also carry a
 * Standard Webhooks `v1a` signature a receiver checks with the public key alone (no shared secret).
 * The private key is stored encrypted like the webhook secret; the public key as it is shown
 * (`whpk_<base64 of 32 bytes>`).
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('bot_signing_keys')
    .addColumn('bot_id', 'text', (c) => c.primaryKey().references('bots.id').onDelete('cascade'))
    .addColumn('private_key_encrypted', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
