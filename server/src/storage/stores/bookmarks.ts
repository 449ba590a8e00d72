import type { BookmarkRow, MessageRow } from '../schema.js';
import type { Executor } from './executor.js';

export interface BookmarkFilter {
  channelId: string;
  userId?: string | undefined;
  from?: string | undefined;
  /** Exclusive upper bound of created_at. */
  toExclusive?: string | undefined;
  sort: 'asc' | 'desc';
  limit: number;
}

export type BookmarkWithMessage = BookmarkRow & {
  message: Pick<MessageRow, 'content' | 'sender_type' | 'sender_id' | 'created_at'>;
};

/** Bookmarks: a user marks a message of a channel. Bookmarks of deleted messages are not listed. */
export class BookmarkStore {
  constructor(private readonly db: Executor) {}

  async insert(row: BookmarkRow): Promise<void> {
    await this.db.insertInto('bookmarks').values(row).execute();
  }

  get(userId: string, messageId: string): Promise<BookmarkRow | undefined> {
    return this.db
      .selectFrom('bookmarks')
      .selectAll()
      .where('user_id', '=', userId)
      .where('message_id', '=', messageId)
      .executeTakeFirst();
  }

  async delete(userId: string, channelId: string, messageId: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('bookmarks')
      .where('user_id', '=', userId)
      .where('channel_id', '=', channelId)
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async list(f: BookmarkFilter): Promise<BookmarkWithMessage[]> {
    let q = this.db
      .selectFrom('bookmarks')
      .innerJoin('messages', 'messages.id', 'bookmarks.message_id')
      .selectAll('bookmarks')
      .select([
        'messages.content as m_content',
        'messages.sender_type as m_sender_type',
        'messages.sender_id as m_sender_id',
        'messages.created_at as m_created_at',
      ])
      .where('bookmarks.channel_id', '=', f.channelId)
      .where('messages.deleted_at', 'is', null);
    if (f.userId) q = q.where('bookmarks.user_id', '=', f.userId);
    if (f.from) q = q.where('bookmarks.created_at', '>=', f.from);
    if (f.toExclusive) q = q.where('bookmarks.created_at', '<', f.toExclusive);
    const rows = await q
      .orderBy('bookmarks.created_at', f.sort)
      .orderBy('bookmarks.id', f.sort)
      .limit(f.limit)
      .execute();
    return rows.map(({ m_content, m_sender_type, m_sender_id, m_created_at, ...b }) => ({
      ...b,
      message: {
        content: m_content,
        sender_type: m_sender_type,
        sender_id: m_sender_id,
        created_at: m_created_at,
      },
    }));
  }
}
