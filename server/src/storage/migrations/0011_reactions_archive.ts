import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Emoji reactions on messages (operations/messages/reactions.ts) and archived channels, projects and
 * topics (operations/containers/archive.ts).
 *
 * A reaction is one row per (message, emoji, reactor): adding the same one twice is a no-op (the
 * primary key), and the counts `read_messages` and the web app show are a GROUP BY over the message's
 * rows (the index by message serves it). Rows go with their message (cascade): a deleted message is a
 * soft delete, whose reactions are simply no longer shown.
 *
 * `archived_at` (null while active): an archived container leaves the listings (sidebar, browse) and
 * takes no new messages; its history stays readable by those who could read it.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('message_reactions')
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('emoji', 'text', (c) => c.notNull())
    .addColumn('reactor_type', 'text', (c) => c.notNull())
    .addColumn('reactor_id', 'text', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_reactions_pk', ['message_id', 'emoji', 'reactor_type', 'reactor_id'])
    .execute();
  for (const table of ['channels', 'projects', 'topics']) {
    await db.schema.alterTable(table).addColumn('archived_at', 'text').execute();
  }
}
