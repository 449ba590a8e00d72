import { z } from 'zod';
import { loadChannel } from '../access.js';
import { defineOperation } from '../operation.js';
import { limit, lookupQuery, uuid } from '../schemas.js';
import { listOf } from '../views.js';

/**
 * Mention suggestions while typing "@…": the specials @all and @here, users and departments of the
 * caller's organization, and the bots usable there. With channel_id (a channel the caller can see,
 * else 404), the channel's members come first, marked `in_channel`.
 */

const SPECIALS = [
  { name: 'all', description: 'Notify every member of the channel' },
  { name: 'here', description: 'Notify the members of the channel who are online' },
];

export const MentionItem = z.object({
  type: z.enum(['special', 'user', 'department', 'bot']),
  id: z.string().describe('"all" or "here" for specials'),
  name: z.string(),
  mention: z.string().describe('Text to insert, e.g. @all or @Ann Lee'),
  in_channel: z.boolean().describe('Whether the user or bot is a member of channel_id'),
  description: z.string().optional(),
  email: z.string().optional(),
  role: z.string().optional(),
  department: z.string().nullable().optional(),
  member_count: z.number().optional(),
  bot_type: z.string().optional(),
});
type MentionItem = z.infer<typeof MentionItem>;

export const searchMentions = defineOperation({
  name: 'mentions.users',
  summary: 'Mention suggestions: special (@all, @here), user, department or bot; channel members first',
  input: z.strictObject({
    q: lookupQuery,
    channel_id: uuid('channel').optional(),
    limit: limit(20, 50),
  }),
  output: listOf(MentionItem),
  actors: ['user', 'bot'],
  scope: 'users:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    const q = input.q.trim().replace(/^@/, '').toLowerCase();
    let channelId: string | null = null;
    if (input.channel_id) channelId = (await loadChannel(stores, actor, input.channel_id, 'read')).id;
    const orgId = channelId ? (await stores.containers.getChannel(channelId))!.org_id : actor.orgId;
    const [users, bots, departments] = await Promise.all([
      stores.directory.searchUsers(orgId, q, channelId, input.limit),
      stores.directory.searchBots(orgId, q, channelId, input.limit),
      stores.directory.searchDepartments(orgId, q, input.limit),
    ]);
    const specials: MentionItem[] = SPECIALS.filter((s) => s.name.startsWith(q)).map((s) => ({
      type: 'special',
      id: s.name,
      name: s.name,
      mention: `@${s.name}`,
      in_channel: channelId !== null,
      description: s.description,
    }));
    const userItems: MentionItem[] = users.map((u) => ({
      type: 'user',
      id: u.id,
      name: u.display_name,
      mention: `@${u.display_name}`,
      in_channel: u.in_channel,
      email: u.email,
      role: u.role,
      department: u.department,
    }));
    const botItems: MentionItem[] = bots.map((b) => ({
      type: 'bot',
      id: b.id,
      name: b.name,
      mention: `@${b.name}`,
      in_channel: b.in_channel,
      description: b.description,
      bot_type: b.type,
    }));
    const deptItems: MentionItem[] = departments.map((d) => ({
      type: 'department',
      id: d.id,
      name: d.name,
      mention: `@${d.name}`,
      in_channel: false,
      member_count: Number(d.member_count),
    }));
    // Specials, then channel members (users, then bots), then everyone else.
    const items = [
      ...specials,
      ...userItems.filter((i) => i.in_channel),
      ...botItems.filter((i) => i.in_channel),
      ...userItems.filter((i) => !i.in_channel),
      ...deptItems,
      ...botItems.filter((i) => !i.in_channel),
    ].slice(0, input.limit);
    return { items };
  },
});
