import type { ServerResponse } from 'node:http';
import { AppError } from '../../domain/errors.js';
import type { Actor, Services } from '../../operations/context.js';

/**
 * Rate limits: one token bucket per bot API key and per user (WORKROOM_RATE_LIMIT_*), kept in memory
 * per server process. A request takes one token; an empty bucket answers 429 rate_limited with
 * Retry-After. Buckets are independent, so one noisy key never slows another. perSecond 0 disables.
 *
 * Every authenticated REST request passes here (authenticateRequest); the MCP transport calls
 * `takeRateLimit` with the same services, so both surfaces share the buckets.
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

  take(key: string, perSecond: number, burst: number): RateLimitDecision {
    const t = this.now();
    let b = this.#buckets.get(key);
    if (!b) {
      b = { tokens: burst, at: t };
      this.#buckets.set(key, b);
    } else {
      b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * perSecond);
      b.at = t;
    }
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    this.#sweep(t, burst, perSecond);
    return {
      allowed,
      limit: burst,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((burst - b.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / perSecond)),
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

const limiters = new WeakMap<Services, TokenBucketLimiter>();

/** Takes one token for the actor; null when rate limiting is disabled for its kind. */
export function takeRateLimit(services: Services, actor: Actor): RateLimitDecision | null {
  const cfg = actor.kind === 'bot' ? services.config.rateLimits.bot : services.config.rateLimits.user;
  if (cfg.perSecond <= 0) return null;
  let limiter = limiters.get(services);
  if (!limiter) limiters.set(services, (limiter = new TokenBucketLimiter()));
  const key = actor.kind === 'bot' ? `key:${actor.keyId}` : `user:${actor.userId}`;
  return limiter.take(key, cfg.perSecond, cfg.burst);
}

/** The RateLimit-* headers (IETF draft) of a decision. */
export function rateLimitHeaders(d: RateLimitDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(d.limit),
    'ratelimit-remaining': String(d.remaining),
    'ratelimit-reset': String(d.resetSeconds),
  };
}

/** Applies the limit to an HTTP request: sets the headers, or throws 429 with Retry-After. */
export function enforceRateLimit(services: Services, actor: Actor, res: ServerResponse): void {
  const d = takeRateLimit(services, actor);
  if (!d) return;
  for (const [k, v] of Object.entries(rateLimitHeaders(d))) res.setHeader(k, v);
  if (!d.allowed) {
    throw new AppError(
      'rate_limited',
      `Too many requests for this ${actor.kind === 'bot' ? 'API key' : 'user'}; retry in ${d.retryAfterSeconds} s`,
      { retryAfterSeconds: d.retryAfterSeconds },
    );
  }
}
