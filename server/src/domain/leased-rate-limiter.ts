import type { RateLimitDecision, RateLimiter } from './token-bucket.js';

/** One round trip to the shared bucket (storage/shared-rate-buckets.ts), bound to the database. */
export type TakeShared = (
  key: string,
  perSecond: number,
  burst: number,
  need: number,
  extra: number,
  giveBack: number,
  nowMs: number,
) => Promise<{ granted: number; tokens: number }>;

interface Lease {
  /** Tokens taken from the shared bucket and not used yet. */
  tokens: number;
  /** The shared bucket's tokens when the lease was taken (for RateLimit-Remaining). */
  shared: number;
  until: number;
}

/** How long an instance may keep leased tokens before giving back what it did not use. */
const LEASE_MS = 1000;

/**
 * Tokens an instance takes ahead, beyond the request that asked: a twenty-fifth of a second's refill,
 * at most 8 (2 for the default bot limit of 50/s; none for 20/s or less, where every request asks the
 * database). Every instance holds at most this many unused, so a cluster of N accepts at most N × this
 * fewer than the limit over a window, never more.
 */
export function leaseSize(perSecond: number): number {
  return Math.max(0, Math.min(8, Math.floor(perSecond / 25)));
}

/**
 * Token buckets shared by every instance (several instances on one PostgreSQL): the bucket is a row in
 * the database, and each instance takes a small lease of tokens with the request that needed one, so a
 * hot key costs one round trip per `leaseSize + 1` requests. A request served from the lease answers
 * synchronously; one that needs the database answers a promise. Unused tokens are given back with the
 * next round trip of that key (or after `LEASE_MS`), so the limit holds across the cluster: what one
 * instance holds unused delays the others, it is never spent twice.
 */
export class LeasedRateLimiter implements RateLimiter {
  readonly #leases = new Map<string, Lease>();
  #lastSweep = 0;

  constructor(
    private readonly takeShared: TakeShared,
    /** Epoch milliseconds, the same on every instance (the service clock). */
    private readonly now: () => number,
  ) {}

  take(
    key: string,
    perSecond: number,
    burst: number,
    cost = 1,
  ): RateLimitDecision | Promise<RateLimitDecision> {
    const need = Math.min(Math.max(cost, 1), burst);
    const t = this.now();
    const lease = this.#leases.get(key);
    if (lease && lease.until > t && lease.tokens >= need) {
      if (cost > 0) lease.tokens -= need;
      return decision(true, burst, perSecond, lease.shared + lease.tokens, need);
    }
    return this.#fetch(key, perSecond, burst, cost > 0 ? need : 0, t);
  }

  async give(key: string, perSecond: number, burst: number, tokens: number): Promise<void> {
    await this.takeShared(key, perSecond, burst, 0, 0, tokens, this.now());
  }

  async #fetch(
    key: string,
    perSecond: number,
    burst: number,
    need: number,
    t: number,
  ): Promise<RateLimitDecision> {
    const old = this.#leases.get(key);
    this.#leases.delete(key);
    const giveBack = old?.tokens ?? 0;
    const extra = need > 0 ? leaseSize(perSecond) : 0;
    let r: { granted: number; tokens: number };
    try {
      r = await this.takeShared(key, perSecond, burst, need, extra, giveBack, t);
    } catch (err) {
      if (old) this.#keep(key, old.tokens, old.shared, old.until);
      throw err;
    }
    this.#sweep(t);
    if (need === 0) {
      // Only asked: at least one token is there.
      return decision(r.tokens >= 1, burst, perSecond, r.tokens, 1);
    }
    if (r.granted < need) return decision(false, burst, perSecond, r.tokens, need);
    const leased = r.granted - need;
    if (leased > 0) this.#keep(key, leased, r.tokens, t + LEASE_MS);
    return decision(true, burst, perSecond, r.tokens + leased, need);
  }

  /** Adds to the key's lease (requests of one key may be on their way to the database together). */
  #keep(key: string, tokens: number, shared: number, until: number): void {
    const l = this.#leases.get(key);
    if (l) {
      l.tokens += tokens;
      l.shared = Math.min(l.shared, shared);
      l.until = Math.max(l.until, until);
    } else this.#leases.set(key, { tokens, shared, until });
  }

  /** Leases long expired are dropped (their tokens are lost to the cluster only until the bucket refills). */
  #sweep(t: number): void {
    if (this.#leases.size < 10_000 || t - this.#lastSweep < 10_000) return;
    this.#lastSweep = t;
    for (const [k, l] of this.#leases) if (l.until + 60_000 < t) this.#leases.delete(k);
  }
}

function decision(
  allowed: boolean,
  burst: number,
  perSecond: number,
  tokens: number,
  need: number,
): RateLimitDecision {
  return {
    allowed,
    limit: burst,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.ceil(Math.max(0, burst - tokens) / perSecond),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((need - tokens) / perSecond)),
  };
}
