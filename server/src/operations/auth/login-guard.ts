import { AppError } from '../../domain/errors.js';
import type { RateLimiter } from '../../domain/token-bucket.js';

/**
 * Brute-force protection for password sign-in, and a bound on the password hashing it costs.
 *
 * Only failed attempts spend tokens; an empty bucket answers 429 with Retry-After, before any hashing.
 * An attempt takes its tokens when admitted and gives them back unless it failed, so sending many
 * guesses at once gets no more of them checked than sending them one after another.
 * A client without a device token (device-token.ts) is counted in three buckets:
 * - per client address and account: 5 failures, then one per minute (one attacker on one account);
 * - per client address: 30 failures, then one per 10 s (one attacker trying many accounts);
 * - per account, from anywhere: 50 failures, then one per 2 s. This bounds a distributed guess at
 *   1,800 an hour per account. The account bucket is shared by every address, so an attack on the
 *   account empties it and keeps it empty (each new token goes to whoever asks first): a client
 *   without a device token may then wait as long as the attack lasts.
 * A client that presents a valid device token issued to this account (it signed in to the account
 * from that device before) is counted in its own bucket instead, 5 failures then one per minute, and
 * skips the three above: an attack from other addresses, however large, does not lock it out, and a
 * stolen device token gets no more guesses than one address on one account. When its own bucket is
 * empty, the three buckets decide as for any client (a device token never makes things worse).
 * A correct password always signs in when the buckets allow a try; success does not refill them.
 *
 * Several instances on one PostgreSQL share the buckets (domain/leased-rate-limiter.ts: a row per key,
 * no lease at these rates, so every take is one round trip): an attacker spreading guesses over the
 * instances, one after another or all at once, is throttled at the same attempt as on one.
 *
 * scrypt runs on libuv's thread pool (4 threads by default, shared with file and DNS work). At most
 * `MAX_HASHING` verifications run at once and at most `MAX_WAITING` wait; more answers 503, so a
 * flood of sign-ins can neither starve the pool nor queue without bound. Recognized devices wait in
 * a queue of their own that is served first, so a flood of guesses does not delay them either.
 */
const PAIR = { perSecond: 1 / 60, burst: 5 };
const ADDRESS = { perSecond: 1 / 10, burst: 30 };
const ACCOUNT = { perSecond: 1 / 2, burst: 50 };
const DEVICE = { perSecond: 1 / 60, burst: 5 };
const MAX_HASHING = 2;
const MAX_WAITING = 64;

interface Rule {
  perSecond: number;
  burst: number;
}

/**
 * The buckets of one rule. An attempt takes its token when it is admitted, before its password is
 * checked, and gives it back if it did not fail: a client sending 100 guesses at once is admitted as
 * many times as the bucket has tokens, not 100 times, on one instance or spread over several (the
 * shared bucket decides each take under its row's lock).
 */
class Buckets {
  constructor(
    private readonly rule: Rule,
    /** This rule's buckets (their keys carry the rule's name: the cluster's store holds them all). */
    private readonly limiter: RateLimiter,
    private readonly prefix: string,
  ) {}

  /** Takes a token for an attempt: 0 when taken, else the seconds until one is there. */
  async take(key: string): Promise<number> {
    const d = await this.limiter.take(this.prefix + key, this.rule.perSecond, this.rule.burst);
    return d.allowed ? 0 : d.retryAfterSeconds;
  }

  /** Gives back the token of an attempt that did not fail. */
  async giveBack(key: string): Promise<void> {
    await this.limiter.give(this.prefix + key, this.rule.perSecond, this.rule.burst, 1);
  }
}

/** One admitted sign-in attempt: how it is counted, and its end. */
export interface LoginAttempt {
  /** Counted in the bucket of a device token valid for this account. */
  readonly recognized: boolean;
  /** Ends the attempt as a failure: it keeps the tokens it took when admitted. */
  failed(): Promise<void>;
  /** Ends the attempt and gives its tokens back (a success, or no answer on the password); once ended, no-op. */
  end(): Promise<void>;
}

export class LoginGuard {
  readonly #pair: Buckets;
  readonly #address: Buckets;
  readonly #account: Buckets;
  readonly #device: Buckets;
  #hashing = 0;
  readonly #waiting: (() => void)[] = [];
  readonly #waitingRecognized: (() => void)[] = [];

  /**
   * `limiter`: makes the buckets of one rule (the server passes its rate limiter's kind: in memory,
   * refilled by the server's clock so a test on a TestClock refills them by moving it; or the
   * cluster's). `refused`: hears each attempt refused (metrics).
   */
  constructor(
    limiter: () => RateLimiter,
    private readonly refused: () => void = () => {},
  ) {
    this.#pair = new Buckets(PAIR, limiter(), 'signin:pair:');
    this.#address = new Buckets(ADDRESS, limiter(), 'signin:address:');
    this.#account = new Buckets(ACCOUNT, limiter(), 'signin:account:');
    this.#device = new Buckets(DEVICE, limiter(), 'signin:device:');
  }

  /**
   * Admits an attempt on `account` from `address` or throws 429; the caller ends the attempt it gets.
   * `device`: the id of a device token the caller has checked was issued to this account
   * (device-token.ts), if any.
   */
  async admit(account: string, address: string, device?: string): Promise<LoginAttempt> {
    if (device !== undefined && (await this.#device.take(device)) === 0) {
      return attempt(true, [[this.#device, device]]);
    }
    const counted: [Buckets, string][] = [
      [this.#pair, `${address}\u0001${account}`],
      [this.#address, address],
      [this.#account, account],
    ];
    const results = await Promise.allSettled(counted.map(([buckets, key]) => buckets.take(key)));
    const taken = counted.filter((_, i) => {
      const r = results[i]!;
      return r.status === 'fulfilled' && r.value === 0;
    });
    const failure = results.find((r) => r.status === 'rejected');
    const wait = Math.max(...results.map((r) => (r.status === 'fulfilled' ? r.value : 0)));
    if (failure || wait > 0) {
      // Refused by one bucket: the others' tokens go back (this attempt is not checked).
      await attempt(false, taken).end();
      if (failure) throw failure.reason;
      this.refused();
      throw new AppError('rate_limited', `Too many failed sign-ins; retry in ${wait} s`, {
        retryAfterSeconds: wait,
      });
    }
    return attempt(false, counted);
  }

  /**
   * Runs a password verification within the concurrency bound; a recognized attempt waits in its own
   * queue, served first.
   */
  async hashing<T>(fn: () => Promise<T>, recognized = false): Promise<T> {
    if (this.#hashing >= MAX_HASHING) {
      const queue = recognized ? this.#waitingRecognized : this.#waiting;
      if (queue.length >= MAX_WAITING) {
        this.refused();
        throw new AppError('unavailable', 'Too many sign-ins at once; retry in a moment', {
          retryAfterSeconds: 1,
        });
      }
      await new Promise<void>((resolve) => queue.push(resolve));
    } else this.#hashing++;
    try {
      return await fn();
    } finally {
      const next = this.#waitingRecognized.shift() ?? this.#waiting.shift();
      if (next) next();
      else this.#hashing--;
    }
  }
}

/** An attempt that holds a token of each of `counted`: a failure keeps them, any other end gives them back. */
function attempt(recognized: boolean, counted: [Buckets, string][]): LoginAttempt {
  let ended = false;
  return {
    recognized,
    failed: () => {
      ended = true;
      return Promise.resolve();
    },
    async end() {
      if (ended) return;
      ended = true;
      await Promise.all(counted.map(([buckets, key]) => buckets.giveBack(key)));
    },
  };
}
