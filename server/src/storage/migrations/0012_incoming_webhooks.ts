import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Issue 20, points 3 and 4.
 *
 * `incoming_webhooks`: Slack-compatible incoming webhooks (operations/webhooks/incoming-webhooks.ts). Each
 * has a URL that carries its own secret (stored here as its SHA-256 only), a target container (a channel
 * or a topic), the bot that posts its messages (one bot per webhook, made with it), and optionally a
 * template that turns any JSON into a message. Revoking keeps the row (revoked_at) so that the URL answers
 * 404 from then on and the messages it posted keep a sender.
 *
 * `webhook_health` gains what a receiver asked for (delivery/record.ts): `hold_until` / `hold_reason`, a
 * pause until a time (a Retry-After on any answer), and `max_per_minute`, the most deliveries per minute the
 * bot's owner allows to its endpoint (null: no limit). Durable, so a restart keeps them.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('incoming_webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text')
    .addColumn('topic_id', 'text')
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('template', 'text')
    .addColumn('allow_overrides', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema
    .createIndex('incoming_webhooks_org')
    .on('incoming_webhooks')
    .columns(['org_id', 'created_at'])
    .execute();

  await db.schema.alterTable('webhook_health').addColumn('hold_until', 'text').execute();
  await db.schema.alterTable('webhook_health').addColumn('hold_reason', 'text').execute();
  await db.schema.alterTable('webhook_health').addColumn('max_per_minute', 'integer').execute();
}
