import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Leases (storage/leases.ts): one row per kind of singleton work (pruning, retention), held by one
 * instance until `expires_at_ms` and renewed by it, so that N instances on one database do that work
 * once. Both dialects (on SQLite the one instance always holds it).
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at_ms', 'float8', (c) => c.notNull())
    .execute();
}
