import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { isUniqueViolation } from '../../storage/database.js';
import type { MemberRef } from '../../storage/stores/containers.js';
import type { Stores } from '../../storage/stores/index.js';
import { actorRef, type OpContext } from '../context.js';
import { isOrgAdmin, loadChannel } from '../access.js';
import { isPublishedToAllOrgs } from '../bots/bots.js';
import { defineOperation } from '../operation.js';
import { description, name, uuid } from '../schemas.js';
import { ChannelView, channelView, listOf } from '../views.js';
import { write } from '../write.js';

export const createChannel = defineOperation({
  name: 'channels.create',
  summary: 'Create a channel in your organization; you become its first member',
  input: z.strictObject({
    name,
    description: description.optional(),
    is_private: z.boolean().default(false),
  }),
  output: ChannelView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users create channels');
    try {
      return await write(ctx, async ({ stores, now, emit }) => {
        const row = {
          id: newId(),
          org_id: actor.orgId,
          name: input.name,
          description: input.description ?? '',
          is_private: input.is_private ? 1 : 0,
          created_by: actor.userId,
          created_at: now,
          updated_at: now,
        };
        await stores.containers.createChannel(row);
        await stores.containers.addMember('channel', row.id, { type: 'user', id: actor.userId }, now);
        const view = channelView(row);
        emit('channel.created', row.org_id, { channel_id: row.id, channel: view, actor_id: actor.userId });
        return view;
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict(`A channel named "${input.name}" already exists`);
      throw e;
    }
  },
});

export const getChannel = defineOperation({
  name: 'channels.get',
  summary: 'A channel you can see',
  input: z.strictObject({ channel_id: uuid('channel') }),
  output: ChannelView,
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    return channelView(await loadChannel(ctx.services.storage.stores, ctx.actor, input.channel_id, 'read'));
  },
});

export const listChannelsRest = defineOperation({
  name: 'channels.list',
  summary: 'Channels you can see (bots: channels they are members of)',
  input: z.strictObject({
    q: z.string().max(200).optional(),
    joined: z.enum(['true', 'false']).optional().describe('true: only channels you are a member of'),
  }),
  output: listOf(ChannelView),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const rows = await ctx.services.storage.stores.containers.listChannels(
      ctx.actor.orgId,
      actorRef(ctx.actor),
      {
        onlyMemberOf: ctx.actor.kind === 'bot' || input.joined === 'true',
        ...(input.q !== undefined && { query: input.q }),
      },
    );
    return { items: rows.map(channelView) };
  },
});

export const updateChannel = defineOperation({
  name: 'channels.update',
  summary: 'Rename or describe a channel (its members or an org admin)',
  input: z.strictObject({
    channel_id: uuid('channel'),
    name: name.optional(),
    description: description.optional(),
    is_private: z.boolean().optional(),
  }),
  output: ChannelView,
  actors: ['user'],
  async run(ctx, input) {
    try {
      return await write(ctx, async ({ stores, now, emit }) => {
        const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'write');
        const patch = {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.is_private !== undefined && { is_private: input.is_private ? 1 : 0 }),
        };
        await stores.containers.updateChannel(ch.id, patch, now);
        const updated = channelView((await stores.containers.getChannel(ch.id))!);
        emit('channel.updated', ch.org_id, {
          channel_id: ch.id,
          channel: updated,
          changes: Object.keys(patch),
        });
        return updated;
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict(`A channel named "${input.name}" already exists`);
      throw e;
    }
  },
});

/** Member input `{ user_id }` or `{ bot_id }`: exactly one. */
export const memberInput = {
  user_id: uuid('user').optional(),
  bot_id: uuid('bot').optional(),
};
export const ONE_MEMBER = { message: 'exactly one of user_id and bot_id must be given', path: ['user_id'] };
export const oneMember = (v: { user_id?: string | undefined; bot_id?: string | undefined }) =>
  (v.user_id === undefined) !== (v.bot_id === undefined);

/** The member must exist in the same organization (platform bots may join any organization). */
export async function resolveMember(
  stores: Stores,
  orgId: string,
  v: { user_id?: string | undefined; bot_id?: string | undefined },
): Promise<MemberRef> {
  if (v.user_id) {
    const u = await stores.users.get(v.user_id);
    if (!u || u.org_id !== orgId) throw notFound('User');
    return { type: 'user', id: u.id };
  }
  const b = await stores.bots.get(v.bot_id!);
  if (!b || (b.org_id !== orgId && !isPublishedToAllOrgs(b))) throw notFound('Bot');
  return { type: 'bot', id: b.id };
}

/** Whether the member is a built-in bot (bots/), which any member of a container may remove. */
export async function isBuiltinBot(stores: Stores, member: MemberRef): Promise<boolean> {
  if (member.type !== 'bot') return false;
  return ((await stores.bots.get(member.id))?.builtin ?? null) !== null;
}

export const MembershipResult = z.object({
  member_type: z.enum(['user', 'bot']),
  member_id: z.string(),
  added: z.boolean().describe('false when it already was a member'),
});

/**
 * Adding to a channel: any member of a public channel may add others; private channels need a member;
 * org admins always may. Emits member.joined when the member is new.
 */
export const addChannelMember = defineOperation({
  name: 'channels.members.add',
  summary: 'Add a user or a bot to a channel',
  input: z.strictObject({ channel_id: uuid('channel'), ...memberInput }).refine(oneMember, ONE_MEMBER),
  output: MembershipResult,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'read');
      const member = await resolveMember(stores, ch.org_id, input);
      const selfJoin = member.type === 'user' && member.id === actorRef(ctx.actor).id;
      const isMember = await stores.containers.isMember('channel', ch.id, actorRef(ctx.actor));
      if (!isMember && !isOrgAdmin(ctx.actor, ch.org_id) && !(selfJoin && ch.is_private === 0)) {
        throw new AppError('forbidden', 'Only members of the channel can add others');
      }
      const added = await stores.containers.addMember('channel', ch.id, member, now);
      if (added)
        emit('member.joined', ch.org_id, {
          channel_id: ch.id,
          member_type: member.type,
          member_id: member.id,
          added_by: actorRef(ctx.actor).id,
        });
      return { member_type: member.type, member_id: member.id, added };
    });
  },
});

export const removeChannelMember = defineOperation({
  name: 'channels.members.remove',
  summary: 'Remove a user or a bot from a channel (yourself, or anyone as an org admin)',
  input: z.strictObject({ channel_id: uuid('channel'), ...memberInput }).refine(oneMember, ONE_MEMBER),
  output: z.object({ member_type: z.enum(['user', 'bot']), member_id: z.string(), removed: z.boolean() }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, emit }) => {
      const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'read');
      const member = await resolveMember(stores, ch.org_id, input);
      const self = member.type === 'user' && member.id === actorRef(ctx.actor).id;
      const ch_creator = ch.created_by === actorRef(ctx.actor).id;
      // A built-in platform bot joined where its command was used: any member may send it away.
      const builtinBot =
        (await isBuiltinBot(stores, member)) &&
        (await stores.containers.isMember('channel', ch.id, actorRef(ctx.actor)));
      if (!self && !ch_creator && !builtinBot && !isOrgAdmin(ctx.actor, ch.org_id)) {
        throw new AppError('forbidden', 'Only the channel creator or an org admin removes other members');
      }
      const removed = await stores.containers.removeMember('channel', ch.id, member);
      if (removed)
        emit('member.left', ch.org_id, {
          channel_id: ch.id,
          member_type: member.type,
          member_id: member.id,
          removed_by: actorRef(ctx.actor).id,
        });
      return { member_type: member.type, member_id: member.id, removed };
    });
  },
});

export const listChannelMembers = defineOperation({
  name: 'channels.members.list',
  summary: 'Members of a channel',
  input: z.strictObject({ channel_id: uuid('channel') }),
  output: listOf(
    z.object({ member_type: z.enum(['user', 'bot']), member_id: z.string(), joined_at: z.string() }),
  ),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx: OpContext, input: { channel_id: string }) {
    const stores = ctx.services.storage.stores;
    const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'read');
    return { items: await stores.containers.listMembers('channel', ch.id) };
  },
});

export const archiveChannel = defineOperation({
  name: 'channels.archive',
  summary:
    'Archive a channel (its creator or an org admin): it leaves the listings and takes no new messages; its history stays readable',
  input: z.strictObject({ channel_id: uuid('channel') }),
  output: ChannelView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'read');
      const by = actorRef(ctx.actor).id;
      if (ch.created_by !== by && !isOrgAdmin(ctx.actor, ch.org_id))
        throw new AppError('forbidden', 'Only the channel creator or an org admin archives a channel');
      if (!(await stores.containers.setArchived('channels', ch.id, now, now)))
        throw conflict('The channel is archived already');
      const view = channelView((await stores.containers.getChannel(ch.id))!);
      emit('channel.archived', ch.org_id, { channel_id: ch.id, channel: view, actor_id: by });
      return view;
    });
  },
});
