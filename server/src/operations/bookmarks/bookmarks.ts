import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import { isUniqueViolation } from '../../storage/database.js';
import type { BookmarkRow, ChannelRow } from '../../storage/schema.js';
import type { BookmarkWithMessage } from '../../storage/stores/bookmarks.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor } from '../context.js';
import { loadChannel } from '../access.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { write } from '../write.js';

/**
 * Bookmarks link a user to a message of a channel. They are personal, so they take a user token (a
 * bot key answers 403); every operation needs membership of the channel: a channel the caller cannot
 * see answers 404, a visible one it is not a member of 403.
 */
async function loadMemberChannel(stores: Stores, actor: Actor, channelId: string): Promise<ChannelRow> {
  const ch = await loadChannel(stores, actor, channelId, 'read');
  if (
    actor.kind !== 'user' ||
    !(await stores.containers.isMember('channel', ch.id, { type: 'user', id: actor.userId }))
  ) {
    throw new AppError('forbidden', 'Only members of the channel use its bookmarks');
  }
  return ch;
}

export const BookmarkView = z.object({
  id: z.string(),
  user_id: z.string(),
  channel_id: z.string(),
  message_id: z.string(),
  created_at: z.string(),
  message: z
    .object({ content: z.string(), sender_type: z.string(), sender_id: z.string(), created_at: z.string() })
    .optional(),
});
const bookmarkView = (b: BookmarkRow | BookmarkWithMessage): z.infer<typeof BookmarkView> => ({
  id: b.id,
  user_id: b.user_id,
  channel_id: b.channel_id,
  message_id: b.message_id,
  created_at: b.created_at,
  ...('message' in b ? { message: b.message } : {}),
});

export const createBookmark = defineOperation({
  name: 'bookmarks.create',
  summary: 'Bookmark a message of a channel you are a member of (409 if you already did)',
  input: z.strictObject({ channel_id: uuid('channel'), message_id: uuid('message') }),
  output: BookmarkView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    try {
      return await write(ctx, async ({ stores, now }) => {
        const ch = await loadMemberChannel(stores, actor, input.channel_id);
        const m = await stores.messages.get(input.message_id);
        if (!m || m.channel_id !== ch.id) throw notFound('Message in this channel');
        const userId = actor.kind === 'user' ? actor.userId : '';
        if (await stores.bookmarks.get(userId, m.id)) throw conflict('You already bookmarked this message');
        const row: BookmarkRow = {
          id: newId(),
          org_id: ch.org_id,
          user_id: userId,
          channel_id: ch.id,
          message_id: m.id,
          created_at: now,
        };
        await stores.bookmarks.insert(row);
        return bookmarkView(row);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict('You already bookmarked this message');
      throw e;
    }
  },
});

const isoDateOrTime = z.union([z.iso.date(), z.iso.datetime({ offset: true })], {
  message: 'must be an ISO 8601 date (YYYY-MM-DD) or date-time',
});

/** A date-only bound names a whole UTC day: `from` its start, `to` its end. */
function bound(v: string, end: boolean): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) {
    const d = new Date(`${v}T00:00:00.000Z`);
    return new Date(d.getTime() + (end ? 86_400_000 : 0)).toISOString();
  }
  const t = new Date(v).getTime();
  return new Date(t + (end ? 1 : 0)).toISOString();
}

export const listBookmarks = defineOperation({
  name: 'bookmarks.list',
  summary:
    'Bookmarks of a channel (members only). from/to are inclusive ISO 8601 dates or date-times on the bookmark time; a date-only `to` includes that whole day.',
  input: z
    .strictObject({
      channel_id: uuid('channel'),
      user_id: uuid('user').optional(),
      from: isoDateOrTime.optional(),
      to: isoDateOrTime.optional(),
      sort: z.enum(['asc', 'desc'], { message: 'must be asc or desc' }).default('desc'),
      limit: limit(LIMITS.bookmarks.default, LIMITS.bookmarks.max),
    })
    .refine((v) => !v.from || !v.to || bound(v.from, false) < bound(v.to, true), {
      message: 'must not be before from',
      path: ['to'],
    }),
  output: listOf(BookmarkView),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const ch = await loadMemberChannel(stores, ctx.actor, input.channel_id);
    const rows = await stores.bookmarks.list({
      channelId: ch.id,
      userId: input.user_id,
      from: input.from === undefined ? undefined : bound(input.from, false),
      toExclusive: input.to === undefined ? undefined : bound(input.to, true),
      sort: input.sort,
      limit: input.limit,
    });
    return { items: rows.map(bookmarkView) };
  },
});

export const deleteBookmark = defineOperation({
  name: 'bookmarks.delete',
  summary: 'Remove your bookmark of a message in a channel',
  input: z.strictObject({ channel_id: uuid('channel'), message_id: uuid('message') }),
  output: z.object({ channel_id: z.string(), message_id: z.string(), deleted: z.literal(true) }),
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    return write(ctx, async ({ stores }) => {
      const ch = await loadMemberChannel(stores, actor, input.channel_id);
      const userId = actor.kind === 'user' ? actor.userId : '';
      if (!(await stores.bookmarks.delete(userId, ch.id, input.message_id))) throw notFound('Bookmark');
      return { channel_id: ch.id, message_id: input.message_id, deleted: true as const };
    });
  },
});
