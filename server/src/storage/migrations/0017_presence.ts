import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: who is connected to the live stream of which instance (storage/presence.ts), so that every
 * instance answers "is this person online" (@here) alike. A row per instance and user, heartbeated by
 * its instance; a row whose heartbeat is older than the expiry (an instance that died) counts for
 * nothing and is pruned. SQLite serves one instance, whose hub knows its own connections.
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.schema
    .createTable('presence')
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('seen_at_ms', 'float8', (c) => c.notNull())
    .addPrimaryKeyConstraint('presence_pk', ['user_id', 'instance_id'])
    .execute();
  await db.schema.createIndex('presence_instance').on('presence').column('instance_id').execute();
}
