import { z } from 'zod';
import { MessageActionsInput, readActions, storeActions, type MessageAction } from '../../domain/actions.js';
import { AppError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import {
  imagePolicy,
  OWN_IMAGES_ONLY,
  sanitizeMessageHtml,
  type ImagePolicy,
} from '../../domain/sanitize.js';
import type { MessageRow } from '../../storage/schema.js';
import type { ContainerRef } from '../../storage/stores/messages.js';
import { actorRef } from '../context.js';
import { loadContainer } from '../access.js';
import { ReactionSummaryView } from './reactions.js';
import { defineOperation } from '../operation.js';
import {
  containerFields,
  content,
  contentHtml,
  EXACTLY_ONE_CONTAINER,
  exactlyOneContainer,
  limit,
} from '../schemas.js';
import { listOf, MessageView, messageView } from '../views.js';
import { write, type WriteTx } from '../write.js';
import type { EventData } from '../../domain/events.js';

export function containerRef(v: {
  channel_id?: string | undefined;
  topic_id?: string | undefined;
  dm_room_id?: string | undefined;
}): ContainerRef {
  if (v.channel_id) return { kind: 'channel', id: v.channel_id };
  if (v.topic_id) return { kind: 'topic', id: v.topic_id };
  return { kind: 'dm_room', id: v.dm_room_id! };
}

/** Event data of message.* events: the spec's content, channel_id, sender_id, sender_type, and more. */
export function messageEventData(m: MessageRow): EventData<'message.created'> {
  return {
    message_id: m.id,
    content: m.content,
    content_html: m.content_html,
    channel_id: m.channel_id,
    topic_id: m.topic_id,
    dm_room_id: m.dm_room_id,
    sender_id: m.sender_id,
    sender_type: m.sender_type,
    bot_id: m.bot_id,
    actions: readActions(m.actions),
    created_at: m.created_at,
    edited_at: m.edited_at,
    deleted_at: m.deleted_at,
  };
}

/**
 * Only bots put actions on messages (a user's message with buttons would let anyone send clicks to a
 * bot that never offered them). `null` and `[]` (no actions) are accepted from everyone.
 */
export function checkActionsAllowed(
  sender: { type: 'user' | 'bot' },
  actions: readonly MessageAction[] | null | undefined,
): void {
  if (sender.type !== 'bot' && actions && actions.length > 0) {
    throw new AppError('forbidden', 'actions: only bots can put actions (buttons, selects) on messages', {
      field: 'actions',
    });
  }
}

/** Inserts a message in an already-authorized container and emits message.created. */
export async function insertMessage(
  tx: WriteTx,
  orgId: string,
  c: ContainerRef,
  sender: { type: 'user' | 'bot'; id: string },
  body: {
    content: string;
    content_html?: string | undefined;
    actions?: readonly MessageAction[] | null | undefined;
  },
  images: ImagePolicy = OWN_IMAGES_ONLY,
): Promise<MessageRow> {
  checkActionsAllowed(sender, body.actions);
  const row: MessageRow = {
    id: newId(),
    org_id: orgId,
    channel_id: c.kind === 'channel' ? c.id : null,
    topic_id: c.kind === 'topic' ? c.id : null,
    dm_room_id: c.kind === 'dm_room' ? c.id : null,
    sender_type: sender.type,
    sender_id: sender.id,
    bot_id: sender.type === 'bot' ? sender.id : null,
    content: body.content,
    content_html: body.content_html === undefined ? null : sanitizeMessageHtml(body.content_html, images),
    actions: storeActions(body.actions),
    created_at: tx.now,
    edited_at: null,
    deleted_at: null,
  };
  await tx.stores.messages.insert(row);
  tx.emit('message.created', orgId, messageEventData(row));
  return row;
}

export const SendMessageInput = z
  .strictObject({
    content,
    content_html: contentHtml.optional(),
    actions: MessageActionsInput.optional(),
    ...containerFields,
  })
  .refine(exactlyOneContainer, EXACTLY_ONE_CONTAINER);

export const sendMessage = defineOperation({
  name: 'messages.send',
  summary:
    'Post a message to a channel, topic or DM room you are a member of. A bot may add `actions` (buttons, selects; docs/ACTIONS.md); a user sending actions gets 403.',
  input: SendMessageInput,
  output: MessageView,
  actors: ['user', 'bot'],
  scope: 'messages:write',
  dryRun: true,
  async run(ctx, input) {
    const c = containerRef(input);
    checkActionsAllowed(actorRef(ctx.actor), input.actions);
    // Authorize first, then hold the write transaction only for the writes.
    const { orgId } = await loadContainer(ctx.services.storage.stores, ctx.actor, c, 'write', ctx.channel);
    return write(ctx, async (tx) =>
      messageView(
        await insertMessage(tx, orgId, c, actorRef(ctx.actor), input, imagePolicy(ctx.services.config)),
      ),
    );
  },
});

/* eslint-disable no-restricted-syntax -- built once, at start; the field order is the schema's */
export const ListMessagesInput = z
  .strictObject({
    ...containerFields,
    limit: limit(LIMITS.readMessages.default, LIMITS.readMessages.max),
    before: z.iso.datetime({ message: 'must be an ISO-8601 timestamp' }).optional(),
  })
  .refine(exactlyOneContainer, EXACTLY_ONE_CONTAINER);
/* eslint-enable no-restricted-syntax */

/** A message as listed: with its emoji reactions (counts and who). */
export const ListedMessageView = MessageView.extend({ reactions: z.array(ReactionSummaryView) });
export type ListedMessageView = z.infer<typeof ListedMessageView>;

/**
 * The view with its reactions added to the fresh literal (one hidden-class transition), not copied
 * into another object: 20 a page, on every read_messages and GET of messages.
 */
function listedView(m: MessageRow, reactions: ListedMessageView['reactions']): ListedMessageView {
  const view = messageView(m) as ListedMessageView;
  view.reactions = reactions;
  return view;
}

export const listMessages = defineOperation({
  name: 'messages.list',
  summary: 'Recent messages of a channel, topic or DM room, newest first (deleted ones hidden)',
  input: ListMessagesInput,
  output: listOf(ListedMessageView),
  actors: ['user', 'bot'],
  scope: 'messages:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const c = containerRef(input);
    await loadContainer(stores, ctx.actor, c, 'read', ctx.channel);
    const rows = await stores.messages.listInContainer(c, input.limit, input.before);
    const reactions = await stores.reactions.summarize(rows.map((r) => r.id));
    return { items: rows.map((r) => listedView(r, reactions.get(r.id) ?? [])) };
  },
});
