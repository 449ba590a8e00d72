import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { subkey } from '../../domain/secrets.js';

/**
 * Legacy `Mcp-Session-Id`s that any instance verifies without shared memory: a self-describing,
 * signed token `wrms1.<bot id>.<key id>.<negotiated version>.<expiry, s>.<nonce>.<HMAC-SHA256>`.
 * The HMAC key is derived by HKDF from the server's encryption key (WORKROOM_ENCRYPTION_KEY, or the
 * generated `encryption.key` of the data directory; bootstrap.ts) for this one purpose — the same key
 * every instance already shares to read webhook secrets and device tokens (auth/device-token.ts).
 *
 * 2025-03-26 … 2025-11-25 Streamable HTTP, "Session Management": "The session ID SHOULD be globally
 * unique and cryptographically secure (e.g., a securely generated UUID, a JWT, or a cryptographic
 * hash)" and "MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)" — ids, digits,
 * base64url and dots only. The token grants nothing by itself: every request still authenticates its
 * bearer key, which must be the key the session was opened with (a revoked key ends the session at
 * once, on every instance), and the bot must be the token's.
 */
const VERSION = 'wrms1';
/** Refused before any work: a real token is about 150 characters. */
const MAX_LENGTH = 256;
const SHAPE =
  /^wrms1\.([0-9A-Za-z-]{1,64})\.([0-9A-Za-z-]{1,64})\.(\d{4}-\d{2}-\d{2})\.(\d{1,12})\.([0-9A-Za-z_-]{12})\.([0-9A-Za-z_-]{43})$/;

export interface SessionClaim {
  botId: string;
  keyId: string;
  protocolVersion: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export class SessionSigner {
  readonly #key: Buffer;

  constructor(encryptionKey: Buffer) {
    this.#key = subkey(encryptionKey, 'workroom mcp session id v1');
  }

  #mac(payload: string): string {
    return createHmac('sha256', this.#key).update(payload).digest('base64url');
  }

  issue(botId: string, keyId: string, protocolVersion: string, expiresAt: number): string {
    const payload = [
      VERSION,
      botId,
      keyId,
      protocolVersion,
      Math.floor(expiresAt / 1000),
      randomBytes(9).toString('base64url'),
    ].join('.');
    return `${payload}.${this.#mac(payload)}`;
  }

  /** The claim of a genuine, unexpired token at `nowMs`; null for anything else. */
  verify(token: string, nowMs: number): SessionClaim | null {
    if (token.length > MAX_LENGTH || !token.startsWith(`${VERSION}.`)) return null;
    const m = SHAPE.exec(token);
    if (!m) return null;
    const payload = token.slice(0, token.lastIndexOf('.'));
    const expected = Buffer.from(this.#mac(payload));
    const given = Buffer.from(m[6]!);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    const expiresAt = Number(m[4]) * 1000;
    if (expiresAt <= nowMs) return null;
    return { botId: m[1]!, keyId: m[2]!, protocolVersion: m[3]!, expiresAt };
  }
}
