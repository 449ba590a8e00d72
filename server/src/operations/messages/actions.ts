import { z } from 'zod';
import { ACTION_LIMITS, readActions } from '../../domain/actions.js';
import { AppError, invalid, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { Stores } from '../../storage/stores/index.js';
import { containerOf, type ContainerRef } from '../../storage/stores/messages.js';
import { loadContainer } from '../access.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * A user's click on a bot message's button or select (docs/ACTIONS.md): checked here, then recorded as
 * an `action.invoked` event in the outbox, which the fan-out routes to the bot that sent the message
 * only (delivery/fanout.ts) and the delivery worker sends as a signed webhook (retries, delivery log),
 * or hands to a built-in bot in process. The bot answers by editing its message (PUT /api/messages/{id}),
 * which every client sees as `message.updated`.
 */

export const InvokeActionInput = z.strictObject({
  message_id: uuid('message'),
  action_id: z
    .string({ message: 'is required' })
    .regex(ACTION_LIMITS.idPattern, 'must be 1 to 64 characters of a-z, 0-9, "_", "." and "-"'),
  value: z
    .string({ message: 'must be a string' })
    .max(ACTION_LIMITS.value, `must be at most ${ACTION_LIMITS.value} characters`)
    .optional()
    .describe("A select's chosen option value (required for selects); a button sends its own value"),
});

export const ActionInvokedView = z.object({
  status: z.literal('sent').describe('action.invoked was recorded for the bot; its reply comes as an edit'),
  invocation_id: z.string(),
  message_id: z.string(),
  action_id: z.string(),
  action_type: z.enum(['button', 'select']),
  value: z.string(),
  bot_id: z.string(),
  invoked_at: z.string(),
});
export type ActionInvokedView = z.infer<typeof ActionInvokedView>;

const gone = (why: string) =>
  new AppError('conflict', `${why}: the message's actions cannot be used now`, { field: 'message_id' });

/** Whether the bot is still a member of the container (a topic's: of its project). */
async function botReaches(stores: Stores, botId: string, c: ContainerRef): Promise<boolean> {
  const bot = { type: 'bot' as const, id: botId };
  switch (c.kind) {
    case 'channel':
      return (await stores.containers.getChannelFor(c.id, bot))?.is_member ?? false;
    case 'topic':
      return (await stores.containers.getTopicFor(c.id, bot))?.is_member ?? false;
    case 'dm_room':
      return stores.containers.isMember('dm_room', c.id, bot);
  }
}

export const invokeAction = defineOperation({
  name: 'messages.invokeAction',
  summary:
    'Click a button or choose an option of a bot message you can see: sends action.invoked to that bot (only), which may then update its message. Users only. 202 once recorded.',
  input: InvokeActionInput,
  output: ActionInvokedView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users click message actions');
    const stores = ctx.services.storage.stores;
    // Deleted messages are not found (stores.messages.get skips them), nor are invisible ones.
    const m = await stores.messages.get(input.message_id);
    // Clicks stay inside the user's organization (a system_admin moderating elsewhere does not click).
    if (!m || m.org_id !== actor.orgId) throw notFound('Message');
    const c = containerOf(m);
    try {
      await loadContainer(stores, actor, c, 'read');
    } catch (e) {
      if (e instanceof AppError && e.code === 'not_found') throw notFound('Message');
      throw e;
    }

    const actions = m.bot_id === null ? null : readActions(m.actions);
    if (!actions) throw invalid('action_id', 'this message has no actions');
    const action = actions.find((a) => a.id === input.action_id);
    if (!action) {
      throw invalid(
        'action_id',
        `this message has no action "${input.action_id}" (it has ${actions.map((a) => `"${a.id}"`).join(', ')}; the bot may have changed them)`,
      );
    }
    let value: string;
    if (action.type === 'button') {
      if (input.value !== undefined && input.value !== action.value) {
        throw invalid('value', 'a button sends its own value: omit value');
      }
      value = action.value;
    } else {
      if (input.value === undefined)
        throw invalid('value', 'is required for a select: the chosen option value');
      if (!action.options.some((o) => o.value === input.value)) {
        throw invalid('value', `is not one of the options of select "${action.id}"`);
      }
      value = input.value;
    }

    const bot = await stores.bots.get(m.bot_id!);
    if (!bot || bot.deleted_at !== null) throw gone('The bot that sent this message no longer exists');
    if (bot.status !== 'active') throw gone('The bot that sent this message is disabled');
    if (!(await botReaches(stores, bot.id, c))) {
      throw gone('The bot that sent this message is no longer a member here');
    }
    const user = await stores.users.get(actor.userId);
    if (!user) throw notFound('User');

    return write(ctx, async (tx) => {
      const view: ActionInvokedView = {
        status: 'sent',
        invocation_id: newId(),
        message_id: m.id,
        action_id: action.id,
        action_type: action.type,
        value,
        bot_id: bot.id,
        invoked_at: tx.now,
      };
      tx.emit('action.invoked', m.org_id, {
        invocation_id: view.invocation_id,
        action_id: action.id,
        action_type: action.type,
        value,
        user_id: user.id,
        user: { id: user.id, display_name: user.display_name },
        message_id: m.id,
        bot_id: bot.id,
        channel_id: m.channel_id,
        topic_id: m.topic_id,
        dm_room_id: m.dm_room_id,
        invoked_at: tx.now,
      });
      return view;
    });
  },
});
