import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import type { Stores } from '../../storage/stores/index.js';
import { containerOf } from '../../storage/stores/messages.js';
import type { MessageRow } from '../../storage/schema.js';
import { actorRef, type Actor } from '../context.js';
import { inOrg, loadContainer } from '../access.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * Emoji reactions: anyone who may post in a message's room may react to it (a public channel's
 * non-member reads but does not post, so does not react either); one reaction per person, emoji and
 * message. Adding one that is there, or removing one that is not, changes nothing and emits nothing.
 */

/** One emoji: a short grapheme sequence or a :short_name:, without spaces or markup. */
export const emoji = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(64, 'must be at most 64 characters')
  .refine((s) => !/[\s<>&"'`]/.test(s), 'must be one emoji or :name:, without spaces or markup');

export const ReactionSummaryView = z.object({
  emoji: z.string(),
  count: z.number().int(),
  reactors: z
    .array(z.object({ type: z.enum(['user', 'bot']), id: z.string() }))
    .describe('Who reacted (the first 50)'),
});

const ReactionResult = z.object({
  message_id: z.string(),
  emoji: z.string(),
  changed: z.boolean().describe('false when the reaction already was (or was not) there'),
  reactions: z.array(ReactionSummaryView).describe("The message's reactions after the change"),
});

async function loadReactable(stores: Stores, actor: Actor, messageId: string): Promise<MessageRow> {
  const m = await stores.messages.get(messageId);
  if (!m || m.deleted_at !== null || !inOrg(actor, m.org_id)) throw notFound('Message');
  try {
    await loadContainer(stores, actor, containerOf(m), 'read');
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw notFound('Message');
    throw e;
  }
  await loadContainer(stores, actor, containerOf(m), 'write'); // 403 / 409: may read, may not post
  return m;
}

const input = z.strictObject({ message_id: uuid('message'), emoji });

function reactionOp(add: boolean) {
  return defineOperation({
    name: add ? 'messages.reactions.add' : 'messages.reactions.remove',
    summary: add
      ? 'React to a message with an emoji (anyone who may post in its room); emits reaction.added'
      : 'Take back your emoji reaction to a message; emits reaction.removed',
    input,
    output: ReactionResult,
    actors: ['user', 'bot'],
    scope: 'messages:write',
    dryRun: true,
    async run(ctx, input) {
      return write(ctx, async ({ stores, now, emit }) => {
        const m = await loadReactable(stores, ctx.actor, input.message_id);
        const reactor = actorRef(ctx.actor);
        const changed = add
          ? await stores.reactions.add({
              message_id: m.id,
              emoji: input.emoji,
              reactor_type: reactor.type,
              reactor_id: reactor.id,
              org_id: m.org_id,
              created_at: now,
            })
          : await stores.reactions.remove(m.id, input.emoji, reactor);
        const reactions = (await stores.reactions.summarize([m.id])).get(m.id) ?? [];
        if (changed)
          emit(add ? 'reaction.added' : 'reaction.removed', m.org_id, {
            message_id: m.id,
            channel_id: m.channel_id,
            topic_id: m.topic_id,
            dm_room_id: m.dm_room_id,
            emoji: input.emoji,
            reactor_type: reactor.type,
            reactor_id: reactor.id,
            count: reactions.find((r) => r.emoji === input.emoji)?.count ?? 0,
          });
        return { message_id: m.id, emoji: input.emoji, changed, reactions };
      });
    },
  });
}

export const addReaction = reactionOp(true);
export const removeReaction = reactionOp(false);
