import type { Logger } from 'pino';
import type { Clock } from '../runtime/clock.js';
import type { Config } from '../config/config.js';
import type { BotType, Role } from '../domain/roles.js';
import type { EventBus } from '../events/bus.js';
import type { Storage } from '../storage/storage.js';
import type { RateLimiter } from '../domain/token-bucket.js';
import type { BlobStore } from '../storage/blobs.js';
import type { ToolCallRecorder } from './audit/tool-calls.js';
import type { KeyUsageRecorder } from './auth/key-usage.js';
import type { BuiltinCatalogue } from './bots/builtins.js';
import type { CommandDispatcher } from './commands/dispatch.js';
import type { LoginGuard } from './auth/login-guard.js';
import type { IdempotencyClaim } from './idempotency.js';
import type { MetricsHooks } from '../metrics/hooks.js';
import type { ReadinessCheck } from '../metrics/health.js';
import type { ActiveGrants } from '../domain/grants.js';
import type { Stores } from '../storage/stores/index.js';
import type { ChannelForMember } from '../storage/stores/containers.js';
import type { AuditChange } from './audit/decision.js';
import type { PasswordCost } from '../domain/secrets.js';

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
  /** The key's grants (domain/grants.ts); absent or null: none, the key behaves as scopes say. */
  grants?: ActiveGrants | null | undefined;
  /** When and why the key was paused (operations/guardrails.ts); absent or null: not paused. */
  paused?: { at: string; reason: string } | null | undefined;
}

/** Long-lived server services, built once at start and shared by every request. */
export interface Services {
  config: Config;
  /**
   * Business time (runtime/clock.ts): write timestamps, the scheduler, the bots' `ctx.now`. The real
   * clock unless a test passed a TestClock to startApp.
   */
  clock: Clock;
  /** scrypt's cost for the password hashes the server makes: PASSWORD_COST unless a test passed another. */
  passwordCost: PasswordCost;
  storage: Storage;
  log: Logger;
  bus: EventBus;
  keyUsage: KeyUsageRecorder;
  /** MCP tools/call audit, buffered. */
  toolCalls: ToolCallRecorder;
  /** Rate-limit buckets of keys and users (REST and MCP share them). */
  rateLimiter: RateLimiter;
  /** Sign-in throttling and the bound on concurrent password hashing. */
  /** Whether this instance does the work that must run once for all instances (scheduler/leader.ts). */
  leader: { readonly isLeader: boolean };
  loginGuard: LoginGuard;
  /** Uploaded file bytes: on disk or in the database (storage/blobs.ts, docs/SCALING.md). */
  blobs: BlobStore;
  /** Slash commands of bots: delivery at once, response URLs, ephemeral replies to live connections. */
  commands: CommandDispatcher;
  /** AES-256 key for secrets that must be read back (webhook signing secrets). */
  encryptionKey: Buffer;
  /** During a key rotation, the previous key: secrets under it are still read, never written. */
  previousEncryptionKeys: readonly Buffer[];
  /** The scheduler's wake-up (set by app.ts once the scheduler exists). */
  jobs?: JobWakeup | undefined;
  /** The built-in bots' catalogue (bots/registry.ts, handed over by app.ts): installed in every organization. */
  builtins: BuiltinCatalogue;
  /** Prometheus hooks (metrics/hooks.ts): what transports and workers count; no-ops when metrics are off. */
  metrics: MetricsHooks;
  /** Readiness of this instance (database, migrations, workers) for GET /api/health/ready (set by app.ts). */
  readiness?: ReadinessCheck | undefined;
}

/**
 * Wakes this process's scheduler when a job was scheduled, so that a job due soon does not wait for
 * the next poll (scheduler/ implements it; app.ts sets `Services.jobs`).
 */
export interface JobWakeup {
  scheduled(runAt: string): void;
}

export interface OpContext {
  actor: Actor;
  services: Services;
  requestId: string;
  /** The Idempotency-Key claim the operation's write completes (set by withIdempotency's caller). */
  idempotency?: IdempotencyClaim | undefined;
  /**
   * A dry run (docs/API.md, "Dry runs"): the operation's writes run in a transaction that is rolled
   * back, their events are recorded here instead of emitted, and no write budget is spent.
   */
  dryRun?: DryRun | undefined;
  /**
   * Runs inside the operation's write transaction, after its change (the burst rule's record of a
   * send, operations/guardrails.ts): so that it costs no commit of its own and exists only if the
   * change does.
   */
  inWrite?: ((stores: Stores, now: string) => Promise<void>) | undefined;
  /** Set when the call is audited with its changes (a key with grants): an update notes them here. */
  auditChange?: AuditChange | undefined;
  /**
   * The channel of the request's path, read with its credential in one statement (the HTTP layer's
   * `authenticateWithChannel`, on routes that name it): `loadChannel` takes it instead of reading the
   * channel again.
   */
  channel?: PreloadedChannel | undefined;
}

/** A channel read with the credential: the channel as the actor saw it then; `row` undefined: none. */
export interface PreloadedChannel {
  id: string;
  row: ChannelForMember | undefined;
}

/** What a dry run's writes would have done. */
export interface DryRun {
  /** Types of the events the writes would have emitted, in order. */
  events: string[];
}

/** The member reference of an actor (as stored in member tables and sender columns). */
export function actorRef(actor: Actor): { type: 'user' | 'bot'; id: string } {
  return actor.kind === 'user' ? { type: 'user', id: actor.userId } : { type: 'bot', id: actor.botId };
}
