import { AppError } from '../../domain/errors.js';
import { activeGrants } from '../../domain/grants.js';
import type { BotType, Role } from '../../domain/roles.js';
import { hashSecret, looksLikeBotKey, parseBotKey } from '../../domain/secrets.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor, BotActor, PreloadedChannel, Services } from '../context.js';

const unauthenticated = (message: string) => new AppError('unauthenticated', message);

/** Extracts the credential from an `Authorization: Bearer <credential>` header. */
export function bearerCredential(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

type KeyRow = NonNullable<Awaited<ReturnType<Stores['bots']['findKeyByHash']>>>;
type TokenRow = NonNullable<Awaited<ReturnType<Stores['users']['findByToken']>>>;

/**
 * Resolves a bot API key to its actor: the key must exist, not be revoked or expired, and its bot must
 * be active. Revocation is effective on the very next request (no caching of key state).
 */
export async function authenticateBotKey(services: Services, key: string): Promise<BotActor> {
  return botActor(services, await services.storage.stores.bots.findKeyByHash(botKeyHash(key)));
}

/** The stored hash of a bot key; a key that is not one by its form is refused before any read. */
function botKeyHash(key: string): string {
  if (!parseBotKey(key)) throw unauthenticated('The API key is malformed');
  return hashSecret(key);
}

/** The credential of a request, or the refusal of one that sent none. */
function present(credential: string | undefined): string {
  if (!credential) throw unauthenticated('Missing Authorization: Bearer credential');
  return credential;
}

function botActor(services: Services, row: KeyRow | undefined): BotActor {
  if (!row || row.bot_deleted_at !== null) throw unauthenticated('The API key is not valid');
  if (row.revoked_at !== null) throw unauthenticated('The API key has been revoked');
  const now = services.clock.nowIso(); // expiry and last use by business time (runtime/clock.ts)
  if (row.expires_at !== null && row.expires_at <= now) throw unauthenticated('The API key has expired');
  if (row.bot_status !== 'active') throw unauthenticated('The bot of this API key is disabled');
  services.keyUsage.record(row.key_id, now);
  return {
    kind: 'bot',
    botId: row.bot_id,
    orgId: row.org_id,
    botType: row.bot_type as BotType,
    keyId: row.key_id,
    scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
    grants: activeGrants(row.grants ?? null),
    paused:
      row.paused_at === null || row.paused_at === undefined
        ? null
        : { at: row.paused_at, reason: row.paused_reason ?? 'paused' },
  };
}

export async function authenticateUserToken(services: Services, token: string): Promise<Actor> {
  return userActor(
    await services.storage.stores.users.findByToken(hashSecret(token), services.clock.nowIso()),
  );
}

function userActor(row: TokenRow | undefined): Actor {
  if (!row) throw unauthenticated('The session token is not valid or has expired');
  if (row.status !== 'active') throw unauthenticated('The user is deactivated');
  return {
    kind: 'user',
    userId: row.user_id,
    orgId: row.org_id,
    role: row.role as Role,
    departmentId: row.department_id,
    tokenId: row.token_id,
  };
}

/** Any credential: a bot key by its prefix, otherwise a user token. */
export async function authenticate(services: Services, credential: string | undefined): Promise<Actor> {
  const c = present(credential);
  return looksLikeBotKey(c) ? authenticateBotKey(services, c) : authenticateUserToken(services, c);
}

/**
 * `authenticate`, and the channel `channelId` as the actor sees it (the channel and whether the actor
 * is a member), read in the same statement: on PostgreSQL one round trip instead of two on the path of
 * a channel's messages. The checks are `authenticate`'s; the channel is only read, for the operation's
 * access check (`loadChannel` with the preloaded channel: operations/access.ts).
 */
export async function authenticateWithChannel(
  services: Services,
  credential: string | undefined,
  channelId: string,
): Promise<{ actor: Actor; channel: PreloadedChannel }> {
  const c = present(credential);
  const { users, bots } = services.storage.stores;
  if (looksLikeBotKey(c)) {
    const row = await bots.findKeyByHashWithChannel(botKeyHash(c), channelId);
    return { actor: botActor(services, row?.key), channel: { id: channelId, row: row?.channel } };
  }
  const row = await users.findByTokenWithChannel(hashSecret(c), services.clock.nowIso(), channelId);
  return { actor: userActor(row?.token), channel: { id: channelId, row: row?.channel } };
}
