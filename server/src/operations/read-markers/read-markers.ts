import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import type { MarkerKind, UnreadRow } from '../../storage/stores/read-markers.js';
import { isOrgAdmin, loadContainer } from '../access.js';
import type { OpContext, UserActor } from '../context.js';
import { containerRef } from '../messages/messages.js';
import { defineOperation } from '../operation.js';
import { containerFields, EXACTLY_ONE_CONTAINER, exactlyOneContainer, uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * Server-side unread state. A user's read marker of a container (channel, topic, DM room) is the newest
 * message it has seen there; it only moves forward (in list order: created_at, then id), so a stale tab
 * can never make read messages unread again. Unread counts are the messages after the marker that are
 * neither deleted nor the user's own, counted up to UNREAD_CAP (the app shows "99+").
 */
export const UNREAD_CAP = 100;

const ReadMarkerView = z.object({
  container_type: z.enum(['channel', 'topic', 'dm_room']),
  container_id: z.string(),
  last_read_at: z.string().describe('created_at of the last message read'),
  last_read_message_id: z.string().nullable(),
  updated_at: z.string(),
});

function user(ctx: OpContext): UserActor {
  // actors: ['user'] has already refused bots; this narrows the type.
  if (ctx.actor.kind !== 'user') throw new AppError('forbidden', 'Read markers belong to users');
  return ctx.actor;
}

export const markRead = defineOperation({
  name: 'read_markers.mark',
  summary:
    'Mark a channel, topic or DM room read up to a message (the marker only moves forward); answers the marker and what is still unread after it',
  input: z
    .strictObject({ ...containerFields, message_id: uuid('message') })
    .refine(exactlyOneContainer, EXACTLY_ONE_CONTAINER),
  output: ReadMarkerView.extend({
    moved: z.boolean().describe('false when the marker was already at or after this message'),
    unread: z.number().describe(`Unread messages after the marker, at most ${UNREAD_CAP}`),
  }),
  actors: ['user'],
  async run(ctx, input) {
    const actor = user(ctx);
    const c = containerRef(input);
    const stores = ctx.services.storage.stores;
    await loadContainer(stores, actor, c, 'read');
    const m = await stores.messages.get(input.message_id);
    const column = c.kind === 'channel' ? m?.channel_id : c.kind === 'topic' ? m?.topic_id : m?.dm_room_id;
    if (!m || column !== c.id) throw notFound('Message');
    return write(ctx, async ({ stores: tx, now, emit }) => {
      const moved = await tx.readMarkers.advance({
        user_id: actor.userId,
        container_type: c.kind,
        container_id: c.id,
        last_read_at: m.created_at,
        last_read_message_id: m.id,
        updated_at: now,
      });
      const marker = (await tx.readMarkers.get(actor.userId, c.kind, c.id))!;
      const unread = await tx.readMarkers.countOne(
        actor.userId,
        c.kind,
        c.id,
        marker.last_read_at,
        UNREAD_CAP,
      );
      // The person's other tabs and devices learn it live (their own stream only, docs/REALTIME.md).
      if (moved) {
        emit('read_marker.updated', actor.orgId, {
          user_id: actor.userId,
          container_type: marker.container_type,
          container_id: marker.container_id,
          last_read_at: marker.last_read_at,
          last_read_message_id: marker.last_read_message_id,
          unread,
        });
      }
      return {
        container_type: marker.container_type,
        container_id: marker.container_id,
        last_read_at: marker.last_read_at,
        last_read_message_id: marker.last_read_message_id,
        updated_at: marker.updated_at,
        moved,
        unread,
      };
    });
  },
});

const UnreadItem = z.object({
  container_type: z.enum(['channel', 'topic', 'dm_room']),
  container_id: z.string(),
  unread: z.number().describe(`Messages after the marker, at most ${UNREAD_CAP} (show "99+" from 100)`),
  last_read_at: z.string().nullable().describe('null: never marked read (counted from joining)'),
  last_read_message_id: z.string().nullable(),
});

export const listUnread = defineOperation({
  name: 'read_markers.unread',
  summary:
    'Unread counts of the channels, topics and DM rooms you follow (those you belong to, and those you marked read and can still see); only containers with unread messages',
  input: z.strictObject({}),
  output: z.object({ items: z.array(UnreadItem), cap: z.number() }),
  actors: ['user'],
  async run(ctx) {
    const actor = user(ctx);
    const stores = ctx.services.storage.stores;
    const viewer = { userId: actor.userId, orgId: actor.orgId, orgAdmin: isOrgAdmin(actor, actor.orgId) };
    const kinds: MarkerKind[] = ['channel', 'topic', 'dm_room'];
    const lists: UnreadRow[][] = await Promise.all(
      kinds.map((k) => stores.readMarkers.unread(k, viewer, UNREAD_CAP)),
    );
    return { items: lists.flat(), cap: UNREAD_CAP };
  },
});
