import { listBookmarks, createBookmark, deleteBookmark } from '../../../operations/bookmarks/bookmarks.js';
import {
  deleteBotCommand,
  listBotCommands,
  registerBotCommand,
} from '../../../operations/commands/custom-commands.js';
import { executeSlashCommand, ExecuteOutput, listSlashCommands } from '../../../operations/commands/slash.js';
import { sendBotDm } from '../../../operations/dm/bot-dm.js';
import { FileView, listChannelFiles } from '../../../operations/files/files.js';
import { hashtagPreview, searchHashtags } from '../../../operations/hashtags/hashtags.js';
import { searchMentions } from '../../../operations/mentions/mentions.js';
import { updateBotCommand } from '../../../operations/commands/update-command.js';
import { invokeAction } from '../../../operations/messages/actions.js';
import { deleteMessage, editMessage } from '../../../operations/messages/edit-delete.js';
import { z } from 'zod';
import type { Route } from '../types.js';
import { handleDownload, handleUpload } from '../upload.js';

const fileViewSchema = z.toJSONSchema(FileView, { io: 'output' });
const errorRef = { $ref: '#/components/responses/Error' };
const conflictResponse = { 409: errorRef };

/** The bot REST API of the spec's "REST endpoints" table (bot auth and keys are in bots.ts). */
export const botApiRoutes: Route[] = [
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

  { method: 'GET', path: '/api/bots/{botId}/commands', op: listBotCommands, tags: ['bot commands'] },
  {
    method: 'POST',
    path: '/api/bots/{botId}/commands',
    op: registerBotCommand,
    status: 201,
    responses: conflictResponse,
    tags: ['bot commands'],
  },
  {
    method: 'DELETE',
    path: '/api/bots/{botId}/commands/{commandName}',
    op: deleteBotCommand,
    params: { commandName: 'command' },
    tags: ['bot commands'],
  },
  {
    method: 'PATCH',
    path: '/api/bots/{botId}/commands/{commandName}',
    op: updateBotCommand,
    params: { commandName: 'command' },
    tags: ['bot commands'],
  },

  {
    method: 'POST',
    path: '/api/channels/{channelId}/bookmarks',
    op: createBookmark,
    status: 201,
    responses: conflictResponse,
    tags: ['bookmarks'],
  },
  { method: 'GET', path: '/api/channels/{channelId}/bookmarks', op: listBookmarks, tags: ['bookmarks'] },
  {
    method: 'DELETE',
    path: '/api/channels/{channelId}/bookmarks/{messageId}',
    op: deleteBookmark,
    tags: ['bookmarks'],
  },

  { method: 'GET', path: '/api/channels/{channelId}/files', op: listChannelFiles, tags: ['files'] },
  {
    method: 'POST',
    path: '/api/channels/{channelId}/files',
    auth: 'any',
    tags: ['files'],
    handle: (rc) => handleUpload(rc, rc.params.channelId!),
    doc: {
      summary:
        'Upload a file to a channel (multipart/form-data, one file part; users: channel members; bots: scope files:write). The content type is sniffed from the bytes.',
      'x-bot-scope': 'files:write',
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: { file: { type: 'string', format: 'binary' } },
            },
          },
        },
      },
      responses: {
        201: { description: 'Stored', content: { 'application/json': { schema: fileViewSchema } } },
        400: errorRef,
        401: errorRef,
        403: errorRef,
        404: errorRef,
        413: errorRef,
        415: errorRef,
        429: errorRef,
      },
    },
  },
  {
    method: 'GET',
    path: '/api/files/{fileId}',
    auth: 'any',
    tags: ['files'],
    handle: (rc) => handleDownload(rc, rc.params.fileId!),
    doc: {
      summary:
        'Download a file (scope files:read): always Content-Disposition: attachment with X-Content-Type-Options: nosniff',
      'x-bot-scope': 'files:read',
      responses: {
        200: {
          description: 'The bytes, with the sniffed Content-Type',
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        },
        401: errorRef,
        403: errorRef,
        404: errorRef,
        429: errorRef,
      },
    },
  },

  { method: 'GET', path: '/api/mentions/users', op: searchMentions, tags: ['mentions'] },
  { method: 'GET', path: '/api/hashtags/search', op: searchHashtags, tags: ['hashtags'] },
  { method: 'GET', path: '/api/hashtags/preview/{type}/{id}', op: hashtagPreview, tags: ['hashtags'] },

  { method: 'GET', path: '/api/commands', op: listSlashCommands, tags: ['slash commands'] },
  {
    method: 'POST',
    path: '/api/commands/execute',
    op: executeSlashCommand,
    statusOf: (r) => ((r as { status: string }).status === 'dispatched' ? 202 : 200),
    responses: {
      202: {
        description: "A bot's command, recorded as a command.invoked event for delivery to the bot",
        content: { 'application/json': { schema: z.toJSONSchema(ExecuteOutput, { io: 'output' }) } },
      },
      409: errorRef,
    },
    tags: ['slash commands'],
  },
];
