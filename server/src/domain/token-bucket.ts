/**
 * Token buckets by key, in memory: one per bot API key, per user, per login account and client address.
 * Buckets are independent, so one noisy key never slows another; a full bucket is forgotten (it
 * behaves exactly like a new one), so memory follows the keys active in the last refill period.
 */

export interface RateLimitDecision {
  allowed: boolean;
  /** Bucket size (burst). */
  limit: number;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one token is available (0 when allowed). */
  retryAfterSeconds: number;
}

/**
 * Takes `cost` tokens of the bucket `key` (at most the whole bucket; cost 0 only asks whether one token
 * is there). In memory (`TokenBucketLimiter`, one process) it answers at once; shared by a cluster
 * (`LeasedRateLimiter`) it answers at once from the instance's lease, or a promise when it asks the
 * database.
 */
export interface RateLimiter {
  take(
    key: string,
    perSecond: number,
    burst: number,
    cost?: number,
  ): RateLimitDecision | Promise<RateLimitDecision>;
  /**
   * Puts `tokens` back into the bucket `key` (never above `burst`): what a caller took ahead for work
   * that turned out not to cost it (a sign-in attempt that did not fail).
   */
  give(key: string, perSecond: number, burst: number, tokens: number): void | Promise<void>;
}

interface Bucket {
  tokens: number;
  at: number;
  /** Milliseconds an empty bucket takes to fill (its own rate: a day for a key's writes_per_day). */
  fillMs: number;
}

export class TokenBucketLimiter implements RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  #lastSweep = 0;

  /**
   * `now`: milliseconds that never go back; the server passes its clock's (`Services.clock.now`,
   * runtime/clock.ts), so a test refills buckets by moving the clock. Default: performance.now().
   */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Takes `cost` tokens (at most the whole bucket, so an expensive call is never refused forever).
   * Nothing is taken when there are not enough. Cost 0 only asks whether one token is there.
   */
  take(key: string, perSecond: number, burst: number, cost = 1): RateLimitDecision {
    const need = Math.min(Math.max(cost, 1), burst);
    const t = this.now();
    const b = this.#refilled(key, perSecond, burst, t);
    const allowed = b.tokens >= need;
    if (allowed && cost > 0) b.tokens -= need;
    this.#sweep(t);
    return {
      allowed,
      limit: burst,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((burst - b.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((need - b.tokens) / perSecond)),
    };
  }

  give(key: string, perSecond: number, burst: number, tokens: number): void {
    const b = this.#refilled(key, perSecond, burst, this.now());
    b.tokens = Math.min(burst, b.tokens + tokens);
  }

  /** The bucket of `key` refilled up to `t` (a new one is full). */
  #refilled(key: string, perSecond: number, burst: number, t: number): Bucket {
    let b = this.#buckets.get(key);
    if (!b) {
      b = { tokens: burst, at: t, fillMs: (burst / perSecond) * 1000 };
      this.#buckets.set(key, b);
    } else {
      // A clock stepped backwards (the system clock is epoch time) refills nothing, and takes nothing.
      b.tokens = Math.min(burst, b.tokens + (Math.max(0, t - b.at) / 1000) * perSecond);
      b.at = t;
      b.fillMs = (burst / perSecond) * 1000;
    }
    return b;
  }

  /**
   * Forgets buckets that have refilled completely (they behave exactly like new ones), each by its own
   * rate: a slow bucket (a day's write budget) is not forgotten when a fast one would be full.
   */
  #sweep(t: number): void {
    if (this.#buckets.size < 10_000 || t - this.#lastSweep < 10_000) return;
    this.#lastSweep = t;
    for (const [k, b] of this.#buckets) if (t - b.at > b.fillMs) this.#buckets.delete(k);
  }
}
