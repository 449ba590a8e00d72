import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import { KeyGrantsInput, normalizeGrants, type KeyGrants } from '../../domain/grants.js';
import type { Stores } from '../../storage/stores/index.js';
import { newId } from '../../domain/ids.js';
import { SCOPES } from '../../domain/scopes.js';
import {
  decryptSecret,
  displayPrefix,
  encryptSecret,
  generateBotKey,
  generateWebhookSecret,
  hashSecret,
  KEY_TYPES,
} from '../../domain/secrets.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { ApiKeyView, apiKeyView, listOf } from '../views.js';
import { write } from '../write.js';
import { assertNotBuiltin, loadManagedBot } from './bots.js';
import type { OpContext, Services } from '../context.js';

export const issueApiKey = defineOperation({
  name: 'bots.keys.issue',
  summary: 'Issue an API key for a bot you manage. The full key is in this answer only.',
  input: z.strictObject({
    bot_id: uuid('bot'),
    key_type: z.enum(KEY_TYPES).default('live'),
    scopes: z.array(z.enum(SCOPES)).max(SCOPES.length).optional().describe('omitted or empty: every scope'),
    expires_in_days: z
      .number({ message: 'must be a number of days' })
      .int('must be a whole number of days')
      .min(1, 'must be at least 1')
      .max(3650, 'must be at most 3650')
      .optional(),
    name: z.string().max(200).optional(),
    grants: KeyGrantsInput.nullable().optional(),
  }),
  output: ApiKeyView.extend({ key: z.string().describe('The full key; shown only once') }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      assertNotBuiltin(bot, 'API keys');
      const grants = normalizeGrants(input.grants);
      await checkGrantContainers(stores, bot.id, grants);
      const key = generateBotKey(bot.id, input.key_type);
      const scopes = input.scopes && input.scopes.length > 0 ? [...new Set(input.scopes)] : null;
      const row = {
        id: newId(),
        bot_id: bot.id,
        key_hash: hashSecret(key),
        key_prefix: displayPrefix(key),
        key_type: input.key_type,
        scopes: scopes === null ? null : JSON.stringify(scopes),
        expires_at:
          input.expires_in_days === undefined
            ? null
            : new Date(Date.parse(now) + input.expires_in_days * 86_400_000).toISOString(),
        created_by: ctx.actor.kind === 'user' ? ctx.actor.userId : null,
        created_at: now,
        last_used_at: null,
        use_count: 0,
        revoked_at: null,
        grants: grants === null ? null : JSON.stringify(grants),
      };
      await stores.bots.insertKey(row);
      if (grants !== null) auditGrants(ctx, bot, row.id, null, grants);
      return { ...apiKeyView(row, now), key };
    });
  },
});

export const listApiKeys = defineOperation({
  name: 'bots.keys.list',
  summary: 'Keys of a bot you manage, with usage and state (never the keys themselves)',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: listOf(ApiKeyView),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    await ctx.services.keyUsage.flush();
    const now = ctx.services.clock.nowIso(); // "expired" by business time (runtime/clock.ts)
    return { items: (await stores.bots.listKeys(bot.id)).map((k) => apiKeyView(k, now)) };
  },
});

export const updateApiKey = defineOperation({
  name: 'bots.keys.update',
  summary:
    'Set or clear the grants of a bot\'s API key (null clears them; docs/API.md, "Agent grants"), or pause or resume it (`paused`; docs/API.md, "Guard rails"). Effective on the key\'s next request; audited.',
  input: z
    .strictObject({
      bot_id: uuid('bot'),
      key_id: uuid('key'),
      grants: KeyGrantsInput.nullable().optional(),
      paused: z
        .boolean({ message: 'must be true or false' })
        .optional()
        .describe('false resumes a paused key; true pauses it (refused with 403 key_paused until resumed)'),
    })
    .refine((v) => v.grants !== undefined || v.paused !== undefined, {
      message: 'give grants, paused or both',
      path: ['grants'],
    }),
  output: ApiKeyView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      const key = await stores.bots.getKey(bot.id, input.key_id);
      if (!key) throw notFound('API key');
      if (key.revoked_at !== null) throw conflict('The API key is revoked');
      const old = key.grants ?? null;
      let json = old;
      if (input.grants !== undefined) {
        const grants = normalizeGrants(input.grants);
        await checkGrantContainers(stores, bot.id, grants);
        json = grants === null ? null : JSON.stringify(grants);
        if (json !== old) {
          await stores.bots.setKeyGrants(key.id, json);
          auditGrants(ctx, bot, key.id, old === null ? null : (JSON.parse(old) as KeyGrants), grants);
        }
      }
      let paused = { paused_at: key.paused_at ?? null, paused_reason: key.paused_reason ?? null };
      if (input.paused !== undefined && ctx.actor.kind === 'user') {
        const changed = await setPaused(stores, ctx.actor.userId, key.id, input.paused, now);
        if (changed) {
          paused = changed;
          auditPause(ctx, bot, key.id, input.paused, key.paused_reason ?? null);
        }
      }
      return apiKeyView({ ...key, grants: json, ...paused }, now);
    });
  },
});

/**
 * `containers` of a grant must be channels, projects, topics or DM rooms the bot is a member of (a
 * topic through its project): 400 naming the first that is not (another organization's looks the same).
 */
async function checkGrantContainers(stores: Stores, botId: string, grants: KeyGrants | null): Promise<void> {
  const ids = grants?.containers ?? [];
  const bot = { type: 'bot' as const, id: botId };
  for (const [i, id] of ids.entries()) {
    const ok =
      (await stores.containers.isMember('channel', id, bot)) ||
      (await stores.containers.isMember('project', id, bot)) ||
      (await stores.containers.isMember('dm_room', id, bot)) ||
      ((await stores.containers.getTopicFor(id, bot))?.is_member ?? false);
    if (!ok) {
      throw new AppError(
        'invalid_input',
        `grants.containers.${i}: ${id} is not a channel, project, topic or DM room the bot is a member of`,
        { field: `grants.containers.${i}` },
      );
    }
  }
}

/** Pauses or resumes a key by hand: its new pause columns, or null when it was so already. */
async function setPaused(
  stores: Stores,
  userId: string,
  keyId: string,
  paused: boolean,
  now: string,
): Promise<{ paused_at: string | null; paused_reason: string | null } | null> {
  if (!paused) return (await stores.bots.resumeKey(keyId)) ? { paused_at: null, paused_reason: null } : null;
  const reason = `paused by a manager of the bot (user ${userId})`;
  return (await stores.bots.pauseKey(keyId, now, reason)) ? { paused_at: now, paused_reason: reason } : null;
}

/** A pause or resume by a manager, in the bot's audit (tool key.paused or key.resumed). */
function auditPause(
  ctx: OpContext,
  bot: { id: string; org_id: string },
  keyId: string,
  paused: boolean,
  reasonBefore: string | null,
): void {
  if (ctx.actor.kind !== 'user') return;
  ctx.services.toolCalls.record(
    { kind: 'bot', botId: bot.id, orgId: bot.org_id, botType: 'custom', keyId, scopes: null },
    paused ? 'key.paused' : 'key.resumed',
    'ok',
    null,
    0,
    paused
      ? { surface: 'admin', by: ctx.actor.userId }
      : { surface: 'admin', by: ctx.actor.userId, reason: reasonBefore ?? undefined },
  );
}

/** A change of a key's grants, in the bot's audit (tool grants.set): who, before and after. */
function auditGrants(
  ctx: OpContext,
  bot: { id: string; org_id: string },
  keyId: string,
  before: KeyGrants | null,
  after: KeyGrants | null,
): void {
  if (ctx.actor.kind !== 'user') return;
  ctx.services.toolCalls.record(
    { kind: 'bot', botId: bot.id, orgId: bot.org_id, botType: 'custom', keyId, scopes: null },
    'grants.set',
    'ok',
    null,
    0,
    { surface: 'admin', by: ctx.actor.userId, before, after },
  );
}

export const revokeApiKey = defineOperation({
  name: 'bots.keys.revoke',
  summary: 'Revoke a key at once: the very next request with it answers 401',
  input: z.strictObject({ bot_id: uuid('bot'), key_id: uuid('key') }),
  output: ApiKeyView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      const key = await stores.bots.getKey(bot.id, input.key_id);
      if (!key) throw notFound('API key');
      await stores.bots.revokeKey(key.id, now);
      return apiKeyView((await stores.bots.getKey(bot.id, key.id))!, now);
    });
  },
});

export const createWebhookSecret = defineOperation({
  name: 'bots.webhook_secret.create',
  summary: 'Create the webhook signing secret of a bot you manage, replacing any previous one. Shown once.',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), secret: z.string(), created_at: z.string() }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      assertNotBuiltin(bot, 'webhook signing secret');
      const secret = generateWebhookSecret();
      await stores.bots.putWebhookSecret(bot.id, encryptSecret(secret, ctx.services.encryptionKey), now);
      return { bot_id: bot.id, secret, created_at: now };
    });
  },
});

/** The current signing secret of a bot, for the webhook signer. */
export async function webhookSecretOf(services: Services, botId: string): Promise<string | null> {
  const row = await services.storage.stores.bots.getWebhookSecret(botId);
  return row
    ? decryptSecret(row.secret_encrypted, services.encryptionKey, services.previousEncryptionKeys)
    : null;
}

export const botAuth = defineOperation({
  name: 'bots.auth',
  summary: 'Check a bot API key and return the bot it belongs to, with the key scopes',
  input: z.strictObject({}),
  output: z.object({
    bot_id: z.string(),
    name: z.string(),
    type: z.string(),
    org_id: z.string(),
    status: z.string(),
    key_id: z.string(),
    key_type: z.string(),
    scopes: z.array(z.string()).nullable(),
    expires_at: z.string().nullable(),
  }),
  actors: ['bot'],
  scope: 'any',
  async run(ctx) {
    const { actor } = ctx;
    if (actor.kind !== 'bot') throw new AppError('forbidden', 'Only for bot keys');
    const stores = ctx.services.storage.stores;
    const bot = await stores.bots.get(actor.botId);
    const key = await stores.bots.getKey(actor.botId, actor.keyId);
    if (!bot || !key) throw new AppError('unauthenticated', 'The API key is not valid');
    return {
      bot_id: bot.id,
      name: bot.name,
      type: bot.type,
      org_id: bot.org_id,
      status: bot.status,
      key_id: key.id,
      key_type: key.key_type,
      scopes: actor.scopes,
      expires_at: key.expires_at,
    };
  },
});
