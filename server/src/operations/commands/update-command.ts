import { z } from 'zod';
import { notFound } from '../../domain/errors.js';
import { LIMITS } from '../../domain/limits.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { write } from '../write.js';
import { CommandView, commandView, loadCommandBot } from './custom-commands.js';

/**
 * Edit a custom command's description and usage hint (its name is its identity: rename = delete and
 * register). Who may: as for registering (custom-commands.ts). The palette shows the change at once.
 */
export const updateBotCommand = defineOperation({
  name: 'bots.commands.update',
  summary: "Change a custom command's description or usage hint (null clears the hint)",
  input: z
    .strictObject({
      bot_id: uuid('bot'),
      command: z.string().max(LIMITS.commandName + 1),
      description: z
        .string({ message: 'must be a string' })
        .trim()
        .min(1, 'must not be empty')
        .max(LIMITS.commandDescription, `must be at most ${LIMITS.commandDescription} characters`)
        .optional(),
      usage_hint: z
        .string({ message: 'must be a string' })
        .max(LIMITS.commandUsageHint, `must be at most ${LIMITS.commandUsageHint} characters`)
        .nullable()
        .optional(),
    })
    .refine((v) => v.description !== undefined || v.usage_hint !== undefined, {
      message: 'give description, usage_hint or both',
      path: ['description'],
    }),
  output: CommandView,
  actors: ['user', 'bot'],
  scope: 'bots:commands:write',
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadCommandBot(stores, ctx.actor, input.bot_id, 'write');
      const name = input.command.replace(/^\//, '').toLowerCase();
      const cmd = await stores.commands.get(bot.id, name);
      if (!cmd) throw notFound(`Command /${name}`);
      const patch = {
        description: input.description ?? cmd.description,
        usage_hint:
          input.usage_hint === undefined ? cmd.usage_hint : input.usage_hint === '' ? null : input.usage_hint,
      };
      await stores.commands.update(cmd.id, patch, now);
      return commandView({ ...cmd, ...patch, updated_at: now });
    });
  },
});
