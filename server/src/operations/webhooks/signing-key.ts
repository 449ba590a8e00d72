import { z } from 'zod';
import { notFound } from '../../domain/errors.js';
import type { KeyObject } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../../domain/secrets.js';
import { generateSigningKey, signingKeyObject } from '../../outbound/sign.js';
import type { Services } from '../context.js';
import { assertNotBuiltin, loadManagedBot } from '../bots/bots.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { write } from '../write.js';

/**
 * ed25519 webhook signatures, an option per bot (issue 20, point 5; docs/WEBHOOKS.md "ed25519"): with a
 * signing key, every delivery's `webhook-signature` carries a Standard Webhooks `v1a,<base64>` signature
 * beside the HMAC `v1`, so that a receiver can verify with the public key alone (nothing secret on the
 * receiving side). The private key never leaves the server (stored encrypted like the webhook secret);
 * the public key (`whpk_<base64 of 32 bytes>`) can be read again at any time.
 */

const KeyView = z.object({
  bot_id: z.string(),
  public_key: z.string().describe('whpk_<base64 of the 32-byte ed25519 public key>: give it to the receiver'),
  created_at: z.string(),
});

export const createSigningKey = defineOperation({
  name: 'bots.webhook_signing_key.create',
  summary:
    'Give a bot you manage an ed25519 webhook signing key (replacing any previous one): its deliveries then also carry a Standard Webhooks v1a signature; answers the public key',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: KeyView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      assertNotBuiltin(bot, 'webhook signing key');
      const { signingKey, publicKey } = generateSigningKey();
      await stores.signingKeys.put({
        bot_id: bot.id,
        private_key_encrypted: encryptSecret(signingKey, ctx.services.encryptionKey),
        public_key: publicKey,
        created_at: now,
      });
      return { bot_id: bot.id, public_key: publicKey, created_at: now };
    });
  },
});

export const getSigningKey = defineOperation({
  name: 'bots.webhook_signing_key.get',
  summary:
    'The public ed25519 key that verifies the v1a signatures of a bot you manage (404 when it has none)',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: KeyView,
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    const row = await stores.signingKeys.get(bot.id);
    if (!row) throw notFound('Webhook signing key');
    return { bot_id: bot.id, public_key: row.public_key, created_at: row.created_at };
  },
});

export const deleteSigningKey = defineOperation({
  name: 'bots.webhook_signing_key.delete',
  summary:
    'Remove the ed25519 signing key of a bot you manage: its deliveries carry only the HMAC signatures again',
  input: z.strictObject({ bot_id: uuid('bot') }),
  output: z.object({ bot_id: z.string(), deleted: z.literal(true) }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores }) => {
      const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
      if (!(await stores.signingKeys.delete(bot.id))) throw notFound('Webhook signing key');
      return { bot_id: bot.id, deleted: true as const };
    });
  },
});

/** The bot's ed25519 key for signing (commands sent at once sign like the delivery worker), if it has one. */
export async function signingKeyOf(services: Services, botId: string): Promise<KeyObject | undefined> {
  const row = await services.storage.stores.signingKeys.get(botId);
  return row
    ? signingKeyObject(
        decryptSecret(row.private_key_encrypted, services.encryptionKey, services.previousEncryptionKeys),
      )
    : undefined;
}
