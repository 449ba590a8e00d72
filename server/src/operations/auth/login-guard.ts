import { AppError } from '../../domain/errors.js';
import { TokenBucketLimiter } from '../../domain/token-bucket.js';

/**
 * Brute-force protection for password sign-in, and a bound on the password hashing it costs.
 *
 * Only failed attempts spend tokens, from three buckets; an empty one answers 429 with Retry-After,
 * before any hashing:
 * - per client address and account: 5 failures, then one per minute (one attacker on one account);
 * - per client address: 30 failures, then one per 10 s (one attacker trying many accounts);
 * - per account, from anywhere: 50 failures, then one per 2 s. This bounds a distributed guess at
 *   1,800 an hour per account, while the real user, whose own address has no failures, waits at most
 *   about 2 s for a try even during such an attack: nobody can lock a user out for long.
 * A correct password always signs in when the buckets allow a try; success does not refill them.
 *
 * scrypt runs on libuv's thread pool (4 threads by default, shared with file and DNS work). At most
 * `MAX_HASHING` verifications run at once and at most `MAX_WAITING` wait; more answers 503, so a
 * flood of sign-ins can neither starve the pool nor queue without bound.
 */
const PAIR = { perSecond: 1 / 60, burst: 5 };
const ADDRESS = { perSecond: 1 / 10, burst: 30 };
const ACCOUNT = { perSecond: 1 / 2, burst: 50 };
const MAX_HASHING = 2;
const MAX_WAITING = 64;

export class LoginGuard {
  readonly #pair = new TokenBucketLimiter();
  readonly #address = new TokenBucketLimiter();
  readonly #account = new TokenBucketLimiter();
  #hashing = 0;
  readonly #waiting: (() => void)[] = [];

  /** Throws 429 when this client may not try this account now. */
  check(account: string, address: string): void {
    const decisions = [
      this.#pair.take(`${address}\u0001${account}`, PAIR.perSecond, PAIR.burst, 0),
      this.#address.take(address, ADDRESS.perSecond, ADDRESS.burst, 0),
      this.#account.take(account, ACCOUNT.perSecond, ACCOUNT.burst, 0),
    ];
    const wait = Math.max(...decisions.map((d) => d.retryAfterSeconds));
    if (wait > 0) {
      throw new AppError('rate_limited', `Too many failed sign-ins; retry in ${wait} s`, {
        retryAfterSeconds: wait,
      });
    }
  }

  /** Spends one token of each bucket for a failed attempt. */
  failed(account: string, address: string): void {
    this.#pair.take(`${address}\u0001${account}`, PAIR.perSecond, PAIR.burst);
    this.#address.take(address, ADDRESS.perSecond, ADDRESS.burst);
    this.#account.take(account, ACCOUNT.perSecond, ACCOUNT.burst);
  }

  /** Runs a password verification within the concurrency bound. */
  async hashing<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#hashing >= MAX_HASHING) {
      if (this.#waiting.length >= MAX_WAITING) {
        throw new AppError('unavailable', 'Too many sign-ins at once; retry in a moment', {
          retryAfterSeconds: 1,
        });
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else this.#hashing++;
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#hashing--;
    }
  }
}
