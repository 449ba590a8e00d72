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

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBucketLimiter {
  readonly #buckets = new Map<string, Bucket>();
  #lastSweep = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Takes `cost` tokens (at most the whole bucket, so an expensive call is never refused forever).
   * Nothing is taken when there are not enough. Cost 0 only asks whether one token is there.
   */
  take(key: string, perSecond: number, burst: number, cost = 1): RateLimitDecision {
    const need = Math.min(Math.max(cost, 1), burst);
    const t = this.now();
    let b = this.#buckets.get(key);
    if (!b) {
      b = { tokens: burst, at: t };
      this.#buckets.set(key, b);
    } else {
      b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * perSecond);
      b.at = t;
    }
    const allowed = b.tokens >= need;
    if (allowed && cost > 0) b.tokens -= need;
    this.#sweep(t, burst, perSecond);
    return {
      allowed,
      limit: burst,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((burst - b.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((need - b.tokens) / perSecond)),
    };
  }

  /** Forgets buckets that have refilled completely (they behave exactly like new ones). */
  #sweep(t: number, burst: number, perSecond: number): void {
    if (this.#buckets.size < 10_000 || t - this.#lastSweep < 10_000) return;
    this.#lastSweep = t;
    const fullAfterMs = (burst / perSecond) * 1000;
    for (const [k, b] of this.#buckets) if (t - b.at > fullAfterMs) this.#buckets.delete(k);
  }
}
