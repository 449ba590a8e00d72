import { createHmac } from 'node:crypto';

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

export interface WebhookEnvelope {
  event_type: string;
  timestamp: string;
  bot_id: string;
  data: unknown;
  event_id: string;
}

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

export function signDelivery(a: {
  secret: string;
  webhookId: string;
  timestampSeconds: number;
  envelope: WebhookEnvelope;
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
      'webhook-signature': standardWebhooksSignature(a.secret, a.webhookId, a.timestampSeconds, body),
    },
  };
}
