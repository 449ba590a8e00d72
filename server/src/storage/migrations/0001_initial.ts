import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

const member = (db: Db, table: string, parent: string, parentTable: string) =>
  db.schema
    .createTable(table)
    .addColumn(parent, 'text', (c) => c.notNull().references(`${parentTable}.id`).onDelete('cascade'))
    .addColumn('member_type', 'text', (c) => c.notNull().check(sql`member_type in ('user', 'bot')`))
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('joined_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint(`${table}_pk`, [parent, 'member_type', 'member_id'])
    .execute();

export async function up(db: Db, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('departments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('departments_org_name', ['org_id', 'name'])
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('department_id', 'text', (c) => c.references('departments.id').onDelete('set null'))
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_org').on('users').columns(['org_id', 'display_name', 'id']).execute();

  await db.schema
    .createTable('user_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();

  await db.schema
    .createTable('channels')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('is_private', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('channels_org_name', ['org_id', 'name'])
    .execute();
  await member(db, 'channel_members', 'channel_id', 'channels');
  await db.schema
    .createIndex('channel_members_member')
    .on('channel_members')
    .columns(['member_type', 'member_id'])
    .execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('projects_org').on('projects').columns(['org_id', 'name']).execute();
  await member(db, 'project_members', 'project_id', 'projects');
  await db.schema
    .createIndex('project_members_member')
    .on('project_members')
    .columns(['member_type', 'member_id'])
    .execute();

  await db.schema
    .createTable('topics')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('topics_project').on('topics').columns(['project_id', 'name']).execute();

  await db.schema
    .createTable('dm_rooms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('member_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('dm_rooms_org_members', ['org_id', 'member_key'])
    .execute();
  await member(db, 'dm_room_members', 'dm_room_id', 'dm_rooms');
  await db.schema
    .createIndex('dm_room_members_member')
    .on('dm_room_members')
    .columns(['member_type', 'member_id'])
    .execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) => c.references('channels.id').onDelete('cascade'))
    .addColumn('topic_id', 'text', (c) => c.references('topics.id').onDelete('cascade'))
    .addColumn('dm_room_id', 'text', (c) => c.references('dm_rooms.id').onDelete('cascade'))
    .addColumn('sender_type', 'text', (c) => c.notNull())
    .addColumn('sender_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('content_html', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('edited_at', 'text')
    .addColumn('deleted_at', 'text')
    .addCheckConstraint(
      'messages_one_container',
      sql`(case when channel_id is null then 0 else 1 end) + (case when topic_id is null then 0 else 1 end) + (case when dm_room_id is null then 0 else 1 end) = 1`,
    )
    .execute();
  // Partial indexes: a message is in one container, so each index holds only its own rows and an
  // insert touches one index instead of three.
  for (const col of ['channel_id', 'topic_id', 'dm_room_id'] as const) {
    await db.schema
      .createIndex(`messages_${col}`)
      .on('messages')
      .columns([col, 'created_at', 'id'])
      .where(sql.ref(col), 'is not', null)
      .execute();
  }

  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('topic_id', 'text', (c) => c.notNull().references('topics.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('priority', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('assignee_id', 'text')
    .addColumn('due_date', 'text')
    .addColumn('created_by_type', 'text', (c) => c.notNull())
    .addColumn('created_by_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tasks_topic').on('tasks').columns(['topic_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('tags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('tags_org_name', ['org_id', 'name'])
    .execute();

  await db.schema
    .createTable('bots')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('webhook_url', 'text')
    .addColumn('events', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_by', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('bots_org').on('bots').columns(['org_id', 'name']).execute();

  await db.schema
    .createTable('bot_api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('key_type', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('use_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('bot_api_keys_bot').on('bot_api_keys').column('bot_id').execute();

  await db.schema
    .createTable('bot_webhook_secrets')
    .addColumn('bot_id', 'text', (c) => c.primaryKey().references('bots.id').onDelete('cascade'))
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('bot_commands')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('usage_hint', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('bot_commands_bot_command', ['bot_id', 'command'])
    .execute();
  await db.schema.createIndex('bot_commands_org').on('bot_commands').columns(['org_id', 'command']).execute();

  await db.schema
    .createTable('bookmarks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channels.id').onDelete('cascade'))
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('bookmarks_user_message', ['user_id', 'message_id'])
    .execute();
  await db.schema
    .createIndex('bookmarks_channel')
    .on('bookmarks')
    .columns(['channel_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('files')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) => c.references('channels.id').onDelete('cascade'))
    .addColumn('topic_id', 'text', (c) => c.references('topics.id').onDelete('cascade'))
    .addColumn('dm_room_id', 'text', (c) => c.references('dm_rooms.id').onDelete('cascade'))
    .addColumn('uploader_type', 'text', (c) => c.notNull())
    .addColumn('uploader_id', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('storage_path', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  // One index per sort order of the channel file list, so that a page is read in order, not sorted.
  await db.schema
    .createIndex('files_channel')
    .on('files')
    .columns(['channel_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('files_channel_size')
    .on('files')
    .columns(['channel_id', 'size', 'id'])
    .execute();
  await db.schema
    .createIndex('files_channel_name')
    .on('files')
    .expression(sql`channel_id, lower(filename), id`)
    .execute();

  // The outbox needs a gap-free-enough, strictly increasing order for consumers: an identity column.
  await db.schema
    .createTable('events')
    .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      // SQLite: a rowid alias, increasing as long as the newest event is never deleted (no AUTOINCREMENT,
      // which costs a sqlite_sequence write per insert).
      c.primaryKey(),
    )
    .addColumn('id', 'text', (c) => c.notNull()) // random UUID; consumers address events by seq
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tool_calls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('error_code', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('tool_calls_bot')
    .on('tool_calls')
    .columns(['bot_id', 'created_at', 'id'])
    .execute();
}
