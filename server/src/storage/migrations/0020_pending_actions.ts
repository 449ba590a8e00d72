import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Pending actions (issue 21, human approval; operations/approvals/): a tool call of a bot key whose
 * grants say it needs approval, stored with the exact operation, its parsed input, the key, the bot
 * and the time, until an approver approves or rejects it (or it expires). `status` moves
 * pending → approved | rejected | expired, approved → executed | failed; `cards` holds the DM card
 * messages sent to the approvers (JSON [{user_id, message_id}]); `resolved_at` is set once the cards
 * show the outcome and the bot was told (pending_action.resolved).
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('pending_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('preview', 'text')
    .addColumn('approvers', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('requested_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('decided_by', 'text')
    .addColumn('decided_at', 'text')
    .addColumn('executed_at', 'text')
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    .addColumn('cards', 'text')
    .addColumn('resolved_at', 'text')
    .execute();
  await db.schema
    .createIndex('pending_actions_org')
    .on('pending_actions')
    .columns(['org_id', 'requested_at'])
    .execute();
  await db.schema
    .createIndex('pending_actions_status')
    .on('pending_actions')
    .columns(['status', 'expires_at'])
    .execute();
}
