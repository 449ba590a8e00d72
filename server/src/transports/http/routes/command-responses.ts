import { z } from 'zod';
import {
  CommandResponseInput,
  CommandResponseOutput,
  respondToCommand,
} from '../../../operations/commands/responses.js';
import { readJsonObject, sendJson } from '../io.js';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };

/** The response URL a bot receives in command.invoked: the token in the path is its only credential. */
export const commandResponseRoutes: Route[] = [
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
      const body = await readJsonObject(rc.req, rc.services.config.maxBodyBytes);
      sendJson(rc.res, 200, await respondToCommand(rc.services, rc.params.token ?? '', body));
    },
  },
];
