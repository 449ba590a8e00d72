import { createHmac, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../../runtime/clock.js';

/**
 * The token of a command's response URL (`POST /api/commands/responses/{token}`). It is the only
 * credential the bot needs to answer later, so it carries everything the answer needs and is signed
 * with a key derived from the server's encryption key: nothing is stored, and it works on every
 * instance. It expires after RESPONSE_TTL_MS of the server's clock (runtime/clock.ts); how often it may
 * be used is counted by the dispatcher.
 */

export const RESPONSE_TTL_MS = 30 * 60_000;

export interface Invocation {
  invocationId: string;
  orgId: string;
  botId: string;
  userId: string;
  command: string;
  channelId: string | null;
  topicId: string | null;
  dmRoomId: string | null;
}

export interface ResponseGrant extends Invocation {
  /** Expiry, in milliseconds since the epoch. */
  expiresAt: number;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export class ResponseTokens {
  readonly #key: Buffer;

  constructor(
    encryptionKey: Buffer,
    private readonly clock: Clock = systemClock,
  ) {
    // A key of its own: a token's MAC can never be mistaken for anything else made with the master key.
    this.#key = createHmac('sha256', encryptionKey).update('workroom/command-response-token/v1').digest();
  }

  issue(inv: Invocation, now = this.clock.now()): { token: string; expiresAt: number } {
    const expiresAt = now + RESPONSE_TTL_MS;
    const payload = b64(
      JSON.stringify([
        inv.invocationId,
        inv.orgId,
        inv.botId,
        inv.userId,
        inv.command,
        inv.channelId,
        inv.topicId,
        inv.dmRoomId,
        expiresAt,
      ]),
    );
    return { token: `${payload}.${this.#mac(payload)}`, expiresAt };
  }

  /** The grant of a valid, unexpired token; null for anything else (the caller answers not found). */
  read(token: string, now = this.clock.now()): ResponseGrant | null {
    const dot = token.indexOf('.');
    if (dot <= 0 || token.length > 2048) return null;
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.#mac(payload), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let v: unknown;
    try {
      v = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    if (!Array.isArray(v) || v.length !== 9 || typeof v[8] !== 'number' || v[8] <= now) return null;
    const [invocationId, orgId, botId, userId, command, channelId, topicId, dmRoomId, expiresAt] = v as [
      string,
      string,
      string,
      string,
      string,
      string | null,
      string | null,
      string | null,
      number,
    ];
    return { invocationId, orgId, botId, userId, command, channelId, topicId, dmRoomId, expiresAt };
  }

  #mac(payload: string): string {
    return b64(createHmac('sha256', this.#key).update(payload).digest());
  }
}
