import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Webhook delivery: the outbox's commit-ordered positions (PostgreSQL), durable consumer cursors, one
 * row per (event, bot) delivery with every attempt recorded, per-bot webhook health (pause), and user
 * notifications (a delivery that failed for good).
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';

  if (dialect === 'postgres') {
    // PostgreSQL hands out seq values before commit, so commits land out of seq order. Each event
    // records its transaction id; the outbox sequencer (events/outbox-reader.ts) gives `position`, in
    // one order, only to events whose transaction has finished. On SQLite (one writer) seq is already
    // commit order and serves as the position.
    await sql`alter table events add column tx_id xid8 not null default pg_current_xact_id()`.execute(db);
    await sql`alter table events add column position bigint`.execute(db);
    // Events written before this migration are all committed: their seq order is their commit order.
    await sql`update events set position = seq`.execute(db);
    await sql`create unique index events_position on events (position)`.execute(db);
    // The sequencer's work list stays tiny: only events that have no position yet.
    await sql`create index events_unsequenced on events (seq) where position is null`.execute(db);
  }

  await db.schema
    .createTable('outbox_cursors')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('position', big, (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey()) // also the `webhook-id` of every attempt
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_seq', big) // null for events that are not in the outbox (webhook.test)
    .addColumn('event_position', big)
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('event_created_at', 'text', (c) => c.notNull())
    .addColumn('payload', 'text') // data of events not in the outbox
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('pending', 'delivered', 'failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    // When it is due; while claimed, the end of the claim's lease (a crashed worker's claim expires).
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('last_attempt_at', 'text')
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('webhook_deliveries_event_bot', ['event_id', 'bot_id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['next_attempt_at'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_bot')
    .on('webhook_deliveries')
    .columns(['bot_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_bot_position')
    .on('webhook_deliveries')
    .columns(['bot_id', 'event_position'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_done')
    .on('webhook_deliveries')
    .columns(['updated_at'])
    .where(sql.ref('state'), '<>', 'pending')
    .execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) =>
      c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
    )
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('error', 'text')
    .addColumn('response_snippet', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery')
    .on('webhook_attempts')
    .columns(['delivery_id', 'attempt'])
    .execute();

  await db.schema
    .createTable('webhook_health')
    .addColumn('bot_id', 'text', (c) => c.primaryKey().references('bots.id').onDelete('cascade'))
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('paused_at', 'text')
    .addColumn('paused_reason', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('read_at', 'text')
    .execute();
  await db.schema
    .createIndex('notifications_user')
    .on('notifications')
    .columns(['user_id', 'created_at', 'id'])
    .execute();
}
