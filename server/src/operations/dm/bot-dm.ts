import { z } from 'zod';
import { MessageActionsInput } from '../../domain/actions.js';
import { AppError, notFound } from '../../domain/errors.js';
import { imagePolicy } from '../../domain/sanitize.js';
import { findOrCreateDmRoom } from '../containers/dm-rooms.js';
import { insertMessage } from '../messages/messages.js';
import { outsideGrant } from '../access.js';
import { defineOperation } from '../operation.js';
import { content, contentHtml, uuid } from '../schemas.js';
import { MessageView, messageView } from '../views.js';
import { write } from '../write.js';

/**
 * A bot sends a direct message to a user of its organization: the DM room of exactly the bot and the
 * user is created on first use and reused afterwards.
 */
export const sendBotDm = defineOperation({
  name: 'bots.dm.send',
  summary:
    'Send a DM from the authenticated bot to a user of its organization, creating or reusing their DM room (scope messages:write); `actions` as for any bot message',
  input: z.strictObject({
    bot_id: uuid('bot'),
    user_id: uuid('user'),
    content,
    content_html: contentHtml.optional(),
    actions: MessageActionsInput.optional(),
  }),
  output: MessageView,
  actors: ['bot'],
  scope: 'messages:write',
  dryRun: true,
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'bot') throw new AppError('forbidden', 'Only bots send bot DMs');
    if (input.bot_id !== actor.botId) {
      throw new AppError('forbidden', 'The botId in the path is not the bot of this API key');
    }
    return write(ctx, async (tx) => {
      const user = await tx.stores.users.get(input.user_id);
      if (!user || user.org_id !== actor.orgId) throw notFound('User');
      if (user.status !== 'active') throw new AppError('forbidden', 'The user is deactivated');
      const bot = { type: 'bot' as const, id: actor.botId };
      const room = await findOrCreateDmRoom(tx, actor.orgId, [bot, { type: 'user', id: user.id }]);
      // A key granted some containers only: a DM room outside them (or a new one) is out of reach.
      if (outsideGrant(actor, room.id)) throw notFound('User');
      const c = { kind: 'dm_room' as const, id: room.id };
      return messageView(
        await insertMessage(tx, actor.orgId, c, bot, input, imagePolicy(ctx.services.config)),
      );
    });
  },
});
