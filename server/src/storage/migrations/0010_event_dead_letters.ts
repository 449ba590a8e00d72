import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * The outbox's dead letters (events/outbox-reader.ts): an event row whose data does not match its
 * type's schema in the event catalogue (domain/events.ts) is handed to no consumer; it is recorded
 * here once, with the reason, so that it is visible (counted, listed) instead of silently dropped.
 * The event row itself stays in the outbox, unchanged, for diagnosis.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('event_dead_letters')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('event_created_at', 'text', (c) => c.notNull())
    .addColumn('dead_at', 'text', (c) => c.notNull())
    .execute();
}
