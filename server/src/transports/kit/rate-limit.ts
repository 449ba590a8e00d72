import type { ServerResponse } from 'node:http';
import { AppError } from '../../domain/errors.js';
import type { RateLimitDecision } from '../../domain/token-bucket.js';
import type { Actor, Services } from '../../operations/context.js';

/**
 * Rate limits: one token bucket per bot API key and per user (WORKROOM_RATE_LIMIT_*), kept in memory
 * per server process. A request takes one token; an empty bucket answers 429 rate_limited with
 * Retry-After. Buckets are independent, so one noisy key never slows another. perSecond 0 disables.
 *
 * Every authenticated REST request passes here (authenticateRequest) and takes its operation's
 * `rateCost`; the MCP transport takes a token per HTTP request and per call of a batch from the same
 * limiter (services.rateLimiter), so both surfaces share the buckets.
 */

/**
 * Takes `cost` tokens for the actor; null when rate limiting is disabled for its kind. The buckets are
 * this process's (SQLite) or the cluster's (PostgreSQL: domain/leased-rate-limiter.ts).
 */
export async function takeRateLimit(
  services: Services,
  actor: Actor,
  cost = 1,
): Promise<RateLimitDecision | null> {
  const cfg = actor.kind === 'bot' ? services.config.rateLimits.bot : services.config.rateLimits.user;
  if (cfg.perSecond <= 0) return null;
  const key = actor.kind === 'bot' ? `key:${actor.keyId}` : `user:${actor.userId}`;
  const d = await services.rateLimiter.take(key, cfg.perSecond, cfg.burst, cost);
  if (!d.allowed) services.metrics.rejected(actor.kind === 'bot' ? 'bot_key' : 'user');
  return d;
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
export async function enforceRateLimit(
  services: Services,
  actor: Actor,
  res: ServerResponse,
  cost = 1,
): Promise<void> {
  const d = await takeRateLimit(services, actor, cost);
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
