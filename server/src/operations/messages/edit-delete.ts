import { z } from 'zod';
import { MessageActionsInput, storeActions } from '../../domain/actions.js';
import { AppError, notFound } from '../../domain/errors.js';
import { imagePolicy, sanitizeMessageHtml } from '../../domain/sanitize.js';
import type { MessageRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { containerOf } from '../../storage/stores/messages.js';
import { actorRef, type Actor } from '../context.js';
import { inOrg, isSystemAdmin, loadContainer } from '../access.js';
import { noteChange } from '../audit/decision.js';
import { defineOperation } from '../operation.js';
import { content, contentHtml, uuid } from '../schemas.js';
import { MessageView, messageView } from '../views.js';
import { write } from '../write.js';
import { checkActionsAllowed, messageEventData } from './messages.js';
import { withFields } from '../../domain/objects.js';

/**
 * Authentication rule 7 of the spec: a user edits and deletes only its own messages, a bot only
 * messages whose bot_id is its own, a system_admin every message (moderation, also in DM rooms it is
 * not part of). A message the caller cannot see answers 404; one it sees but does not own answers 403.
 */
export async function loadOwnMessage(stores: Stores, actor: Actor, messageId: string): Promise<MessageRow> {
  const m = await stores.messages.get(messageId);
  if (!m || !inOrg(actor, m.org_id)) throw notFound('Message');
  if (isSystemAdmin(actor)) return m;
  try {
    await loadContainer(stores, actor, containerOf(m), 'read');
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw notFound('Message');
    throw e;
  }
  const own =
    actor.kind === 'user'
      ? m.sender_type === 'user' && m.sender_id === actor.userId
      : m.bot_id !== null && m.bot_id === actor.botId;
  if (!own) {
    throw new AppError(
      'forbidden',
      actor.kind === 'user'
        ? 'You can edit and delete only your own messages'
        : 'A bot can edit and delete only messages it sent',
    );
  }
  return m;
}

export const EditMessageInput = z.strictObject({
  message_id: uuid('message'),
  content,
  content_html: contentHtml.optional(),
  actions: MessageActionsInput.optional().describe(
    'Replaces the actions (bots only); null or [] removes them; omitted keeps them as they are',
  ),
});

export const editMessage = defineOperation({
  name: 'messages.edit',
  summary:
    'Replace the text of a message (yours; a bot: those it sent; system_admin: any). content_html is sanitized; omitting it clears it. `actions` (bots) replaces the buttons and selects, null or [] removes them, omitting keeps them. Emits message.updated.',
  input: EditMessageInput,
  output: MessageView,
  actors: ['user', 'bot'],
  scope: 'messages:write',
  dryRun: true,
  async run(ctx, input) {
    checkActionsAllowed(actorRef(ctx.actor), input.actions);
    return write(ctx, async ({ stores, now, emit }) => {
      const m = await loadOwnMessage(stores, ctx.actor, input.message_id);
      const updated: MessageRow = withFields(m, {
        content: input.content,
        content_html:
          input.content_html === undefined
            ? null
            : sanitizeMessageHtml(input.content_html, imagePolicy(ctx.services.config)),
        actions: input.actions === undefined ? m.actions : storeActions(input.actions),
        edited_at: now,
      });
      noteChange(ctx, m as unknown as Record<string, unknown>, {
        content: updated.content,
        content_html: updated.content_html,
        actions: updated.actions,
      });
      await stores.messages.update(m.id, {
        content: updated.content,
        content_html: updated.content_html,
        actions: updated.actions,
        edited_at: now,
      });
      const by = actorRef(ctx.actor);
      emit(
        'message.updated',
        m.org_id,
        withFields(messageEventData(updated), {
          previous_content: m.content,
          edited_by_type: by.type,
          edited_by_id: by.id,
        }),
      );
      return messageView(updated);
    });
  },
});

export const deleteMessage = defineOperation({
  name: 'messages.delete',
  summary:
    'Soft-delete a message (yours; a bot: those it sent; system_admin: any). It disappears from reads; emits message.deleted.',
  input: z.strictObject({ message_id: uuid('message') }),
  output: z.object({ id: z.string(), deleted: z.literal(true), deleted_at: z.string() }),
  actors: ['user', 'bot'],
  scope: 'messages:write',
  dryRun: true,
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const m = await loadOwnMessage(stores, ctx.actor, input.message_id);
      // A concurrent delete may have won: then this one answers as if the message were gone.
      if (!(await stores.messages.softDelete(m.id, now))) throw notFound('Message');
      const by = actorRef(ctx.actor);
      emit('message.deleted', m.org_id, {
        message_id: m.id,
        channel_id: m.channel_id,
        topic_id: m.topic_id,
        dm_room_id: m.dm_room_id,
        sender_id: m.sender_id,
        sender_type: m.sender_type,
        bot_id: m.bot_id,
        deleted_at: now,
        deleted_by_type: by.type,
        deleted_by_id: by.id,
      });
      return { id: m.id, deleted: true as const, deleted_at: now };
    });
  },
});
