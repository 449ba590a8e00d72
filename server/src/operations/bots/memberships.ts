import { z } from 'zod';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { loadManagedBot } from './bots.js';

export const BotMembershipView = z.object({
  kind: z.enum(['channel', 'project', 'topic', 'dm_room']),
  id: z.string(),
  name: z.string().describe('the channel, project or topic name; for a DM room, its members'),
  project_id: z.string().nullable().describe("a topic's project; null otherwise"),
});

/**
 * Where a bot is a member (channels, projects and their topics, DM rooms), for a manager picking the
 * containers of a key's grants (the admin screen's grant editor; docs/API.md, "Agent grants").
 */
export const listBotMemberships = defineOperation({
  name: 'bots.memberships.list',
  summary:
    "Channels, projects (with their topics) and DM rooms a bot you manage is a member of: what a key's containers grant may name",
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: listOf(BotMembershipView),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    const me = { type: 'bot' as const, id: bot.id };
    const [channels, projects, rooms] = await Promise.all([
      stores.containers.listChannels(bot.org_id, me, { onlyMemberOf: true }),
      stores.containers.listProjects(bot.org_id, me, { all: false }),
      stores.containers.listDmRooms(bot.org_id, me, 200),
    ]);
    const topics = await stores.containers.listTopics(projects.map((p) => p.id));
    const items: z.infer<typeof BotMembershipView>[] = [
      ...channels.map((c) => ({ kind: 'channel' as const, id: c.id, name: c.name, project_id: null })),
      ...projects.flatMap((p) => [
        { kind: 'project' as const, id: p.id, name: p.name, project_id: null },
        ...topics
          .filter((t) => t.project_id === p.id)
          .map((t) => ({ kind: 'topic' as const, id: t.id, name: t.name, project_id: p.id })),
      ]),
    ];
    for (const r of rooms)
      items.push({ kind: 'dm_room', id: r.id, name: await roomName(r.member_key, stores), project_id: null });
    return { items };
  },
});

/** A DM room's members by name (the bot itself left out). */
async function roomName(memberKey: string, stores: Parameters<typeof loadManagedBot>[0]): Promise<string> {
  const names: string[] = [];
  for (const k of memberKey.split(',')) {
    const [type, id] = k.split(':');
    if (type !== 'user' || !id) continue;
    names.push((await stores.users.get(id))?.display_name ?? id);
  }
  return names.length > 0 ? `DM with ${names.join(', ')}` : 'DM room';
}
