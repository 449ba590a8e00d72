import { z } from 'zod';
import { LIMITS } from '../../domain/limits.js';
import { actorRef } from '../context.js';
import { defineOperation } from '../operation.js';
import { limit } from '../schemas.js';
import {
  ChannelView,
  channelView,
  MessageView,
  messageView,
  TaskView,
  taskView,
  UserView,
  userView,
} from '../views.js';
import { reachableChannels, reachableTopics } from '../containers/list-containers.js';

export const SEARCH_TYPES = ['messages', 'users', 'tasks', 'channels', 'all'] as const;

export const SearchInput = z.strictObject({
  query: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .describe('Text to look for (case-insensitive substring)'),
  type: z
    .enum(SEARCH_TYPES)
    .default('all')
    .describe('Which category to search: messages, users, tasks, channels, or all'),
  limit: limit(LIMITS.search.default, LIMITS.search.max).describe(
    `Maximum results per category (default ${LIMITS.search.default}, at most ${LIMITS.search.max})`,
  ),
});

export const SearchResultView = z.object({
  query: z.string(),
  messages: z.array(MessageView).optional(),
  users: z.array(UserView).optional(),
  tasks: z.array(TaskView).optional(),
  channels: z.array(ChannelView).optional(),
});
export type SearchResultView = z.infer<typeof SearchResultView>;

/**
 * Searches what the caller can reach, in its own organization only: messages of its channels, topics
 * and DM rooms; users of its organization; tasks of its topics; channels it can see. No scope needed.
 */
export const search = defineOperation({
  name: 'search',
  summary: 'Search messages, users, tasks and channels you can reach (case-insensitive substring match)',
  input: SearchInput,
  output: SearchResultView,
  actors: ['user', 'bot'],
  scope: 'any',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    const want = (t: (typeof SEARCH_TYPES)[number]) => input.type === 'all' || input.type === t;
    const out: SearchResultView = { query: input.query };
    const needTopics = want('messages') || want('tasks');
    const topicIds = needTopics ? (await reachableTopics(stores, actor)).map((t) => t.id) : [];
    if (want('messages')) {
      const [channels, dms] = await Promise.all([
        reachableChannels(stores, actor),
        stores.containers.listDmRooms(actor.orgId, actorRef(actor)),
      ]);
      const rows = await stores.messages.search(
        actor.orgId,
        { channelIds: channels.map((c) => c.id), topicIds, dmRoomIds: dms.map((d) => d.id) },
        input.query,
        input.limit,
      );
      out.messages = rows.map(messageView);
    }
    if (want('users')) {
      const rows = await stores.users.list({ orgId: actor.orgId, query: input.query, limit: input.limit });
      out.users = rows.map(userView);
    }
    if (want('tasks'))
      out.tasks = (await stores.tasks.search(topicIds, input.query, input.limit)).map(taskView);
    if (want('channels'))
      out.channels = (await reachableChannels(stores, actor, input.query, input.limit)).map(channelView);
    return out;
  },
});
