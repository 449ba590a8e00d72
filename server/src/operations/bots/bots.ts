import { z } from 'zod';
import type { Config } from '../../config/config.js';
import { checkWebhookUrl } from '../../outbound/client.js';
import { AppError, invalid, notFound } from '../../domain/errors.js';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../domain/events.js';
import { newId } from '../../domain/ids.js';
import type { BotRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor } from '../context.js';
import { inOrg, isOrgAdmin, isSystemAdmin } from '../access.js';
import { defineOperation } from '../operation.js';
import { description, name, uuid } from '../schemas.js';
import { BotView, botView, listOf } from '../views.js';
import { checkBotQuota } from '../quotas.js';
import { write } from '../write.js';

/**
 * Who manages which bot (the spec's bot-type table): system and platform bots only a system_admin;
 * a custom bot the user who registered it, its organization's admins, and a system_admin.
 */
export function canManageBot(actor: Actor, bot: BotRow): boolean {
  if (actor.kind !== 'user') return false;
  if (isSystemAdmin(actor)) return true;
  if (bot.type !== 'custom') return false;
  return bot.org_id === actor.orgId && (bot.created_by === actor.userId || isOrgAdmin(actor, bot.org_id));
}

/**
 * A platform bot registered through the API is published to every organization (one row serves all).
 * A built-in platform bot (bots/) has one row per organization instead, seen only in its own.
 */
export const isPublishedToAllOrgs = (bot: Pick<BotRow, 'type' | 'builtin'>): boolean =>
  bot.type === 'platform' && bot.builtin === null;

/** A bot the actor can see: its organization's bots and platform bots published to all. */
export async function loadVisibleBot(stores: Stores, actor: Actor, botId: string): Promise<BotRow> {
  const bot = await stores.bots.get(botId);
  if (!bot || (!inOrg(actor, bot.org_id) && !isPublishedToAllOrgs(bot))) throw notFound('Bot');
  return bot;
}

/** A bot the actor manages. Seeing but not managing answers 403; not seeing answers 404. */
export async function loadManagedBot(stores: Stores, actor: Actor, botId: string): Promise<BotRow> {
  const bot = await loadVisibleBot(stores, actor, botId);
  if (!canManageBot(actor, bot))
    throw new AppError('forbidden', `You cannot manage the ${bot.type} bot ${bot.name}`);
  return bot;
}

/**
 * A built-in bot runs inside the server (bots/): it has no webhook, no API keys, no incoming-webhook
 * token, and its events and commands are defined in its code.
 */
export function assertNotBuiltin(bot: BotRow, what: string): void {
  if (bot.builtin !== null) {
    throw new AppError(
      'forbidden',
      `${bot.name} is a built-in bot running inside the server: it has no ${what}`,
    );
  }
}

/** Non-managers do not see where a bot's webhooks go. */
const viewFor = (actor: Actor, bot: BotRow) => {
  const v = botView(bot);
  return canManageBot(actor, bot) ? v : { ...v, webhook_url: null };
};

const webhookUrl = z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' }).max(2000);
/**
 * Refuses, at registration, a webhook URL the delivery client would refuse anyway (private or loopback
 * literal addresses, localhost) unless WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS or
 * WORKROOM_WEBHOOK_ALLOWED_RANGES open it; names that resolve to private addresses are caught at delivery.
 */
function assertWebhookUrlAllowed(config: Config, url: string | null | undefined): void {
  if (!url) return;
  const why = checkWebhookUrl(url, {
    allowPrivate: config.webhooks.allowPrivateUrls,
    allowedRanges: config.webhooks.allowedRanges,
  });
  if (why) throw invalid('webhook_url', why);
}

const events = z.array(z.enum(SUBSCRIBABLE_EVENT_TYPES)).max(SUBSCRIBABLE_EVENT_TYPES.length);

export const createBot = defineOperation({
  name: 'bots.create',
  summary:
    'Register a bot: custom (any user) or platform (system_admin). System bots are registered in code.',
  input: z.strictObject({
    name,
    description: description.optional(),
    webhook_url: webhookUrl.optional(),
    events: events.optional(),
    type: z.enum(['custom', 'platform']).default('custom'),
  }),
  output: BotView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users register bots');
    if (input.type === 'platform' && !isSystemAdmin(actor)) {
      throw new AppError('forbidden', 'Only a system_admin registers platform bots');
    }
    assertWebhookUrlAllowed(ctx.services.config, input.webhook_url);
    return write(ctx, async ({ stores, now }) => {
      // Custom bots count against the organization's and the member's quotas (counted in this
      // transaction, under the organization's lock: parallel registrations cannot pass them together).
      if (input.type === 'custom') {
        await checkBotQuota(stores, ctx.services.config, actor.orgId, actor.userId);
      }
      const row: BotRow = {
        id: newId(),
        org_id: actor.orgId,
        type: input.type,
        name: input.name,
        description: input.description ?? '',
        webhook_url: input.webhook_url ?? null,
        events: JSON.stringify([...new Set(input.events ?? [])]),
        created_by: actor.userId,
        status: 'active',
        builtin: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      await stores.bots.insert(row);
      return botView(row);
    });
  },
});

export const listBots = defineOperation({
  name: 'bots.list',
  summary: "Bots of your organization and platform bots (a system_admin sees every organization's)",
  input: z.strictObject({}),
  output: listOf(BotView),
  actors: ['user'],
  async run(ctx) {
    const stores = ctx.services.storage.stores;
    const rows = isSystemAdmin(ctx.actor)
      ? await stores.bots.listAll()
      : await stores.bots.listVisible(ctx.actor.orgId);
    return { items: rows.map((b) => viewFor(ctx.actor, b)) };
  },
});

export const getBot = defineOperation({
  name: 'bots.get',
  summary: 'A bot you can see',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: BotView,
  actors: ['user'],
  async run(ctx, input) {
    return viewFor(ctx.actor, await loadVisibleBot(ctx.services.storage.stores, ctx.actor, input.bot_id));
  },
});

export const updateBot = defineOperation({
  name: 'bots.update',
  summary: 'Change a bot you manage: name, description, webhook URL, subscribed events, status',
  input: z.strictObject({
    bot_id: uuid('bot'),
    name: name.optional(),
    description: description.optional(),
    webhook_url: webhookUrl.nullable().optional(),
    events: events.optional(),
    status: z.enum(['active', 'disabled']).optional(),
  }),
  output: BotView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      if (bot.builtin !== null && input.webhook_url !== undefined) {
        throw invalid(
          'webhook_url',
          `${bot.name} is a built-in bot running inside the server: it has no webhook`,
        );
      }
      if (bot.builtin !== null && input.events !== undefined) {
        throw invalid('events', `the events of the built-in bot ${bot.name} are defined in its code`);
      }
      assertWebhookUrlAllowed(ctx.services.config, input.webhook_url);
      await stores.bots.update(
        bot.id,
        {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.webhook_url !== undefined && { webhook_url: input.webhook_url }),
          ...(input.events !== undefined && { events: JSON.stringify([...new Set(input.events)]) }),
          ...(input.status !== undefined && { status: input.status }),
        },
        now,
      );
      return botView((await stores.bots.get(bot.id))!);
    });
  },
});

export const deleteBot = defineOperation({
  name: 'bots.delete',
  summary: 'Delete a bot you manage; its keys stop working at once',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), deleted: z.literal(true) }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      if (bot.builtin !== null) {
        throw new AppError(
          'forbidden',
          `${bot.name} is a built-in bot and cannot be deleted; disable it instead (PATCH /api/builtin-bots/${bot.builtin} for every organization, or PATCH /api/bots/${bot.id} with status "disabled" for this one)`,
        );
      }
      await stores.bots.softDelete(bot.id, now);
      return { bot_id: bot.id, deleted: true as const };
    });
  },
});
