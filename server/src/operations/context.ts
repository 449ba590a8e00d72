import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { BotType, Role } from '../domain/roles.js';
import type { EventBus } from '../events/bus.js';
import type { Storage } from '../storage/storage.js';
import type { KeyUsageRecorder } from './auth/key-usage.js';

/** Who is calling: a signed-in user or a bot with an API key. */
export type Actor = UserActor | BotActor;

export interface UserActor {
  kind: 'user';
  userId: string;
  orgId: string;
  role: Role;
  departmentId: string | null;
  tokenId: string;
}

export interface BotActor {
  kind: 'bot';
  botId: string;
  orgId: string;
  botType: BotType;
  keyId: string;
  /** null = the key has no scopes, so it reaches everything. */
  scopes: string[] | null;
}

/** Long-lived server services, built once at start and shared by every request. */
export interface Services {
  config: Config;
  storage: Storage;
  log: Logger;
  bus: EventBus;
  keyUsage: KeyUsageRecorder;
  /** AES-256 key for secrets that must be read back (webhook signing secrets). */
  encryptionKey: Buffer;
}

export interface OpContext {
  actor: Actor;
  services: Services;
  requestId: string;
}

/** The member reference of an actor (as stored in member tables and sender columns). */
export function actorRef(actor: Actor): { type: 'user' | 'bot'; id: string } {
  return actor.kind === 'user' ? { type: 'user', id: actor.userId } : { type: 'bot', id: actor.botId };
}
