import {
  createCipheriv,
  createDecipheriv,
  hash,
  hkdfSync,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto';

/**
 * A 32-byte key derived from the server's encryption key for one purpose (HKDF-SHA256, salt
 * "workroom", `purpose` as the info): device tokens, MCP session ids, MCP confirmation states and the
 * key verifier each sign with their own, so one can never be taken for another.
 */
export function subkey(encryptionKey: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', encryptionKey, 'workroom', purpose, 32));
}

/**
 * Bot API key: `wrbk_<first 8 chars of bot id>_<live|test>_<48 hex>` (192 random bits).
 * The fixed prefix `wrbk_` ("Workroom bot key") lets secret scanners match it:
 *   /\bwrbk_[0-9a-f]{8}_(live|test)_[0-9a-f]{48}\b/
 */
export const BOT_KEY_PREFIX = 'wrbk';
export const KEY_TYPES = ['live', 'test'] as const;
export type KeyType = (typeof KEY_TYPES)[number];
const BOT_KEY_RE = /^wrbk_([0-9a-f]{8})_(live|test)_([0-9a-f]{48})$/;

export function generateBotKey(botId: string, keyType: KeyType): string {
  return `${BOT_KEY_PREFIX}_${botId.slice(0, 8)}_${keyType}_${randomBytes(24).toString('hex')}`;
}

export function parseBotKey(key: string): { botIdPrefix: string; keyType: KeyType } | null {
  const m = BOT_KEY_RE.exec(key);
  if (!m) return null;
  return { botIdPrefix: m[1]!, keyType: m[2] as KeyType };
}

export const looksLikeBotKey = (s: string): boolean => s.startsWith(`${BOT_KEY_PREFIX}_`);

/** What listings show of a key: everything but most of the random part. */
export const displayPrefix = (key: string): string => key.slice(0, key.lastIndexOf('_') + 5);

/** User session token: `wrut_<64 hex>` (256 random bits). */
export const USER_TOKEN_PREFIX = 'wrut';
export const generateUserToken = (): string => `${USER_TOKEN_PREFIX}_${randomBytes(32).toString('hex')}`;

/**
 * High-entropy secrets (keys, tokens) are stored as their SHA-256: a slow hash adds nothing when the
 * input has 192+ random bits, and lookups stay one indexed equality. Every authenticated request
 * hashes its credential: the one-shot `crypto.hash` (Node ≥ 20.12) takes ~0.9 µs where
 * createHash().update().digest() took ~2.6 µs (same digest).
 */
export const hashSecret = (secret: string): string => hash('sha256', secret, 'hex');

/** Webhook signing secret in the Standard Webhooks form. */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

// Passwords: scrypt with a per-password salt; stored as `scrypt$N$r$p$salt$hash` (base64).
/** scrypt's cost parameters. A hash keeps those it was made with: verifying reads them from the hash. */
export interface PasswordCost {
  N: number;
  r: number;
  p: number;
}
/** The cost of every password hash the server makes (16 MiB and ~40 ms of one core each). */
export const PASSWORD_COST: PasswordCost = { N: 16384, r: 8, p: 1 };
const KEYLEN = 32;

function scryptAsync(password: string, salt: Buffer, keylen: number, opts: PasswordCost): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      password,
      salt,
      keylen,
      { N: opts.N, r: opts.r, p: opts.p, maxmem: 64 * 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

export async function hashPassword(password: string, cost: PasswordCost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, KEYLEN, cost);
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, keyB64] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(keyB64, 'base64');
  const actual = await scryptAsync(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * Secrets that must be read back (webhook signing secrets) are encrypted with AES-256-GCM under the
 * server's encryption key. Stored form: `v1:<iv b64>:<tag b64>:<ciphertext b64>`.
 */
export function encryptSecret(plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), ct.toString('base64')].join(
    ':',
  );
}

/**
 * Decrypts with `key`, or with one of `others` (during a key rotation, the previous key: docs/SCALING.md,
 * "The encryption key"). GCM's tag tells a wrong key for sure, so trying each in turn is safe.
 */
export function decryptSecret(stored: string, key: Buffer, others: readonly Buffer[] = []): string {
  const [v, iv, tag, ct] = stored.split(':');
  if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unrecognized encrypted secret format');
  let failure: unknown;
  for (const k of [key, ...others]) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', k, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]).toString('utf8');
    } catch (e) {
      failure ??= e;
    }
  }
  throw failure;
}
