import { z } from 'zod';
import {
  deleteBotCommand,
  listBotCommands,
  registerBotCommand,
} from '../../../operations/commands/custom-commands.js';
import {
  CommandResponseInput,
  CommandResponseOutput,
  respondToCommand,
} from '../../../operations/commands/responses.js';
import { executeSlashCommand, ExecuteOutput, listSlashCommands } from '../../../operations/commands/slash.js';
import { updateBotCommand } from '../../../operations/commands/update-command.js';
import { readJsonObject, sendJson } from '../../kit/io.js';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };
const conflictResponse = { 409: errorRef };

/** Slash commands: a bot's registered commands, the palette's list, execute, and the response URL a bot receives in command.invoked (the token in its path is its only credential). */
export const commandRoutes: Route[] = [
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
  {
    method: 'POST',
    path: '/api/commands/responses/{token}',
    auth: 'none',
    tags: ['slash commands'],
    doc: {
      summary:
        "Answer a user's slash command later, as the bot: the response_url of command.invoked (30 minutes, 5 uses)",
      requestBody: {
        required: true,
        content: { 'application/json': { schema: z.toJSONSchema(CommandResponseInput, { io: 'input' }) } },
      },
      responses: {
        200: {
          description: 'Posted (or, ephemeral, pushed to the invoking user only)',
          content: {
            'application/json': { schema: z.toJSONSchema(CommandResponseOutput, { io: 'output' }) },
          },
        },
        400: errorRef,
        403: errorRef,
        404: errorRef,
        409: errorRef,
      },
    },
    async handle(rc) {
      const { maxBodyBytes, http } = rc.services.config;
      const body = await readJsonObject(rc.req, maxBodyBytes, http.bodyTimeoutMs, rc.unauthenticatedBody);
      sendJson(rc.res, 200, await respondToCommand(rc.services, rc.params.token ?? '', body));
    },
  },
];
