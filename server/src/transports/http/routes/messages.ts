import { sendBotDm } from '../../../operations/dm/bot-dm.js';
import { invokeAction } from '../../../operations/messages/actions.js';
import { deleteMessage, editMessage } from '../../../operations/messages/edit-delete.js';
import { listMessages, sendMessage } from '../../../operations/messages/messages.js';
import { addReaction, removeReaction } from '../../../operations/messages/reactions.js';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };
const conflictResponse = { 409: errorRef };

/** Messages: send and list in each kind of room, a bot's DM, edit, delete, and a click on an action. */
export const messageRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/channels/{channelId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
    preloadChannel: 'channelId',
  },
  {
    method: 'GET',
    path: '/api/channels/{channelId}/messages',
    op: listMessages,
    tags: ['messages'],
    preloadChannel: 'channelId',
  },
  {
    method: 'POST',
    path: '/api/topics/{topicId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
  },
  { method: 'GET', path: '/api/topics/{topicId}/messages', op: listMessages, tags: ['messages'] },
  {
    method: 'POST',
    path: '/api/dm-rooms/{dmRoomId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
  },
  { method: 'GET', path: '/api/dm-rooms/{dmRoomId}/messages', op: listMessages, tags: ['messages'] },
  {
    method: 'POST',
    path: '/api/bots/{botId}/dm-messages',
    op: sendBotDm,
    status: 201,
    idempotent: true,
    tags: ['bot messages'],
  },
  {
    method: 'PUT',
    path: '/api/messages/{id}',
    op: editMessage,
    params: { id: 'message_id' },
    idempotent: true,
    tags: ['messages'],
  },
  {
    method: 'DELETE',
    path: '/api/messages/{id}',
    op: deleteMessage,
    params: { id: 'message_id' },
    tags: ['messages'],
  },
  {
    method: 'POST',
    path: '/api/messages/{id}/actions',
    op: invokeAction,
    params: { id: 'message_id' },
    status: 202,
    idempotent: true,
    responses: conflictResponse,
    tags: ['messages'],
  },
  {
    method: 'POST',
    path: '/api/messages/{id}/reactions',
    op: addReaction,
    params: { id: 'message_id' },
    tags: ['messages'],
  },
  {
    method: 'DELETE',
    path: '/api/messages/{id}/reactions/{emoji}',
    op: removeReaction,
    params: { id: 'message_id' },
    tags: ['messages'],
  },
];
