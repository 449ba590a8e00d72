import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import type { EventPayload, WebhookEventType } from '../domain/events.js';

/**
 * Signing of outgoing webhook deliveries. One body carries three signatures so that every kind of
 * receiver can check it with what it already has:
 *  - `signature`, the body's last member: `sha256=` + hex HMAC-SHA256 over U, the body text without
 *    that member (a receiver that parses, deletes `signature` and re-serializes compactly gets U);
 *  - `X-Workroom-Signature`: `sha256=` + hex HMAC-SHA256 over the raw body bytes (GitHub's form);
 *  - `webhook-signature`: Standard Webhooks v1, so the `standardwebhooks` libraries verify it as is.
 * The two `sha256=` forms are keyed by the whole secret string (`whsec_...`, its UTF-8 bytes); the
 * Standard Webhooks one by the base64-decoded part after `whsec_`, as that standard says.
 */

/**
 * The body of a webhook POST, without its signature: one variant per event type delivered to webhooks
 * (the event catalogue's, domain/events.ts; the OpenAPI document's `webhooks` section is generated from
 * the same schemas), so `event_type` narrows `data`. Members in this order.
 */
export type WebhookBody = {
  [T in WebhookEventType]: {
    event_type: T;
    timestamp: string;
    bot_id: string;
    data: EventPayload<T>;
    event_id: string;
  };
}[WebhookEventType];

/**
 * A body from a stored delivery row: the delivery worker reads the type and the data back as text (data
 * the fan-out read through the outbox reader, which checked it against its schema; or a webhook test's
 * payload). Accepted as is until the worker builds a `WebhookBody` itself.
 */
export interface StoredWebhookBody {
  event_type: string;
  timestamp: string;
  bot_id: string;
  data: unknown;
  event_id: string;
}

export type WebhookEnvelope = WebhookBody | StoredWebhookBody;

export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

export const WEBHOOK_USER_AGENT = 'Workroom-Webhooks/1.0';
const SECRET_PREFIX = 'whsec_';

/** Hex HMAC-SHA256 of the parts, in order (strings as UTF-8): a body is signed as the bytes it travels as. */
export function hmacHex(key: string | Buffer, ...parts: (string | Buffer)[]): string {
  const mac = createHmac('sha256', key);
  for (const p of parts) mac.update(p);
  return mac.digest('hex');
}

/** The Standard Webhooks key: the base64 part after `whsec_` (a secret without the prefix is taken whole). */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, the Standard Webhooks v1 signature. */
export function standardWebhooksSignature(
  secret: string,
  webhookId: string,
  timestampSeconds: number | string,
  body: string | Buffer,
): string {
  const mac = createHmac('sha256', standardWebhooksKey(secret))
    .update(`${webhookId}.${timestampSeconds}.`)
    .update(body)
    .digest('base64');
  return `v1,${mac}`;
}

// --- ed25519 (Standard Webhooks v1a), an option per bot ---

const SIGNING_KEY_PREFIX = 'whsk_';
const PUBLIC_KEY_PREFIX = 'whpk_';
/** PKCS#8 DER of an ed25519 private key, before its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A new ed25519 key: `whsk_<base64 seed>` (kept secret, stored encrypted) and `whpk_<base64 key>`. */
export function generateSigningKey(): { signingKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const d = privateKey.export({ format: 'jwk' }).d!;
  const x = publicKey.export({ format: 'jwk' }).x!;
  return {
    signingKey: `${SIGNING_KEY_PREFIX}${Buffer.from(d, 'base64url').toString('base64')}`,
    publicKey: `${PUBLIC_KEY_PREFIX}${Buffer.from(x, 'base64url').toString('base64')}`,
  };
}

/** The key object of a `whsk_` signing key. */
export function signingKeyObject(signingKey: string): KeyObject {
  const seed = Buffer.from(signingKey.replace(SIGNING_KEY_PREFIX, ''), 'base64');
  if (seed.length !== 32) throw new Error('an ed25519 signing key is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
}

/** The `whpk_` public key of a signing key. */
export function publicKeyOf(signingKey: string): string {
  const x = createPublicKey(signingKeyObject(signingKey)).export({ format: 'jwk' }).x!;
  return `${PUBLIC_KEY_PREFIX}${Buffer.from(x, 'base64url').toString('base64')}`;
}

/** `v1a,<base64 ed25519 signature of "<id>.<timestamp>.<body>">`, Standard Webhooks' asymmetric form. */
export function ed25519Signature(
  key: KeyObject,
  webhookId: string,
  timestampSeconds: number | string,
  body: string | Buffer,
): string {
  const data = Buffer.concat([Buffer.from(`${webhookId}.${timestampSeconds}.`), Buffer.from(body)]);
  return `v1a,${sign(null, data, key).toString('base64')}`;
}

export function signDelivery(a: {
  secret: string;
  webhookId: string;
  timestampSeconds: number;
  envelope: WebhookEnvelope;
  /** The bot's ed25519 key, when it has one: `webhook-signature` then also carries `v1a,…`. */
  signingKey?: KeyObject | undefined;
}): SignedDelivery {
  const { event_type, timestamp, bot_id, data, event_id } = a.envelope;
  // Fixed key order, whatever order the caller built the object in: U must be reproducible.
  const unsigned = JSON.stringify({ event_type, timestamp, bot_id, data: data ?? null, event_id });
  const signature = `sha256=${hmacHex(a.secret, unsigned)}`;
  // Appending the member textually keeps U a byte-exact prefix of the body (U minus its closing brace).
  const body = `${unsigned.slice(0, -1)},"signature":${JSON.stringify(signature)}}`;
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'x-workroom-signature': `sha256=${hmacHex(a.secret, body)}`,
      'webhook-id': a.webhookId,
      'webhook-timestamp': String(a.timestampSeconds),
      'webhook-signature': a.signingKey
        ? `${standardWebhooksSignature(a.secret, a.webhookId, a.timestampSeconds, body)} ${ed25519Signature(a.signingKey, a.webhookId, a.timestampSeconds, body)}`
        : standardWebhooksSignature(a.secret, a.webhookId, a.timestampSeconds, body),
    },
  };
}
