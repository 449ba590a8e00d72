import { createHmac, createPublicKey, timingSafeEqual, verify as verifyEd25519 } from 'node:crypto';

/**
 * Verification of Workroom's outgoing webhooks (decisions.md, "Outgoing webhook signatures"), from the
 * raw bytes, before anything parses the body. A delivery carries three signatures:
 *  - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,<base64>` over
 *    `<id>.<timestamp>.<body>`, keyed by the base64 part of the `whsec_` secret);
 *  - `X-Workroom-Signature: sha256=<hex>` over the raw body, keyed by the whole secret string;
 *  - the body's last member `"signature":"sha256=<hex>"` over the body without that member.
 * Default rule: the Standard Webhooks signature must verify with a timestamp inside the tolerance window
 * (replay protection), and every other signature present must verify too. `requireAll: false` accepts
 * any one valid signature, for senders that cannot set headers — without a fresh Standard Webhooks
 * timestamp a replayed delivery then passes, so keep the duplicate check on.
 */

export type HeaderBag =
  Headers | Record<string, string | string[] | undefined> | { get(name: string): string | null | undefined };

export interface VerifyOptions {
  /** Largest accepted distance of `webhook-timestamp` from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** true (default): Standard Webhooks + every signature present. false: any one valid signature. */
  requireAll?: boolean;
  /** The current time in Unix seconds (tests). */
  now?: number;
  /**
   * The bot's ed25519 public key (`whpk_…`, POST /api/bots/{botId}/webhook-signing-key): a Standard
   * Webhooks `v1a` signature must then verify, within the tolerance window. With it the secret may be
   * empty (only `v1a` is checked); with both, the HMAC signatures are checked as well.
   */
  publicKey?: string;
}

export type VerifyResult =
  | { ok: true; webhookId: string | undefined; timestamp: number | undefined; verified: SignatureKind[] }
  | { ok: false; reason: string };

export type SignatureKind = 'standard-webhooks' | 'x-workroom-signature' | 'body' | 'ed25519';

export const DEFAULT_TOLERANCE_SECONDS = 300;
const SECRET_PREFIX = 'whsec_';
/** The body's signature member as the sender appends it: the body's last member, then `}`. */
const BODY_SIGNATURE_RE = /,"signature":"sha256=([0-9a-f]{64})"\}$/;

function header(h: HeaderBag, name: string): string | undefined {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const bag = h as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v.join(', ') : v;
}

const hmac = (key: Buffer | string, data: Buffer) => createHmac('sha256', key).update(data).digest();

/** Constant-time comparison of a computed MAC with a received one (any length). */
function macEquals(computed: Buffer, received: Buffer): boolean {
  return computed.length === received.length && timingSafeEqual(computed, received);
}

/** `sha256=<64 hex>` → the bytes, or undefined when the form is wrong. */
function sha256Hex(value: string | undefined): Buffer | undefined {
  const m = value === undefined ? null : /^sha256=([0-9a-fA-F]{64})$/.exec(value.trim());
  return m ? Buffer.from(m[1]!, 'hex') : undefined;
}

function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

type Check = { state: 'absent' } | { state: 'valid' } | { state: 'invalid'; reason: string };

function checkStandardWebhooks(
  raw: Buffer,
  h: HeaderBag,
  secret: string,
  tolerance: number,
  now: number,
): Check {
  const id = header(h, 'webhook-id');
  const ts = header(h, 'webhook-timestamp');
  const sig = header(h, 'webhook-signature');
  if (id === undefined && ts === undefined && sig === undefined) return { state: 'absent' };
  if (!id || !ts || !sig) return { state: 'invalid', reason: 'incomplete Standard Webhooks headers' };
  if (!/^\d{1,15}$/.test(ts)) return { state: 'invalid', reason: 'webhook-timestamp is not Unix seconds' };
  if (Math.abs(now - Number(ts)) > tolerance) {
    return { state: 'invalid', reason: 'webhook-timestamp is outside the tolerance window' };
  }
  const expected = hmac(standardWebhooksKey(secret), Buffer.concat([Buffer.from(`${id}.${ts}.`), raw]));
  // The header may list several space-separated signatures (secret rotation); one match is enough.
  for (const part of sig.split(' ')) {
    const [version, b64] = part.split(',', 2);
    if (version === 'v1' && b64 && macEquals(expected, Buffer.from(b64, 'base64'))) return { state: 'valid' };
  }
  return { state: 'invalid', reason: 'webhook-signature does not match' };
}

const PUBLIC_KEY_PREFIX = 'whpk_';

/** A Standard Webhooks `v1a` (ed25519) signature in `webhook-signature`, by the bot's public key. */
function checkEd25519(raw: Buffer, h: HeaderBag, publicKey: string, tolerance: number, now: number): Check {
  const id = header(h, 'webhook-id');
  const ts = header(h, 'webhook-timestamp');
  const sig = header(h, 'webhook-signature');
  if (!id || !ts || !sig) return { state: 'invalid', reason: 'missing Standard Webhooks headers' };
  if (!/^\d{1,15}$/.test(ts)) return { state: 'invalid', reason: 'webhook-timestamp is not Unix seconds' };
  if (Math.abs(now - Number(ts)) > tolerance) {
    return { state: 'invalid', reason: 'webhook-timestamp is outside the tolerance window' };
  }
  const x = Buffer.from(publicKey.startsWith(PUBLIC_KEY_PREFIX) ? publicKey.slice(5) : publicKey, 'base64');
  if (x.length !== 32) return { state: 'invalid', reason: 'the public key is not 32 bytes (whpk_<base64>)' };
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: x.toString('base64url') },
    format: 'jwk',
  });
  const data = Buffer.concat([Buffer.from(`${id}.${ts}.`), raw]);
  for (const part of sig.split(' ')) {
    const [version, b64] = part.split(',', 2);
    if (version !== 'v1a' || !b64) continue;
    const s = Buffer.from(b64, 'base64');
    if (s.length === 64 && verifyEd25519(null, data, key, s)) return { state: 'valid' };
  }
  return { state: 'invalid', reason: 'no v1a signature in webhook-signature matches the public key' };
}

function checkHeaderSignature(raw: Buffer, h: HeaderBag, secret: string): Check {
  const value = header(h, 'x-workroom-signature');
  if (value === undefined) return { state: 'absent' };
  const received = sha256Hex(value);
  if (!received) return { state: 'invalid', reason: 'X-Workroom-Signature is not sha256=<hex>' };
  return macEquals(hmac(secret, raw), received)
    ? { state: 'valid' }
    : { state: 'invalid', reason: 'X-Workroom-Signature does not match' };
}

function checkBodySignature(raw: Buffer, secret: string, authentic: boolean): Check {
  const text = raw.toString('utf8');
  const m = BODY_SIGNATURE_RE.exec(text);
  if (!m) {
    // Without the exact suffix, is there a signature member at all? Parsing is safe only for a body
    // already authenticated by a header signature; otherwise the body signature is simply absent.
    if (!authentic) return { state: 'absent' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { state: 'invalid', reason: 'the body is not JSON' };
    }
    const has = typeof parsed === 'object' && parsed !== null && 'signature' in parsed;
    return has
      ? { state: 'invalid', reason: 'the body signature is not its last member in sha256=<hex> form' }
      : { state: 'absent' };
  }
  const unsigned = Buffer.from(`${text.slice(0, m.index)}}`, 'utf8');
  return macEquals(hmac(secret, unsigned), Buffer.from(m[1]!, 'hex'))
    ? { state: 'valid' }
    : { state: 'invalid', reason: 'the body signature does not match' };
}

/**
 * Verifies a delivery from its raw body bytes and headers (Node's `req.headers`, a fetch `Headers`, or
 * any object with lower-case keys). Never throws for bad input: it answers why it refused.
 */
export function verifySignature(
  rawBody: Buffer | Uint8Array | string,
  headers: HeaderBag,
  secret: string,
  opts: VerifyOptions = {},
): VerifyResult {
  if (!secret && !opts.publicKey) return { ok: false, reason: 'no secret configured' };
  const raw = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (opts.publicKey) {
    // ed25519 first: with a public key, a v1a signature is required whatever else is there.
    const ed = checkEd25519(raw, headers, opts.publicKey, tolerance, now);
    if (ed.state !== 'valid') return { ok: false, reason: (ed as { reason: string }).reason };
    const ts = Number(header(headers, 'webhook-timestamp'));
    if (!secret)
      return { ok: true, webhookId: header(headers, 'webhook-id'), timestamp: ts, verified: ['ed25519'] };
    const rest = verifySignature(raw, headers, secret, { ...opts, publicKey: undefined });
    return rest.ok ? { ...rest, verified: ['ed25519', ...rest.verified] } : rest;
  }
  const sw = checkStandardWebhooks(raw, headers, secret, tolerance, now);
  const xw = checkHeaderSignature(raw, headers, secret);
  const authentic = sw.state === 'valid' || xw.state === 'valid';
  const body = checkBodySignature(raw, secret, authentic);
  const checks: [SignatureKind, Check][] = [
    ['standard-webhooks', sw],
    ['x-workroom-signature', xw],
    ['body', body],
  ];
  const verified = checks.filter(([, c]) => c.state === 'valid').map(([k]) => k);
  const ts = header(headers, 'webhook-timestamp');
  const ok = {
    ok: true as const,
    webhookId: header(headers, 'webhook-id'),
    timestamp: ts && /^\d+$/.test(ts) ? Number(ts) : undefined,
    verified,
  };

  if (opts.requireAll === false) {
    if (verified.length > 0) return ok;
    const firstInvalid = checks.find(([, c]) => c.state === 'invalid');
    return {
      ok: false,
      reason: firstInvalid ? (firstInvalid[1] as { reason: string }).reason : 'no signature',
    };
  }
  if (sw.state === 'absent') return { ok: false, reason: 'missing Standard Webhooks headers' };
  for (const [, c] of checks) if (c.state === 'invalid') return { ok: false, reason: c.reason };
  return ok;
}
