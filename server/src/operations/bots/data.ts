import { z } from 'zod';
import { AppError, conflict, invalid, notFound } from '../../domain/errors.js';
import type { BotDataRow } from '../../storage/schema.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { chargeBotData } from '../quotas.js';
import { write } from '../write.js';
import { loadOwnBot } from './own-bot.js';

/**
 * Bot data (docs/SCHEDULER.md "Bot data"): a bot's own small JSON documents by key — a poll's votes,
 * a stand-up's set-up — versioned for compare-and-set. A bot reads and writes only its own.
 */

export const BOT_DATA_LIMITS = {
  key: 200,
  valueBytes: 64 * 1024,
  keysPerBot: 10_000,
  list: { default: 20, max: 100 },
  /** A list page stops early once its values add up to this (next_cursor continues). */
  pageBytes: 1024 * 1024,
} as const;

export const BOT_DATA_KEY_RE = /^[A-Za-z0-9_.:/-]{1,200}$/;

const key = z
  .string({ message: 'must be a string' })
  .regex(BOT_DATA_KEY_RE, 'must be 1 to 200 characters of A-Z, a-z, 0-9, "_", ".", ":", "/" and "-"');

const prefix = z
  .string({ message: 'must be a string' })
  .max(BOT_DATA_LIMITS.key, `must be at most ${BOT_DATA_LIMITS.key} characters`)
  .regex(/^[A-Za-z0-9_.:/-]*$/, 'may contain only A-Z, a-z, 0-9, "_", ".", ":", "/" and "-"');

/** A version for compare-and-set: a JSON number, or the text of one in a query string. */
const version = z.coerce
  .number({ message: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

export const BotDataView = z.object({
  key: z.string(),
  value: z.unknown().describe('The stored JSON value'),
  version: z.number().int().describe('1 when created, one more on every write'),
  created_at: z.string(),
  updated_at: z.string(),
});

const view = (r: BotDataRow): z.infer<typeof BotDataView> => ({
  key: r.key,
  value: JSON.parse(r.value) as unknown,
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export const getBotData = defineOperation({
  name: 'bots.data.get',
  summary: 'One document of the calling bot’s data (bot key of that bot, any scope); 404 when absent',
  input: z.strictObject({ bot_id: uuid('bot'), key }),
  output: BotDataView,
  actors: ['bot'],
  scope: 'any',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'data');
    const row = await stores.botData.get(bot.id, input.key);
    if (!row) throw notFound(`Key ${input.key}`);
    return view(row);
  },
});

export const putBotData = defineOperation({
  name: 'bots.data.put',
  summary:
    'Store a JSON value (at most 64 KB) under a key of the calling bot’s data. With if_version it is a compare-and-set: the write happens only if the stored version is that one (0: the key must not exist), else 409 conflict. At most 10,000 keys per bot.',
  input: z.strictObject({
    bot_id: uuid('bot'),
    key,
    value: z
      .unknown()
      .refine((v) => v !== undefined, 'is required (any JSON value)')
      .refine(
        (v) => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8') <= BOT_DATA_LIMITS.valueBytes,
        `must be at most ${BOT_DATA_LIMITS.valueBytes / 1024} KB as JSON`,
      )
      .describe('Any JSON value of at most 64 KB'),
    if_version: version
      .optional()
      .describe('Write only if the stored version is this one; 0 = only if the key does not exist'),
  }),
  output: BotDataView,
  actors: ['bot'],
  scope: 'any',
  mutates: true,
  async run(ctx, input) {
    const value = JSON.stringify(input.value);
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'data');
      for (let round = 0; ; round++) {
        const existing = await stores.botData.get(bot.id, input.key, true);
        const stored = existing?.version ?? 0;
        if (input.if_version !== undefined && input.if_version !== stored) {
          throw conflict(
            `Key ${input.key} is at version ${stored}, not ${input.if_version}` +
              (stored === 0 ? ' (it does not exist)' : ''),
          );
        }
        if (existing) {
          const grows = Buffer.byteLength(value) - Buffer.byteLength(existing.value);
          await chargeBotData(stores, ctx.services.config, existing.org_id, grows);
          const row = await stores.botData.update(bot.id, input.key, existing.version, value, now);
          if (row) return view(row);
          // Not written: give the bytes back before reading again.
          await chargeBotData(stores, ctx.services.config, existing.org_id, -grows);
        } else {
          await stores.botData.lockBot(bot.id);
          if ((await stores.botData.count(bot.id)) >= BOT_DATA_LIMITS.keysPerBot) {
            throw new AppError(
              'invalid_input',
              `key: the bot has ${BOT_DATA_LIMITS.keysPerBot} keys, the most it may have; delete some first`,
              { field: 'key' },
            );
          }
          const row: BotDataRow = {
            bot_id: bot.id,
            key: input.key,
            org_id: ctx.actor.orgId,
            value,
            version: 1,
            created_at: now,
            updated_at: now,
          };
          const bytes = Buffer.byteLength(value);
          await chargeBotData(stores, ctx.services.config, row.org_id, bytes);
          if (await stores.botData.insert(row)) return view(row);
          await chargeBotData(stores, ctx.services.config, row.org_id, -bytes);
        }
        // Changed by a concurrent write between our read and write (PostgreSQL): read again.
        if (round >= 2) throw conflict(`Key ${input.key} is being changed concurrently; retry`);
      }
    });
  },
});

export const deleteBotData = defineOperation({
  name: 'bots.data.delete',
  summary:
    'Delete a key of the calling bot’s data (bot key of that bot, any scope); with if_version only at that version (else 409)',
  input: z.strictObject({
    bot_id: uuid('bot'),
    key,
    if_version: version.min(1, 'must be 1 or more').optional(),
  }),
  output: z.object({ key: z.string(), deleted: z.literal(true) }),
  actors: ['bot'],
  scope: 'any',
  mutates: true,
  async run(ctx, input) {
    return write(ctx, async ({ stores }) => {
      const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'data');
      const existing = await stores.botData.get(bot.id, input.key, true);
      if (!existing) throw notFound(`Key ${input.key}`);
      if (input.if_version !== undefined && input.if_version !== existing.version) {
        throw conflict(`Key ${input.key} is at version ${existing.version}, not ${input.if_version}`);
      }
      if (!(await stores.botData.delete(bot.id, input.key, existing.version))) {
        throw conflict(`Key ${input.key} was changed concurrently; retry`);
      }
      await chargeBotData(stores, ctx.services.config, existing.org_id, -Buffer.byteLength(existing.value));
      return { key: input.key, deleted: true as const };
    });
  },
});

export const listBotData = defineOperation({
  name: 'bots.data.list',
  summary:
    'Documents of the calling bot’s data whose key starts with prefix, in key order (byte-wise), with their values; next_cursor continues (bot key of that bot, any scope)',
  input: z.strictObject({
    bot_id: uuid('bot'),
    prefix: prefix.default(''),
    limit: limit(BOT_DATA_LIMITS.list.default, BOT_DATA_LIMITS.list.max),
    cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  }),
  output: z.object({ items: z.array(BotDataView), next_cursor: z.string().nullable() }),
  actors: ['bot'],
  scope: 'any',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'data');
    let after: string | undefined;
    if (input.cursor !== undefined) {
      after = Buffer.from(input.cursor, 'base64url').toString('utf8');
      if (!BOT_DATA_KEY_RE.test(after)) throw invalid('cursor', 'not a cursor this API returned');
    }
    const rows = await stores.botData.list(bot.id, { prefix: input.prefix, after, limit: input.limit });
    const items: z.infer<typeof BotDataView>[] = [];
    let bytes = 0;
    let full = rows.length === input.limit;
    for (const r of rows) {
      if (items.length > 0 && bytes + r.value.length > BOT_DATA_LIMITS.pageBytes) {
        full = true;
        break;
      }
      bytes += r.value.length;
      items.push(view(r));
    }
    const last = items[items.length - 1];
    return {
      items,
      next_cursor: last && full ? Buffer.from(last.key, 'utf8').toString('base64url') : null,
    };
  },
});
