import type { MessageRow } from '../schema.js';
import type { Executor } from './executor.js';
import { containsInsensitive } from './sql-helpers.js';
import { prepared } from './prepared.js';

export type ContainerRef =
  { kind: 'channel'; id: string } | { kind: 'topic'; id: string } | { kind: 'dm_room'; id: string };

// The hottest write of the server: prepared once, not rebuilt.
const INSERT = prepared(
  (
    db,
    id: string,
    org_id: string,
    channel_id: string | null,
    topic_id: string | null,
    dm_room_id: string | null,
    sender_type: string,
    sender_id: string,
    bot_id: string | null,
    content: string,
    content_html: string | null,
    actions: string | null,
    created_at: string,
    edited_at: string | null,
    deleted_at: string | null,
  ) =>
    db.insertInto('messages').values({
      id,
      org_id,
      channel_id,
      topic_id,
      dm_room_id,
      sender_type: sender_type as 'user' | 'bot',
      sender_id,
      bot_id,
      content,
      content_html,
      actions,
      created_at,
      edited_at,
      deleted_at,
    }),
  // One statement with the outbox event on PostgreSQL (storage/pg-deferred-transaction.ts).
  { deferrable: true },
);

// Read and changed on every edit and delete: prepared once, not rebuilt.
const GET = prepared((db, id: string) =>
  db.selectFrom('messages').selectAll().where('id', '=', id).where('deleted_at', 'is', null),
);
const UPDATE = prepared(
  (
    db,
    id: string,
    content: string,
    content_html: string | null,
    actions: string | null,
    edited_at: string | null,
  ) => db.updateTable('messages').set({ content, content_html, actions, edited_at }).where('id', '=', id),
);

// Recent messages of a container (read_messages, GET …/messages): prepared per container kind. Only
// the columns that differ between rows are read (container ids, bot_id and deleted_at follow from the
// query): on SQLite, handing each value to JavaScript is most of the cost of a page of messages.
const LISTED = [
  'id',
  'org_id',
  'sender_type',
  'sender_id',
  'content',
  'content_html',
  'actions',
  'created_at',
  'edited_at',
] as const;
type Listed = Pick<MessageRow, (typeof LISTED)[number]>;
const listQuery = (column: 'channel_id' | 'topic_id' | 'dm_room_id') => ({
  latest: prepared((db, id: string, limit: number) =>
    db
      .selectFrom('messages')
      .select(LISTED)
      .where(column, '=', id)
      .where('deleted_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit),
  ),
  before: prepared((db, id: string, before: string, limit: number) =>
    db
      .selectFrom('messages')
      .select(LISTED)
      .where(column, '=', id)
      .where('deleted_at', 'is', null)
      .where('created_at', '<', before)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit),
  ),
});
const LIST = {
  channel: listQuery('channel_id'),
  topic: listQuery('topic_id'),
  dm_room: listQuery('dm_room_id'),
};

export class MessageStore {
  constructor(private readonly db: Executor) {}

  async insert(row: MessageRow): Promise<void> {
    await INSERT(
      this.db,
      row.id,
      row.org_id,
      row.channel_id,
      row.topic_id,
      row.dm_room_id,
      row.sender_type,
      row.sender_id,
      row.bot_id,
      row.content,
      row.content_html,
      row.actions,
      row.created_at,
      row.edited_at,
      row.deleted_at,
    );
  }

  /** A message that is not deleted. */
  async get(id: string): Promise<MessageRow | undefined> {
    return (await GET(this.db, id)).rows[0];
  }

  /** Newest first, deleted messages hidden. `before` pages back by created_at. */
  async listInContainer(c: ContainerRef, limit: number, before?: string): Promise<MessageRow[]> {
    const q = LIST[c.kind];
    const res = before ? await q.before(this.db, c.id, before, limit) : await q.latest(this.db, c.id, limit);
    const channelId = c.kind === 'channel' ? c.id : null;
    const topicId = c.kind === 'topic' ? c.id : null;
    const dmRoomId = c.kind === 'dm_room' ? c.id : null;
    // One literal with every field (not a spread): objects of one shape, cheap to build and to read.
    return res.rows.map((m: Listed): MessageRow => ({
      id: m.id,
      org_id: m.org_id,
      channel_id: channelId,
      topic_id: topicId,
      dm_room_id: dmRoomId,
      sender_type: m.sender_type,
      sender_id: m.sender_id,
      bot_id: m.sender_type === 'bot' ? m.sender_id : null,
      content: m.content,
      content_html: m.content_html,
      actions: m.actions,
      created_at: m.created_at,
      edited_at: m.edited_at,
      deleted_at: null,
    }));
  }

  async update(
    id: string,
    patch: Pick<MessageRow, 'content' | 'content_html' | 'actions' | 'edited_at'>,
  ): Promise<void> {
    await UPDATE(this.db, id, patch.content, patch.content_html, patch.actions, patch.edited_at);
  }

  /** Soft delete; returns false when it was already deleted (or does not exist). */
  async softDelete(id: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('messages')
      .set({ deleted_at: now })
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Text search over messages in the given containers (the caller passes what the actor can reach). */
  search(
    orgId: string,
    reach: { channelIds: string[]; topicIds: string[]; dmRoomIds: string[] },
    query: string,
    limit: number,
  ): Promise<MessageRow[]> {
    const { channelIds, topicIds, dmRoomIds } = reach;
    if (channelIds.length + topicIds.length + dmRoomIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('messages')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('deleted_at', 'is', null)
      .where((eb) => {
        const ors = [];
        if (channelIds.length) ors.push(eb('channel_id', 'in', channelIds));
        if (topicIds.length) ors.push(eb('topic_id', 'in', topicIds));
        if (dmRoomIds.length) ors.push(eb('dm_room_id', 'in', dmRoomIds));
        return eb.or(ors);
      })
      .where(containsInsensitive('content', query))
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
  }
}

export function containerOf(m: Pick<MessageRow, 'channel_id' | 'topic_id' | 'dm_room_id'>): ContainerRef {
  if (m.channel_id) return { kind: 'channel', id: m.channel_id };
  if (m.topic_id) return { kind: 'topic', id: m.topic_id };
  return { kind: 'dm_room', id: m.dm_room_id! };
}
