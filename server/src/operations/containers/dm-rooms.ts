import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { dmMemberKey, type MemberRef } from '../../storage/stores/containers.js';
import { actorRef, type Actor } from '../context.js';
import { outsideGrant } from '../access.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { DmRoomView, dmRoomView, listOf } from '../views.js';
import { emitResourcesChanged, write, type WriteTx } from '../write.js';
import { resolveMember } from './channels.js';

/**
 * Finds the DM room of exactly these members, or creates it. Safe against two requests creating the
 * same room at once (the member set is unique per organization).
 */
export async function findOrCreateDmRoom(tx: WriteTx, orgId: string, members: MemberRef[]) {
  const key = dmMemberKey(members);
  const existing = await tx.stores.containers.getDmRoomByMembers(orgId, key);
  if (existing) return existing;
  const unique = [...new Map(members.map((m) => [`${m.type}:${m.id}`, m])).values()];
  const { room, created } = await tx.stores.containers.createDmRoomOnce(
    { id: newId(), org_id: orgId, member_key: key, created_at: tx.now },
    unique,
  );
  if (created) emitResourcesChanged(tx, orgId, unique);
  return room;
}

export const createDmRoom = defineOperation({
  name: 'dm_rooms.create',
  summary:
    'Open (or reuse) a DM room with the given users of your organization, and bots (e.g. the built-in search bot)',
  input: z
    .strictObject({
      user_ids: z.array(uuid('user')).max(50).default([]),
      bot_ids: z
        .array(uuid('bot'))
        .max(5)
        .default([])
        .describe('Active bots of your organization to talk to in the room'),
    })
    .refine((v) => v.user_ids.length + v.bot_ids.length > 0, {
      message: 'must name at least one user or bot',
      path: ['user_ids'],
    }),
  output: DmRoomView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async (tx) => {
      const members: MemberRef[] = [actorRef(ctx.actor)];
      for (const id of input.user_ids)
        members.push(await resolveMember(tx.stores, ctx.actor.orgId, { user_id: id }));
      for (const id of input.bot_ids) {
        const bot = await tx.stores.bots.get(id);
        if (!bot || bot.org_id !== ctx.actor.orgId) throw notFound('Bot');
        if (bot.status !== 'active') throw new AppError('forbidden', `The bot ${bot.name} is disabled`);
        members.push({ type: 'bot', id: bot.id });
      }
      return dmRoomView(await findOrCreateDmRoom(tx, ctx.actor.orgId, members));
    });
  },
});

export const listDmRooms = defineOperation({
  name: 'dm_rooms.list',
  summary: 'DM rooms you are part of',
  input: z.strictObject({}),
  output: listOf(DmRoomView),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx) {
    const actor: Actor = ctx.actor;
    const rows = await ctx.services.storage.stores.containers.listDmRooms(actor.orgId, actorRef(actor));
    return { items: rows.filter((r) => !outsideGrant(actor, r.id)).map(dmRoomView) };
  },
});
