import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { subkey } from '../../domain/secrets.js';

/**
 * Device tokens: proof that this client has signed in to this account before, so that the sign-in
 * throttle (login-guard.ts) can tell the real user's device from the addresses of an attack on the
 * account. A token is `wrdv1.<user id>.<issued at, s>.<nonce>.<HMAC-SHA256, base64url>`, the HMAC over
 * the parts before it with a key derived from the server's encryption key by HKDF (never the key
 * itself). The random nonce makes two sign-ins of one account in the same second two devices.
 * Any instance that shares the encryption key verifies it without shared memory or a database row.
 *
 * A token grants nothing by itself: the password is still checked on every sign-in. It only lets its
 * holder's attempts be counted in a bucket of its own instead of the account's and the address's.
 */
const VERSION = 'wrdv1';
/** How long a device token is honoured after its sign-in (each sign-in issues a new one). */
export const DEVICE_TOKEN_TTL_SECONDS = 180 * 24 * 60 * 60;
/** Clock skew allowed between instances for a token issued "in the future". */
const FUTURE_SKEW_SECONDS = 300;
/** Longer input is refused before any work (a real token is about 90 characters). */
const MAX_LENGTH = 200;
const SHAPE = /^wrdv1\.([0-9A-Za-z-]{1,64})\.(\d{1,12})\.([0-9A-Za-z_-]{11})\.([0-9A-Za-z_-]{43})$/;

const derived = new WeakMap<Buffer, Buffer>();

/** The HMAC key: HKDF-SHA256 of the encryption key, bound to this one purpose. */
function deviceKey(encryptionKey: Buffer): Buffer {
  let key = derived.get(encryptionKey);
  if (!key) {
    key = subkey(encryptionKey, 'workroom sign-in device token v1');
    derived.set(encryptionKey, key);
  }
  return key;
}

function mac(encryptionKey: Buffer, payload: string): Buffer {
  return createHmac('sha256', deviceKey(encryptionKey)).update(payload).digest();
}

/** A new device token for this account, issued at `nowMs` (the server's clock, `Services.clock`). */
export function issueDeviceToken(encryptionKey: Buffer, userId: string, nowMs: number): string {
  const payload = `${VERSION}.${userId}.${Math.floor(nowMs / 1000)}.${randomBytes(8).toString('base64url')}`;
  return `${payload}.${mac(encryptionKey, payload).toString('base64url')}`;
}

export interface DeviceClaim {
  /** The account the token was issued for. */
  userId: string;
  /** Identifies this one token (its own throttle bucket). */
  id: string;
}

/**
 * The account a device token was issued for, or null when it is malformed, forged or expired at
 * `nowMs` (the server's clock, `Services.clock`).
 */
export function verifyDeviceToken(
  encryptionKey: Buffer,
  token: string | undefined,
  nowMs: number,
): DeviceClaim | null {
  if (!token || token.length > MAX_LENGTH) return null;
  const m = SHAPE.exec(token);
  if (!m) return null;
  const [, userId, issued, nonce, signature] = m as unknown as [string, string, string, string, string];
  // Compared as canonical text: base64url's last character has spare bits, so decoding would accept
  // four spellings of one signature (four throttle buckets for one stolen token).
  const expected = Buffer.from(
    mac(encryptionKey, `${VERSION}.${userId}.${issued}.${nonce}`).toString('base64url'),
  );
  if (!timingSafeEqual(Buffer.from(signature), expected)) return null;
  const age = nowMs / 1000 - Number(issued);
  if (age > DEVICE_TOKEN_TTL_SECONDS || age < -FUTURE_SKEW_SECONDS) return null;
  return { userId, id: signature };
}
