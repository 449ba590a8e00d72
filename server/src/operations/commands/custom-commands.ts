import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import { isUniqueViolation } from '../../storage/database.js';
import type { BotCommandRow, BotRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor } from '../context.js';
import { isSystemAdmin } from '../access.js';
import { loadVisibleBot } from '../bots/bots.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { write } from '../write.js';

/** Names of the built-in slash commands; a bot cannot register them. */
export const BUILTIN_COMMANDS = ['help'] as const;

/** A slash word: letters, digits, '_' and '-', starting with a letter or digit; stored lower-case. */
export const COMMAND_NAME_RE = /^[a-z0-9][a-z0-9_-]*$/;

export const commandName = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(LIMITS.commandName, `must be at most ${LIMITS.commandName} characters`)
  .refine((s) => !s.startsWith('/'), 'must be given without the leading slash')
  .transform((s) => s.toLowerCase())
  .refine(
    (s) => COMMAND_NAME_RE.test(s),
    'must contain only letters, digits, "_" and "-", and start with a letter or digit',
  );

export const CommandView = z.object({
  id: z.string(),
  bot_id: z.string(),
  command: z.string(),
  description: z.string(),
  usage_hint: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export const commandView = (c: BotCommandRow): z.infer<typeof CommandView> => ({
  id: c.id,
  bot_id: c.bot_id,
  command: c.command,
  description: c.description,
  usage_hint: c.usage_hint,
  created_at: c.created_at,
  updated_at: c.updated_at,
});

/**
 * Authentication rule 8. A bot key reaches only its own bot's commands: another {botId} answers 403,
 * whether or not that bot exists. With a user token, the bot must be visible (its organization's, or a
 * platform bot) else 404; any member may read; system_admin, org_admin and dept_admin of the bot's
 * organization may register and delete (system and platform bots: system_admin only, as for every
 * other management of those bots).
 */
export async function loadCommandBot(
  stores: Stores,
  actor: Actor,
  botId: string,
  access: 'read' | 'write',
): Promise<BotRow> {
  if (actor.kind === 'bot') {
    if (botId !== actor.botId) {
      throw new AppError(
        'forbidden',
        'A bot manages only its own commands: botId is not the bot of this key',
      );
    }
    const bot = await stores.bots.get(botId);
    if (!bot) throw notFound('Bot');
    return bot;
  }
  const bot = await loadVisibleBot(stores, actor, botId);
  if (access === 'read') return bot;
  if (bot.builtin !== null) {
    throw new AppError('forbidden', `The commands of the built-in bot ${bot.name} are defined in its code`);
  }
  if (isSystemAdmin(actor)) return bot;
  const admin = actor.role === 'org_admin' || actor.role === 'dept_admin';
  if (!admin || bot.org_id !== actor.orgId) {
    throw new AppError(
      'forbidden',
      'Only a system_admin, org_admin or dept_admin registers and deletes commands of a bot',
    );
  }
  if (bot.type !== 'custom') {
    throw new AppError('forbidden', `Only a system_admin manages the commands of the ${bot.type} bot`);
  }
  return bot;
}

export const listBotCommands = defineOperation({
  name: 'bots.commands.list',
  summary: 'Custom commands of a bot (bot key: its own only, scope bots:commands:read; users: any member)',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: listOf(CommandView),
  actors: ['user', 'bot'],
  scope: 'bots:commands:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadCommandBot(stores, ctx.actor, input.bot_id, 'read');
    return { items: (await stores.commands.listForBot(bot.id)).map(commandView) };
  },
});

export const registerBotCommand = defineOperation({
  name: 'bots.commands.register',
  summary:
    'Register a custom slash command of a bot; it appears in the slash palette at once. Name unique per bot (409).',
  input: z.strictObject({
    bot_id: uuid('bot'),
    command: commandName,
    description: z
      .string({ message: 'must be a string' })
      .trim()
      .min(1, 'must not be empty')
      .max(LIMITS.commandDescription, `must be at most ${LIMITS.commandDescription} characters`),
    usage_hint: z
      .string({ message: 'must be a string' })
      .max(LIMITS.commandUsageHint, `must be at most ${LIMITS.commandUsageHint} characters`)
      .optional(),
  }),
  output: CommandView,
  actors: ['user', 'bot'],
  scope: 'bots:commands:write',
  async run(ctx, input) {
    if ((BUILTIN_COMMANDS as readonly string[]).includes(input.command)) {
      throw new AppError('invalid_input', `command: /${input.command} is a built-in command`, {
        field: 'command',
      });
    }
    try {
      return await write(ctx, async ({ stores, now }) => {
        const bot = await loadCommandBot(stores, ctx.actor, input.bot_id, 'write');
        if (await stores.commands.get(bot.id, input.command)) {
          throw conflict(`The bot already has a command /${input.command}`);
        }
        const row: BotCommandRow = {
          id: newId(),
          bot_id: bot.id,
          org_id: bot.org_id,
          command: input.command,
          description: input.description,
          usage_hint: input.usage_hint ?? null,
          created_at: now,
          updated_at: now,
        };
        await stores.commands.insert(row);
        return commandView(row);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict(`The bot already has a command /${input.command}`);
      throw e;
    }
  },
});

export const deleteBotCommand = defineOperation({
  name: 'bots.commands.delete',
  summary: 'Delete a custom command of a bot',
  input: z.strictObject({ bot_id: uuid('bot'), command: z.string().max(LIMITS.commandName + 1) }),
  output: z.object({ bot_id: z.string(), command: z.string(), deleted: z.literal(true) }),
  actors: ['user', 'bot'],
  scope: 'bots:commands:write',
  async run(ctx, input) {
    return write(ctx, async ({ stores }) => {
      const bot = await loadCommandBot(stores, ctx.actor, input.bot_id, 'write');
      const name = input.command.replace(/^\//, '').toLowerCase();
      if (!(await stores.commands.delete(bot.id, name))) throw notFound(`Command /${name}`);
      return { bot_id: bot.id, command: name, deleted: true as const };
    });
  },
});
