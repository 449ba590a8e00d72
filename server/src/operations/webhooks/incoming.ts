import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { hmacHex, standardWebhooksSignature } from '../../outbound/sign.js';
import { AppError, notFound } from '../../domain/errors.js';
import type { BotType } from '../../domain/roles.js';
import { hashSecret } from '../../domain/secrets.js';
import { authenticate, bearerCredential } from '../auth/authenticate.js';
import { webhookSecretOf } from '../bots/keys.js';
import type { BotActor, Services } from '../context.js';
import { withIdempotency, type IdempotentResult } from '../idempotency.js';
import { sendMessage } from '../messages/messages.js';
import { runOperation } from '../operation.js';
import { INCOMING_TOKEN_RE } from './incoming-token.js';

/**
 * The incoming webhook, POST /api/webhooks/incoming/{botId}: an outside system posts a message as the
 * bot. The posting itself is the send-message operation (same checks, same message.created event);
 * what is particular here is who may call it. Three ways, tried in this order (docs/WEBHOOKS.md):
 *  1. `Authorization: Bearer <bot API key>` of that bot, scope messages:write (another bot's key: 403);
 *  2. `?token=<incoming token>` issued by the bot's managers (for senders that cannot set headers);
 *  3. a signature of the raw body with the bot's webhook secret and a timestamp within five minutes:
 *     `X-Workroom-Signature: sha256=<hex HMAC-SHA256(secret, "<webhook-timestamp>.<body>")>`, or the
 *     Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature`.
 * Ways 2 and 3 act with the scope messages:write only. A signed request is idempotent by itself: its
 * webhook-id, or its signature, is its Idempotency-Key (an Idempotency-Key header, which the signature
 * does not cover, is ignored), so a captured request replayed inside the window, with or without a
 * header changed, answers the first result and posts nothing.
 */

export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface IncomingRequest {
  botId: string;
  authorization: string | undefined;
  /** The `token` query parameter. */
  token: string | undefined;
  headers: {
    'x-workroom-signature'?: string | undefined;
    'webhook-id'?: string | undefined;
    'webhook-timestamp'?: string | undefined;
    'webhook-signature'?: string | undefined;
  };
  rawBody: Buffer;
}

export interface IncomingAuth {
  actor: BotActor;
  via: 'key' | 'token' | 'signature';
  /** The Idempotency-Key a signed request carries by itself; it wins over the header. */
  impliedIdempotencyKey?: string;
}

const unauthenticated = (message: string) => new AppError('unauthenticated', message);
const isUuid = (s: string) => z.uuid().safeParse(s).success;

/** Equal strings, in time independent of where they differ. */
function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The actor of ways 2 and 3: the bot, allowed to post messages and nothing else. */
async function incomingActor(
  services: Services,
  botId: string,
  via: string,
  unknownBotMessage: string,
): Promise<BotActor> {
  const bot = await services.storage.stores.bots.get(botId);
  if (!bot) throw unauthenticated(unknownBotMessage);
  if (bot.status !== 'active') throw unauthenticated('The bot is disabled');
  return {
    kind: 'bot',
    botId: bot.id,
    orgId: bot.org_id,
    botType: bot.type as BotType,
    // Not an API key: the rate-limit bucket of this way of calling, shared by all its requests.
    keyId: `${via}:${bot.id}`,
    scopes: ['messages:write'],
  };
}

export async function authenticateIncoming(services: Services, r: IncomingRequest): Promise<IncomingAuth> {
  // Credentials first: without valid ones nothing about the path is revealed (401, never 404).
  if (r.authorization !== undefined) return byKey(services, r.botId, r.authorization);
  if (r.token !== undefined) return byToken(services, r.botId, r.token);
  if (r.headers['x-workroom-signature'] !== undefined || r.headers['webhook-signature'] !== undefined) {
    return bySignature(services, r);
  }
  throw unauthenticated(
    'Missing credentials: send the bot API key (Authorization: Bearer), the incoming token (?token=), ' +
      'or a signature (X-Workroom-Signature or webhook-signature, with webhook-timestamp)',
  );
}

/** Way 1: that bot's API key, checked like on every bot endpoint. */
async function byKey(services: Services, botId: string, authorization: string): Promise<IncomingAuth> {
  const actor = await authenticate(services, bearerCredential(authorization));
  if (actor.kind !== 'bot') {
    throw new AppError('forbidden', 'The incoming webhook takes a bot API key, not a user token');
  }
  if (!isUuid(botId)) throw notFound('Bot');
  if (actor.botId !== botId) throw new AppError('forbidden', 'This API key belongs to another bot');
  return { actor, via: 'key' };
}

/** Way 2: the bot's incoming token, compared by its hash. */
async function byToken(services: Services, botId: string, token: string): Promise<IncomingAuth> {
  const invalidToken = 'The incoming token is not valid for this bot';
  if (!INCOMING_TOKEN_RE.test(token)) throw unauthenticated('The incoming token is malformed');
  const row = await services.storage.stores.incomingTokens.get(botId);
  if (!row || !safeEqual(row.token_hash, hashSecret(token))) throw unauthenticated(invalidToken);
  return { actor: await incomingActor(services, botId, 'incoming-token', invalidToken), via: 'token' };
}

/** Way 3: a fresh timestamp and an HMAC of it and the raw body with the bot's webhook secret. */
async function bySignature(services: Services, r: IncomingRequest): Promise<IncomingAuth> {
  const h = r.headers;
  const ts = h['webhook-timestamp'];
  if (ts === undefined) {
    throw unauthenticated('A signed request needs the webhook-timestamp header (Unix seconds)');
  }
  if (!/^\d{1,12}$/.test(ts)) throw unauthenticated('webhook-timestamp must be Unix seconds');
  if (Math.abs(services.clock.now() / 1000 - Number(ts)) > SIGNATURE_TOLERANCE_SECONDS) {
    throw unauthenticated(
      `webhook-timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} seconds from the server's clock`,
    );
  }
  const noSecret = 'The signature cannot be checked: this bot has no webhook secret';
  const secret = await webhookSecretOf(services, r.botId);
  if (secret === null) throw unauthenticated(noSecret);
  let implied: string;
  if (h['x-workroom-signature'] !== undefined) {
    const expected = `sha256=${hmacHex(secret, `${ts}.`, r.rawBody)}`;
    if (!safeEqual(h['x-workroom-signature'].trim(), expected)) {
      throw unauthenticated('X-Workroom-Signature does not match the body and webhook-timestamp');
    }
    implied = `sig:${expected.slice('sha256='.length)}`;
  } else {
    const id = h['webhook-id'];
    if (id === undefined || !/^[\x21-\x7e]{1,200}$/.test(id)) {
      throw unauthenticated('A webhook-signature needs a webhook-id header (1 to 200 printable characters)');
    }
    const expected = standardWebhooksSignature(secret, id, ts, r.rawBody);
    const given = (h['webhook-signature'] ?? '').split(' ').filter(Boolean);
    if (!given.some((s) => safeEqual(s, expected))) {
      throw unauthenticated('webhook-signature does not match the body, webhook-id and webhook-timestamp');
    }
    implied = `webhook-id:${id}`;
  }
  const actor = await incomingActor(services, r.botId, 'incoming-signature', noSecret);
  return { actor, via: 'signature', impliedIdempotencyKey: implied };
}

/**
 * Posts the body as the authenticated bot through the send-message operation, under the request's
 * Idempotency-Key (for a signed request, the key its signature implies). Answers 201 with the message.
 */
export async function receiveIncoming(
  services: Services,
  auth: IncomingAuth,
  input: Record<string, unknown>,
  idempotencyKey: string | undefined,
  requestId: string,
): Promise<IdempotentResult & { replayed: boolean }> {
  const ctx = { actor: auth.actor, services, requestId };
  return withIdempotency(
    services,
    auth.actor,
    auth.impliedIdempotencyKey ?? idempotencyKey,
    { operation: 'webhooks.incoming', input, statusOf: () => 201 },
    async (idempotency) => ({
      status: 201,
      body: await runOperation(sendMessage, { ...ctx, idempotency }, input),
    }),
  );
}
