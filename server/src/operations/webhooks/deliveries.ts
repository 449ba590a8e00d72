import type { Selectable } from 'kysely';
import { z } from 'zod';
import { conflict, invalid, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { AttemptRow, BotRow, DeliveryRow, WebhookHealthRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { loadManagedBot } from '../bots/bots.js';
import { decodeCursor, encodeCursor } from '../notifications/notifications.js';
import type { Actor } from '../context.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * The webhook delivery log and recovery, for the managers of a bot (the same rule as bot management:
 * its creator, its organization's admins, a system_admin): every delivery with every attempt, redeliver,
 * a test event, pause and resume. Catch-up (the events a bot was sent, after a position) also answers
 * the bot's own key, so a bot that was down longer than the retries can fetch what it missed.
 */

const ts = z.string().describe('ISO-8601 UTC timestamp');
const STATES = ['pending', 'delivered', 'failed'] as const;

const AttemptView = z.object({
  attempt: z.number().int(),
  started_at: ts,
  duration_ms: z.number().int(),
  status: z.number().int().nullable().describe('HTTP status of the answer; null when there was none'),
  error: z.string().nullable(),
  response_snippet: z.string().nullable().describe('The first 1 KB of the answer'),
});

export const DeliveryView = z.object({
  id: z.string().describe('Also the webhook-id header of every attempt'),
  bot_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  event_position: z
    .number()
    .int()
    .nullable()
    .describe('The event’s position in the outbox (catch-up cursor)'),
  state: z.enum(STATES),
  attempts: z.number().int().describe('Attempts in the current round (a redelivery starts a new round)'),
  next_attempt_at: ts.nullable().describe('When the next attempt is due, while pending'),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: ts,
  updated_at: ts,
  attempt_log: z.array(AttemptView).describe('Every attempt, oldest first'),
});
type DeliveryView = z.infer<typeof DeliveryView>;

const deliveryView = (d: Selectable<DeliveryRow>, attempts: Selectable<AttemptRow>[]): DeliveryView => ({
  id: d.id,
  bot_id: d.bot_id,
  event_id: d.event_id,
  event_type: d.event_type,
  event_position: d.event_position === null ? null : Number(d.event_position),
  state: d.state,
  attempts: d.attempts,
  next_attempt_at: d.state === 'pending' ? d.next_attempt_at : null,
  last_status: d.last_status,
  last_error: d.last_error,
  created_at: d.created_at,
  updated_at: d.updated_at,
  attempt_log: attempts.map((a) => ({
    attempt: a.attempt,
    started_at: a.started_at,
    duration_ms: a.duration_ms,
    status: a.status,
    error: a.error,
    response_snippet: a.response_snippet,
  })),
});

const WebhookStatusView = z.object({
  bot_id: z.string(),
  webhook_url: z.string().nullable(),
  paused: z.boolean(),
  paused_at: ts.nullable(),
  paused_reason: z.string().nullable(),
  consecutive_failures: z.number().int(),
  held_until: ts
    .nullable()
    .describe('Nothing is sent before this time: the receiver’s Retry-After, or the pace of max_per_minute'),
  held_reason: z.string().nullable(),
  max_per_minute: z
    .number()
    .int()
    .nullable()
    .describe('The most deliveries a minute the owner allows to this endpoint (null: no limit)'),
});
const statusView = (bot: BotRow, h: WebhookHealthRow | undefined, now: string) => {
  const held = h?.hold_until != null && h.hold_until > now;
  return {
    bot_id: bot.id,
    webhook_url: bot.webhook_url,
    paused: Boolean(h?.paused_at),
    paused_at: h?.paused_at ?? null,
    paused_reason: h?.paused_reason ?? null,
    consecutive_failures: h?.consecutive_failures ?? 0,
    held_until: held ? h.hold_until! : null,
    held_reason: held ? (h.hold_reason ?? null) : null,
    max_per_minute: h?.max_per_minute ?? null,
  };
};

async function withAttempts(stores: Stores, rows: Selectable<DeliveryRow>[]): Promise<DeliveryView[]> {
  const attempts = await stores.deliveries.attemptsOf(rows.map((r) => r.id));
  return rows.map((r) =>
    deliveryView(
      r,
      attempts.filter((a) => a.delivery_id === r.id),
    ),
  );
}

async function loadDelivery(
  stores: Stores,
  bot: BotRow,
  deliveryId: string,
): Promise<Selectable<DeliveryRow>> {
  const d = await stores.deliveries.get(deliveryId);
  if (!d || d.bot_id !== bot.id) throw notFound('Delivery');
  return d;
}

export const listDeliveries = defineOperation({
  name: 'webhooks.deliveries.list',
  summary: 'The delivery log of a bot you manage: newest first, each with every attempt; filter by state',
  input: z.strictObject({
    bot_id: uuid('bot'),
    state: z.enum(STATES).optional(),
    limit: limit(50, 200),
    cursor: z.string().max(200).optional().describe('next_cursor of the previous page'),
  }),
  output: z.object({ items: z.array(DeliveryView), next_cursor: z.string().nullable() }),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    const rows = await stores.deliveries.listForBot(bot.id, {
      state: input.state,
      before: input.cursor ? decodeCursor(input.cursor) : undefined,
      limit: input.limit,
    });
    const last = rows[rows.length - 1];
    return {
      items: await withAttempts(stores, rows),
      next_cursor: last && rows.length === input.limit ? encodeCursor(last) : null,
    };
  },
});

export const redeliver = defineOperation({
  name: 'webhooks.deliveries.redeliver',
  summary:
    'Send a delivered or failed delivery again, now, with the same webhook-id (a new round of attempts)',
  input: z.strictObject({ bot_id: uuid('bot'), delivery_id: uuid('delivery') }),
  output: DeliveryView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      const d = await loadDelivery(stores, bot, input.delivery_id);
      if (d.state === 'pending') throw conflict('This delivery is still pending; it will be attempted');
      await stores.deliveries.update(d.id, {
        state: 'pending',
        attempts: 0,
        next_attempt_at: now,
        updated_at: now,
      });
      return (await withAttempts(stores, [(await stores.deliveries.get(d.id))!]))[0]!;
    });
  },
});

export const sendTestEvent = defineOperation({
  name: 'webhooks.test',
  summary: 'Send a webhook.test event to the webhook of a bot you manage (signed and logged like any other)',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: DeliveryView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      if (!bot.webhook_url)
        throw invalid('webhook_url', 'The bot has no webhook URL to send a test event to');
      const actor = ctx.actor as Extract<Actor, { kind: 'user' }>;
      const row: DeliveryRow = {
        id: newId(),
        org_id: bot.org_id,
        bot_id: bot.id,
        event_id: newId(),
        event_seq: null,
        event_position: null,
        event_type: 'webhook.test',
        event_created_at: now,
        payload: JSON.stringify({
          bot_id: bot.id,
          requested_by: actor.userId,
          message: 'Test event from Workroom',
        }),
        state: 'pending',
        attempts: 0,
        next_attempt_at: now,
        last_attempt_at: null,
        last_status: null,
        last_error: null,
        created_at: now,
        updated_at: now,
      };
      await stores.deliveries.insertMany([row]);
      return deliveryView(row, []);
    });
  },
});

export const getWebhookStatus = defineOperation({
  name: 'webhooks.status',
  summary: 'Whether the webhook of a bot you manage is paused, and its failures in a row',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: WebhookStatusView,
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    return statusView(bot, await stores.deliveries.getHealth(bot.id), ctx.services.clock.nowIso());
  },
});

const setPaused = (paused: boolean) =>
  defineOperation({
    name: paused ? 'webhooks.pause' : 'webhooks.resume',
    summary: paused
      ? 'Pause the webhook of a bot you manage: new events are kept as pending deliveries, none is sent'
      : 'Resume the webhook of a bot you manage: the deliveries kept while paused are sent (those due at once)',
    input: z.strictObject({ bot_id: uuid('bot') }),
    output: WebhookStatusView,
    actors: ['user'],
    async run(ctx, input) {
      return write(ctx, async ({ stores, now }) => {
        const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
        const h = await stores.deliveries.getHealth(bot.id);
        const row: WebhookHealthRow = {
          bot_id: bot.id,
          consecutive_failures: paused ? (h?.consecutive_failures ?? 0) : 0,
          paused_at: paused ? (h?.paused_at ?? now) : null,
          paused_reason: paused ? (h?.paused_reason ?? 'paused by a manager') : null,
          updated_at: now,
        };
        await stores.deliveries.putHealth(row);
        // Resuming also ends a receiver's Retry-After hold: the manager decides it is ready.
        if (!paused) await stores.deliveries.clearHold(bot.id, now);
        const after = paused ? { ...h, ...row } : { ...h, ...row, hold_until: null, hold_reason: null };
        return statusView(bot, after, now);
      });
    },
  });
export const pauseWebhook = setPaused(true);

export const setWebhookRateLimit = defineOperation({
  name: 'webhooks.rate_limit.set',
  summary:
    'Set the most deliveries a minute the webhook of a bot you manage receives (null: no limit); deliveries are spaced 60 s / max apart, durably',
  input: z.strictObject({
    bot_id: uuid('bot'),
    max_per_minute: z
      .number()
      .int('must be a whole number')
      .min(1)
      .max(60_000)
      .nullable()
      .describe('Deliveries a minute, 1 to 60000; null removes the limit'),
  }),
  output: WebhookStatusView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      await stores.deliveries.setMaxPerMinute(bot.id, input.max_per_minute, now);
      // A pace's hold of the old limit ends: the new one spaces the next deliveries.
      const h = await stores.deliveries.getHealth(bot.id);
      if (h?.hold_reason?.startsWith('max_per_minute')) await stores.deliveries.clearHold(bot.id, now);
      return statusView(bot, await stores.deliveries.getHealth(bot.id), now);
    });
  },
});
export const resumeWebhook = setPaused(false);

const CatchUpEvent = z.object({
  position: z.number().int().describe('Pass the last one as `after` to read on'),
  event_id: z.string(),
  event_type: z.string(),
  timestamp: ts,
  data: z.unknown(),
  delivery_id: z.string().describe('The webhook-id it was (or is being) sent with'),
  delivery_state: z.enum(STATES),
});

export const listBotEvents = defineOperation({
  name: 'webhooks.events',
  summary:
    'Catch-up: the events fanned out to a bot after a position, oldest first (the bot’s own key, or a manager)',
  input: z.strictObject({
    bot_id: uuid('bot'),
    after: z.coerce.number().int('must be a whole number').min(0, 'must be 0 or more').default(0),
    limit: limit(100, 500),
  }),
  output: z.object({ items: z.array(CatchUpEvent), next_after: z.number().int() }),
  actors: ['user', 'bot'],
  scope: 'any',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    if (ctx.actor.kind === 'bot') {
      // A bot reads only its own events; any other bot id looks like nothing at all.
      if (ctx.actor.botId !== input.bot_id) throw notFound('Bot');
    } else {
      await loadManagedBot(stores, ctx.actor, input.bot_id);
    }
    const rows = await stores.deliveries.eventsForBot(input.bot_id, input.after, input.limit);
    const items = rows.map((r) => ({
      position: Number(r.position),
      event_id: r.event_id,
      event_type: r.event_type,
      timestamp: r.event_created_at,
      data: JSON.parse(r.data) as unknown,
      delivery_id: r.delivery_id,
      delivery_state: r.state,
    }));
    return { items, next_after: items.length > 0 ? items[items.length - 1]!.position : input.after };
  },
});
