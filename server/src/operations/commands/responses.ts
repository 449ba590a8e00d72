import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import type { Services } from '../context.js';
import { parseInput } from '../operation.js';
import { CommandReply, MAX_RESPONSES, postReply, ReplyView } from './dispatch.js';

/**
 * `POST /api/commands/responses/{token}`: the bot answers a command later (after its webhook answered,
 * or instead of answering it), with the same JSON as a synchronous answer. The token is the credential:
 * no API key is needed, so the URL may be handed to any worker of the bot.
 */

export const CommandResponseInput = CommandReply.strict();

export const CommandResponseOutput = ReplyView.extend({
  invocation_id: z.string(),
  responses_left: z
    .number()
    .int()
    .describe(`How many more times this URL may be used (${MAX_RESPONSES} in all)`),
});

export async function respondToCommand(
  services: Services,
  token: string,
  body: unknown,
): Promise<z.infer<typeof CommandResponseOutput>> {
  const grant = services.commands.tokens.read(token);
  // A forged, damaged or expired token looks the same: there is no such response URL (any more).
  if (!grant) throw notFound('Response URL (it is invalid or expired: they last 30 minutes)');
  const reply = parseInput(CommandResponseInput, body);
  if (!services.commands.claimUse(grant)) {
    throw new AppError('conflict', `This response URL was already used ${MAX_RESPONSES} times`);
  }
  const view = await postReply(services, grant, reply);
  return {
    ...view,
    invocation_id: grant.invocationId,
    responses_left: services.commands.responsesLeft(grant.invocationId),
  };
}
