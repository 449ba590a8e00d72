import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../runtime/clock.js';
import type { Service } from '../runtime/lifecycle.js';
import type { PresenceStore } from '../storage/presence.js';

/** How often an instance renews its rows, and how old a row may be before it counts for nothing. */
export const PRESENCE_HEARTBEAT_MS = 10_000;
export const PRESENCE_EXPIRY_MS = 30_000;

/**
 * Who is connected to the live stream, across the instances that share one PostgreSQL database: each
 * instance records its users' first connection (before their `ready`) and last disconnection, and
 * renews its rows every PRESENCE_HEARTBEAT_MS; a row older than PRESENCE_EXPIRY_MS (its instance died
 * without cleaning up) counts for nothing and is pruned. `@here` and any "is this person online" ask
 * `onlineAmong`. On SQLite (one instance) the hub's own connections answer and this is not used.
 */
export class ClusterPresence implements Service {
  readonly name = 'presence';
  readonly instanceId = randomUUID();
  #timer: ClockTimer | undefined;

  constructor(
    private readonly store: PresenceStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The users connected to this instance now (the hub's). */
    private readonly localUsers: () => Iterable<string>,
  ) {}

  start(): void {
    this.#timer = this.clock.setInterval(() => void this.#beat(), PRESENCE_HEARTBEAT_MS);
  }

  async stop(): Promise<void> {
    this.clock.clearTimeout(this.#timer);
    await this.store.heartbeat(this.instanceId, [], this.clock.now()).catch((err: unknown) => {
      this.log.warn({ err }, 'presence: could not remove this instance’s rows (they expire)');
    });
  }

  /** A user's first connection to this instance: recorded before the connection is ready. */
  connected(userId: string): Promise<void> {
    return this.store.connected(this.instanceId, userId, this.clock.now());
  }

  /** A user's last connection to this instance closed. */
  disconnected(userId: string): void {
    this.store.disconnected(this.instanceId, userId).catch((err: unknown) => {
      this.log.warn({ err }, 'presence: could not record a disconnection (the next heartbeat will)');
    });
  }

  /** Which of `userIds` are connected to some instance. */
  onlineAmong(userIds: readonly string[]): Promise<Set<string>> {
    return this.store.onlineAmong(userIds, this.clock.now() - PRESENCE_EXPIRY_MS);
  }

  /** The ids (after `prefix`) connected to the other instances. */
  onlineElsewhere(prefix: string): Promise<Set<string>> {
    return this.store.onlineWithPrefix(prefix, this.clock.now() - PRESENCE_EXPIRY_MS, this.instanceId);
  }

  /** Removes the rows of instances that died (the leader's work, scheduler/leader.ts). */
  prune(): Promise<number> {
    return this.store.prune(this.clock.now() - PRESENCE_EXPIRY_MS);
  }

  async #beat(): Promise<void> {
    try {
      const now = this.clock.now();
      await this.store.heartbeat(this.instanceId, [...this.localUsers()], now);
    } catch (err) {
      this.log.warn({ err }, 'presence: heartbeat failed');
    }
  }
}
