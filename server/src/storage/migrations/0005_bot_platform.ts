import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * What the built-in bots stand on, and every bot can use:
 * - `bots.builtin`: which built-in bot a row is (search, tasks, poll…); one row per organization each;
 * - `messages.actions`: interactive actions (buttons, selects) a bot's message carries;
 * - `scheduled_jobs`: the durable scheduler (claimed with a lease, SKIP LOCKED on PostgreSQL);
 * - `bot_data`: a bot's own small documents (poll votes, stand-up set-ups), versioned for compare-and-set;
 * - `read_markers`: how far each user has read each container (server-side unread state).
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('bots').addColumn('builtin', 'text').execute();
  await db.schema
    .createIndex('bots_org_builtin')
    .on('bots')
    .columns(['org_id', 'builtin'])
    .unique()
    .where(sql.ref('builtin'), 'is not', null)
    .execute();

  await db.schema.alterTable('messages').addColumn('actions', 'text').execute();

  await db.schema
    .createTable('scheduled_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    // At most one job per (bot, dedupe_key): scheduling the same occurrence twice is a no-op.
    .addColumn('dedupe_key', 'text')
    .addColumn('payload', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c.notNull().check(sql`state in ('pending', 'running', 'done', 'failed', 'cancelled')`),
    )
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    // While running: the end of the claim's lease (a crashed instance's claim expires and is retried).
    .addColumn('lease_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('done_at', 'text')
    .execute();
  await db.schema
    .createIndex('scheduled_jobs_due')
    .on('scheduled_jobs')
    .columns(['state', 'run_at'])
    .execute();
  await db.schema
    .createIndex('scheduled_jobs_dedupe')
    .on('scheduled_jobs')
    .columns(['bot_id', 'dedupe_key'])
    .unique()
    .where(sql.ref('dedupe_key'), 'is not', null)
    .execute();

  await db.schema
    .createTable('bot_data')
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('bot_data_pk', ['bot_id', 'key'])
    .execute();

  await db.schema
    .createTable('read_markers')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('container_type', 'text', (c) =>
      c.notNull().check(sql`container_type in ('channel', 'topic', 'dm_room')`),
    )
    .addColumn('container_id', 'text', (c) => c.notNull())
    // The newest message the user has seen (its created_at and id: the list order of messages).
    .addColumn('last_read_at', 'text', (c) => c.notNull())
    .addColumn('last_read_message_id', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('read_markers_pk', ['user_id', 'container_type', 'container_id'])
    .execute();
}
