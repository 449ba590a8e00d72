import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { notFound } from '../../domain/errors.js';
import { hashSecret } from '../../domain/secrets.js';
import { assertNotBuiltin, loadManagedBot } from '../bots/bots.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * The incoming-webhook token: for senders that cannot set an Authorization header (many SaaS "send a
 * webhook to this URL" forms), the bot's managers issue a token that goes in the URL's query
 * (`?token=`). It can only post messages as its bot (the incoming webhook accepts it, nothing else
 * does), is shown once, stored as its SHA-256, and replaced or revoked by the managers.
 *
 * Form: `writ_<64 hex>` (Workroom incoming token, 256 random bits): the fixed prefix lets secret
 * scanners find leaked ones: /\bwrit_[0-9a-f]{64}\b/
 */
export const INCOMING_TOKEN_RE = /^writ_[0-9a-f]{64}$/;
const generateIncomingToken = (): string => `writ_${randomBytes(32).toString('hex')}`;

export const createIncomingToken = defineOperation({
  name: 'bots.incoming_token.create',
  summary:
    "Issue the bot's incoming-webhook token (for POST /api/webhooks/incoming/{botId}?token=...), replacing any previous one. Shown once.",
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), token: z.string(), url: z.string(), created_at: z.string() }),
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, actor, input.bot_id);
      assertNotBuiltin(bot, 'incoming-webhook token');
      const token = generateIncomingToken();
      await stores.incomingTokens.put({
        bot_id: bot.id,
        token_hash: hashSecret(token),
        created_by: actor.kind === 'user' ? actor.userId : bot.id,
        created_at: now,
      });
      const url = `${ctx.services.config.publicUrl}/api/webhooks/incoming/${bot.id}?token=${token}`;
      return { bot_id: bot.id, token, url, created_at: now };
    });
  },
});

export const getIncomingToken = defineOperation({
  name: 'bots.incoming_token.get',
  summary: 'Whether the bot has an incoming-webhook token, and since when (never the token itself)',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), exists: z.boolean(), created_at: z.string().nullable() }),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    const row = await stores.incomingTokens.get(bot.id);
    return { bot_id: bot.id, exists: row !== undefined, created_at: row?.created_at ?? null };
  },
});

export const revokeIncomingToken = defineOperation({
  name: 'bots.incoming_token.revoke',
  summary: "Revoke the bot's incoming-webhook token; requests with it answer 401 from then on",
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), revoked: z.literal(true) }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      if (!(await stores.incomingTokens.delete(bot.id))) throw notFound('Incoming token');
      return { bot_id: bot.id, revoked: true as const };
    });
  },
});
