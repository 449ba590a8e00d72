import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../runtime/clock.js';
import type { Service } from '../runtime/lifecycle.js';
import type { LeaseStore } from '../storage/leases.js';

/** The lease of the singleton work (pruning, retention). */
export const SINGLETON_LEASE = 'singleton-work';
/** How long a lease lasts without renewal; it is renewed every third of that. */
export const LEASE_TTL_MS = 15_000;

/**
 * One leader among the instances on a database for the work that must run once (pruning deliveries,
 * jobs, idempotency records, presence rows and rate-limit buckets): a lease row taken and renewed every
 * LEASE_TTL_MS / 3 (storage/leases.ts). The holder runs that work; when it stops it gives the lease up,
 * and when it dies another instance takes it once it expired. Leadership is only ever an optimisation
 * of work that is safe to run twice (every pruning is an idempotent delete), so the short overlap a
 * clock skew or a paused process can cause does no harm. On SQLite the one instance always leads.
 */
export class LeaderLease implements Service {
  readonly name = 'leader lease';
  readonly instanceId = randomUUID();
  #until = 0;
  #renewals = 0;
  #timer: ClockTimer | undefined;
  readonly #tasks: { every: number; last: number; run: () => Promise<unknown> }[] = [];

  constructor(
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Renewals made so far, held or not (tests wait on it: "the next renewal happened"). */
  get renewals(): number {
    return this.#renewals;
  }

  /** Whether this instance holds the lease now. */
  get isLeader(): boolean {
    return this.clock.now() < this.#until;
  }

  /** Runs `run` about every `everyMs`, on the leader only (checked at each renewal). */
  every(everyMs: number, run: () => Promise<unknown>): void {
    this.#tasks.push({ every: everyMs, last: this.clock.now(), run });
  }

  async start(): Promise<void> {
    await this.#renew();
    this.#timer = this.clock.setInterval(() => void this.#renew(), LEASE_TTL_MS / 3);
  }

  async stop(): Promise<void> {
    this.clock.clearTimeout(this.#timer);
    if (!this.isLeader) return;
    this.#until = 0;
    await this.store.release(SINGLETON_LEASE, this.instanceId).catch((err: unknown) => {
      this.log.warn({ err }, 'leader: could not give the lease up (it expires)');
    });
  }

  async #renew(): Promise<void> {
    const now = this.clock.now();
    const was = this.isLeader;
    try {
      const held = await this.store.tryHold(SINGLETON_LEASE, this.instanceId, now, now + LEASE_TTL_MS);
      this.#until = held ? now + LEASE_TTL_MS : 0;
    } catch (err) {
      // Kept until it expires: another instance cannot take it before then either.
      this.log.warn({ err }, 'leader: could not renew the lease');
    }
    this.#renewals++;
    if (this.isLeader !== was) {
      this.log.info(
        { instance: this.instanceId },
        this.isLeader ? 'leader: this instance leads' : 'leader: lost the lease',
      );
    }
    if (!this.isLeader) return;
    for (const t of this.#tasks) {
      if (now - t.last < t.every) continue;
      t.last = now;
      await t.run().catch((err: unknown) => this.log.warn({ err }, 'leader: singleton work failed'));
    }
  }
}
