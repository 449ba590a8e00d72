import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Issue 18, point 3: settings every instance on the database must agree on (encryption-key.ts).
 *
 * `encryption_key_verifier`: a verifier of WORKROOM_ENCRYPTION_KEY (an HMAC of a fixed label under an
 * HKDF subkey of it: it tells whether a key is the cluster's, and nothing about the key). The first
 * instance writes it; an instance with another key refuses to start.
 * `encryption_key_next_verifier`: during a key rotation (`workroom rotate-key`), the verifier of the key
 * the secrets are being moved to.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('cluster_settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}
