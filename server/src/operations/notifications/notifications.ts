import { z } from 'zod';
import { invalid } from '../../domain/errors.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * A user's notifications: what the server has to tell them outside any conversation (a bot's webhook
 * failed for good, was paused or turned off). The web app shows them; a notifications bot can relay them.
 */

export const NotificationView = z.object({
  id: z.string(),
  kind: z.string().describe('webhook.failed, webhook.paused, webhook.disabled'),
  title: z.string(),
  body: z.string(),
  data: z.record(z.string(), z.unknown()).describe('Ids of what it is about (bot_id, delivery_id)'),
  created_at: z.string(),
  read_at: z.string().nullable(),
});

/** Opaque page cursor over (created_at, id), for lists newest first (also the delivery log). */
export const encodeCursor = (n: { created_at: string; id: string }) =>
  Buffer.from(`${n.created_at}|${n.id}`).toString('base64url');
export function decodeCursor(cursor: string): { created_at: string; id: string } {
  const [created_at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!created_at || !id) throw invalid('cursor', 'cursor: not a cursor this API returned');
  return { created_at, id };
}

export const listNotifications = defineOperation({
  name: 'notifications.list',
  summary: 'Your notifications, newest first',
  input: z.strictObject({
    unread: z.enum(['true', 'false']).optional().describe('true: only those not marked read'),
    limit: limit(50, 200),
    cursor: z.string().max(200).optional().describe('next_cursor of the previous page'),
  }),
  output: z.object({ items: z.array(NotificationView), next_cursor: z.string().nullable() }),
  actors: ['user'],
  async run(ctx, input) {
    if (ctx.actor.kind !== 'user') return { items: [], next_cursor: null };
    const rows = await ctx.services.storage.stores.notifications.listForUser(ctx.actor.userId, {
      unreadOnly: input.unread === 'true',
      before: input.cursor ? decodeCursor(input.cursor) : undefined,
      limit: input.limit,
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((n) => ({ ...n, data: JSON.parse(n.data) as Record<string, unknown> })),
      next_cursor: last && rows.length === input.limit ? encodeCursor(last) : null,
    };
  },
});

export const markNotificationsRead = defineOperation({
  name: 'notifications.read',
  summary: 'Mark some of your notifications read',
  input: z.strictObject({ ids: z.array(uuid('notification')).min(1).max(200) }),
  output: z.object({ marked: z.number().int() }),
  actors: ['user'],
  async run(ctx, input) {
    const actor = ctx.actor;
    if (actor.kind !== 'user') return { marked: 0 };
    return write(ctx, async ({ stores, now }) => ({
      marked: await stores.notifications.markRead(actor.userId, input.ids, now),
    }));
  },
});
