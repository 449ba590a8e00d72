import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import type { EventData } from '../../domain/events.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import type { CommandWithBot } from '../../storage/stores/commands.js';
import type { ContainerRef } from '../../storage/stores/messages.js';
import type { Stores } from '../../storage/stores/index.js';
import { loadContainer } from '../access.js';
import type { OpContext } from '../context.js';
import { addChannelMember } from '../containers/channels.js';
import { addProjectMember } from '../containers/projects.js';
import { defineOperation, runOperation } from '../operation.js';
import { containerFields, uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { write } from '../write.js';
import { containerRef } from '../messages/messages.js';
import { COMMAND_NAME_RE, type BUILTIN_COMMANDS } from './custom-commands.js';
import { DeliveryView, dispatchInvocation, ReplyView } from './dispatch.js';
import type { Invocation } from './response-token.js';

/**
 * The slash palette: built-in commands and the custom commands of the bots usable in the caller's
 * organization (its own active bots and platform bots). Slash commands are typed by users, so these
 * operations take a user token.
 */

const BUILTINS: Record<(typeof BUILTIN_COMMANDS)[number], { description: string; usage_hint: string }> = {
  help: { description: 'List the available slash commands, or explain one', usage_hint: '/help [command]' },
};

export const SlashCommandView = z.object({
  command: z.string(),
  description: z.string(),
  usage_hint: z.string().nullable(),
  source: z.enum(['builtin', 'bot']),
  bot_id: z.string().nullable(),
  bot_name: z.string().nullable(),
});
type SlashCommandView = z.infer<typeof SlashCommandView>;

const builtinViews = (): SlashCommandView[] =>
  Object.entries(BUILTINS).map(([command, b]) => ({
    command,
    description: b.description,
    usage_hint: b.usage_hint,
    source: 'builtin',
    bot_id: null,
    bot_name: null,
  }));

const botView = (c: CommandWithBot): SlashCommandView => ({
  command: c.command,
  description: c.description,
  usage_hint: c.usage_hint,
  source: 'bot',
  bot_id: c.bot_id,
  bot_name: c.bot_name,
});

export const listSlashCommands = defineOperation({
  name: 'commands.list',
  summary:
    'Slash commands available to you: built-in ones and the custom commands of your organization’s bots',
  input: z.strictObject({}),
  output: listOf(SlashCommandView),
  actors: ['user'],
  async run(ctx) {
    const custom = await ctx.services.storage.stores.commands.listAvailable(ctx.actor.orgId);
    return { items: [...builtinViews(), ...custom.map(botView)] };
  },
});

const helpText = (items: SlashCommandView[]): string =>
  [
    'Available commands:',
    ...items.map(
      (c) =>
        `/${c.command} — ${c.description}${c.bot_name ? ` (bot ${c.bot_name})` : ''}${c.usage_hint ? ` · ${c.usage_hint}` : ''}`,
    ),
  ].join('\n');

export const ExecuteInput = z
  .strictObject({
    text: z
      .string({ message: 'must be a string' })
      .max(LIMITS.slashCommandText, `must be at most ${LIMITS.slashCommandText} characters`)
      .refine((s) => s.startsWith('/'), 'must start with a slash, e.g. /help'),
    ...containerFields,
    bot_id: uuid('bot').optional().describe('Chooses the bot when several bots register the same command'),
  })
  .refine((v) => [v.channel_id, v.topic_id, v.dm_room_id].filter((x) => x !== undefined).length <= 1, {
    message: 'at most one of channel_id, topic_id, dm_room_id may be given',
    path: ['channel_id'],
  });

export const ExecuteOutput = z.object({
  status: z.enum(['completed', 'dispatched']),
  command: z.string(),
  args: z.string(),
  source: z.enum(['builtin', 'bot']),
  text: z.string().optional().describe('Answer of a built-in command'),
  invocation_id: z.string().optional().describe('Id of the command.invoked event of a bot command'),
  delivery: DeliveryView.optional().describe(
    "A bot's command: whether the bot got it at once, and if not why",
  ),
  reply: ReplyView.nullable()
    .optional()
    .describe("The bot's immediate answer: posted as its message, or (ephemeral) shown to you only"),
  reply_error: z.string().nullable().optional().describe("Why the bot's answer could not be used as a reply"),
  bot_id: z.string().nullable(),
  bot_name: z.string().nullable(),
  channel_id: z.string().nullable(),
  topic_id: z.string().nullable(),
  dm_room_id: z.string().nullable(),
});

/**
 * Runs a slash command. Built-ins answer at once (200, status "completed"). A bot's command is
 * validated, recorded as a command.invoked event in the outbox, and sent to the bot's webhook at once
 * (dispatch.ts); the answer says whether the bot got it and carries its reply, if any (202, status
 * "dispatched"). A bot that cannot be reached is reported in `delivery`, never as a server error.
 * Unknown commands answer 404 not_found. When a container is given it must be visible to the caller,
 * and the bot must be a member of it.
 */
export const executeSlashCommand = defineOperation({
  name: 'commands.execute',
  summary: 'Run a slash command, optionally in a channel, topic or DM room',
  input: ExecuteInput,
  output: ExecuteOutput,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Slash commands are run by users');
    const m = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(input.text.trim());
    const name = m?.[1]?.toLowerCase() ?? '';
    if (!m || !COMMAND_NAME_RE.test(name)) {
      throw new AppError('invalid_input', 'text: must be a slash command such as /help', { field: 'text' });
    }
    const args = (m[2] ?? '').trim();
    const given = input.channel_id ?? input.topic_id ?? input.dm_room_id;
    const c = given === undefined ? null : containerRef(input);
    const place = {
      channel_id: input.channel_id ?? null,
      topic_id: input.topic_id ?? null,
      dm_room_id: input.dm_room_id ?? null,
    };
    const stores = ctx.services.storage.stores;
    if (c) await loadContainer(stores, actor, c, 'read');

    if (name === 'help') {
      const all = [...builtinViews(), ...(await stores.commands.listAvailable(actor.orgId)).map(botView)];
      const wanted = args.replace(/^\//, '').toLowerCase();
      const shown = wanted ? all.filter((x) => x.command === wanted) : all;
      if (wanted && shown.length === 0) throw notFound(`Command /${wanted}`);
      return {
        status: 'completed' as const,
        command: name,
        args,
        source: 'builtin' as const,
        text: helpText(shown),
        bot_id: null,
        bot_name: null,
        ...place,
      };
    }

    let candidates = await stores.commands.listAvailable(actor.orgId, name);
    if (input.bot_id) candidates = candidates.filter((x) => x.bot_id === input.bot_id);
    if (candidates.length === 0) {
      const disabled = await stores.commands.listDisabledBuiltin(actor.orgId, name);
      if (disabled.length > 0) {
        throw new AppError(
          'forbidden',
          `/${name} is unavailable: the built-in bot ${disabled[0]!.bot_name} is disabled by the system administrator`,
        );
      }
      throw new AppError('not_found', `Unknown command /${name}; /help lists the available commands`);
    }
    if (candidates.length > 1 && c) {
      // Several bots register the name: the one that is here (a member of the room, or a system bot,
      // which answers anywhere) is meant. Only when that is still not one bot must the caller choose.
      const here = await botsPresentIn(stores, c, candidates);
      if (here.length >= 1) candidates = here;
    }
    if (candidates.length > 1) {
      throw conflict(
        `Several bots register /${name} (${candidates.map((x) => `${x.bot_name} ${x.bot_id}`).join(', ')}); name one with bot_id`,
      );
    }
    const cmd = candidates[0]!;
    // Built-in bots (docs/BUILTIN-BOTS.md): a system bot answers anywhere without being a member (it
    // acts as the invoking user and answers only them); a platform bot joins the channel or project
    // where its command is used, if the invoking user may add members there.
    const builtin = cmd.bot_builtin === null ? null : cmd.bot_type === 'system' ? 'system' : 'platform';
    if (c && builtin === 'platform') await joinPlatformBot(ctx, c, cmd.bot_id);
    const inv: Invocation = {
      invocationId: newId(),
      orgId: actor.orgId,
      botId: cmd.bot_id,
      userId: actor.userId,
      command: name,
      channelId: place.channel_id,
      topicId: place.topic_id,
      dmRoomId: place.dm_room_id,
    };
    const grant = ctx.services.commands.tokens.issue(inv);
    let data: EventData<'command.invoked'> | undefined;
    const recorded = await write(ctx, async ({ stores: tx, now, emit }) => {
      if (c && builtin !== 'system') {
        const kind = c.kind === 'topic' ? 'project' : c.kind;
        const parent = c.kind === 'topic' ? (await tx.containers.getTopic(c.id))!.project_id : c.id;
        if (!(await tx.containers.isMember(kind, parent, { type: 'bot', id: cmd.bot_id }))) {
          throw new AppError(
            'forbidden',
            `The bot ${cmd.bot_name} is not a member here; add it before using /${name}`,
          );
        }
      }
      data = {
        invocation_id: inv.invocationId,
        command: name,
        args,
        text: input.text,
        bot_id: cmd.bot_id,
        command_id: cmd.id,
        user_id: actor.userId,
        ...place,
        invoked_at: now,
        // Only the bot learns this URL (the event goes to it alone): it can post as the bot.
        response_url: `${ctx.services.config.publicUrl}/api/commands/responses/${grant.token}`,
        response_url_expires_at: new Date(grant.expiresAt).toISOString(),
      };
      emit('command.invoked', actor.orgId, data);
      return {
        status: 'dispatched' as const,
        command: name,
        args,
        source: 'bot' as const,
        invocation_id: inv.invocationId,
        bot_id: cmd.bot_id,
        bot_name: cmd.bot_name,
        ...place,
      };
    });
    // After the commit: the bot may answer through the response URL before this request ends.
    const sent = data!;
    return { ...recorded, ...(await dispatchInvocation(ctx.services, inv, sent, sent.invoked_at)) };
  },
});

/** The candidates whose bot is in the room: a member of it (of its project for a topic), or a system bot. */
async function botsPresentIn<T extends { bot_id: string; bot_type: string; bot_builtin: unknown }>(
  stores: Stores,
  c: ContainerRef,
  candidates: T[],
): Promise<T[]> {
  const kind = c.kind === 'topic' ? 'project' : c.kind;
  let parent = c.id;
  if (c.kind === 'topic') {
    const t = await stores.containers.getTopic(c.id);
    if (!t) return [];
    parent = t.project_id;
  }
  const out: T[] = [];
  for (const x of candidates) {
    const system = x.bot_builtin !== null && x.bot_type === 'system';
    if (system || (await stores.containers.isMember(kind, parent, { type: 'bot', id: x.bot_id })))
      out.push(x);
  }
  return out;
}

/**
 * Adds a built-in platform bot to the channel (or the topic's project) where its command is used, as
 * the invoking user, through the membership operations: so exactly when that user may add members
 * there. In a DM room nobody can add it, so the command is refused as for any bot that is not there.
 */
async function joinPlatformBot(ctx: OpContext, c: ContainerRef, botId: string): Promise<void> {
  const stores = ctx.services.storage.stores;
  if (c.kind === 'channel') {
    if (await stores.containers.isMember('channel', c.id, { type: 'bot', id: botId })) return;
    await runOperation(addChannelMember, ctx, { channel_id: c.id, bot_id: botId });
  } else if (c.kind === 'topic') {
    const topic = await stores.containers.getTopic(c.id);
    if (!topic) return;
    if (await stores.containers.isMember('project', topic.project_id, { type: 'bot', id: botId })) return;
    await runOperation(addProjectMember, ctx, { project_id: topic.project_id, bot_id: botId });
  }
}
