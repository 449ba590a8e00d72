import ipaddr from 'ipaddr.js';
import { performance } from 'node:perf_hooks';

/**
 * What keeps one client, user or organization from taking the live stream from the others
 * (docs/REALTIME.md "Limits"): the pre-auth pool shared fairly among client addresses, a bound on the
 * replays that run at once, and the pacing of replay work on the event loop.
 */

/**
 * The key of a client address in the pre-auth pool: the address itself for IPv4 (an IPv4-mapped IPv6
 * address counts as its IPv4 address), the /64 prefix for IPv6 (one host commonly holds a whole /64).
 */
export function addressKey(address: string): string {
  try {
    const ip = ipaddr.process(address);
    if (ip.kind() === 'ipv4') return ip.toString();
    const parts = (ip as ipaddr.IPv6).parts;
    return `${parts
      .slice(0, 4)
      .map((p) => p.toString(16))
      .join(':')}::/64`;
  } catch {
    return address;
  }
}

export type Admission<T> = { ok: true; evict?: T } | { ok: false; why: 'address' | 'full' };

/**
 * Connections that have not authenticated yet, by client address. An address holds at most `perKey`
 * of them; the pool at most `max`. When the pool is full, a newcomer whose address holds fewer than
 * the biggest holder would keep takes the place of that holder's oldest connection: an attacker with
 * a few addresses cannot keep a user with another address out, however fast they reconnect.
 */
export class PreAuthPool<T> {
  readonly #byKey = new Map<string, Set<T>>();
  #size = 0;

  constructor(private readonly bounds: () => { perKey: number; max: number }) {}

  get size(): number {
    return this.#size;
  }

  /** How many the address holds. */
  held(key: string): number {
    return this.#byKey.get(key)?.size ?? 0;
  }

  /** Whether a newcomer of `key` may enter, and whom it replaces when the pool is full. */
  admit(key: string): Admission<T> {
    const { perKey, max } = this.bounds();
    const mine = this.held(key);
    if (mine >= perKey) return { ok: false, why: 'address' };
    if (this.#size < max) return { ok: true };
    let biggest: Set<T> | undefined;
    for (const [k, set] of this.#byKey) {
      if (k !== key && set.size > (biggest?.size ?? 0)) biggest = set;
    }
    // Taking the place must leave the newcomer's address with fewer than the holder had.
    if (!biggest || biggest.size <= mine + 1) return { ok: false, why: 'full' };
    return { ok: true, evict: biggest.values().next().value as T };
  }

  add(key: string, item: T): void {
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, (set = new Set()));
    if (set.has(item)) return;
    set.add(item);
    this.#size++;
  }

  /** Removes the item if it is in the pool (idempotent). */
  remove(key: string, item: T): void {
    const set = this.#byKey.get(key);
    if (!set?.delete(item)) return;
    this.#size--;
    if (set.size === 0) this.#byKey.delete(key);
  }
}

interface Waiter {
  user: string;
  org: string;
  /** False once the waiting connection is gone: it is dropped from the queue. */
  wanted: () => boolean;
  grant: (release: (() => void) | null) => void;
}

/**
 * Replays running at once: at most `perUser` of one user, `perOrg` of one organization and `max` in
 * all. Over the bound a replay waits its turn, first come first served among those that may run (one
 * organization at its bound does not hold up another's).
 */
export class ResumeGate {
  readonly #users = new Map<string, number>();
  readonly #orgs = new Map<string, number>();
  #running = 0;
  #queue: Waiter[] = [];

  constructor(private readonly bounds: () => { perUser: number; perOrg: number; max: number }) {}

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Resolves with the function that ends this replay's turn, or null when `wanted` turned false while
   * it waited.
   */
  acquire(user: string, org: string, wanted: () => boolean): Promise<(() => void) | null> {
    return new Promise((grant) => {
      this.#queue.push({ user, org, wanted, grant });
      this.#pump();
    });
  }

  #fits(w: Waiter): boolean {
    const { perUser, perOrg, max } = this.bounds();
    return (
      this.#running < max && (this.#users.get(w.user) ?? 0) < perUser && (this.#orgs.get(w.org) ?? 0) < perOrg
    );
  }

  #pump(): void {
    const left: Waiter[] = [];
    for (const w of this.#queue) {
      if (!w.wanted()) {
        w.grant(null);
        continue;
      }
      if (!this.#fits(w)) {
        left.push(w);
        continue;
      }
      this.#running++;
      bump(this.#users, w.user, 1);
      bump(this.#orgs, w.org, 1);
      let released = false;
      w.grant(() => {
        if (released) return;
        released = true;
        this.#running--;
        bump(this.#users, w.user, -1);
        bump(this.#orgs, w.org, -1);
        this.#pump();
      });
    }
    this.#queue = left;
  }

  /** Drops waiters whose connection is gone (called when a connection closes). */
  prune(): void {
    if (this.#queue.some((w) => !w.wanted())) this.#pump();
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/** A turn of replay work: work on while `left()`, then ask for the next turn. */
export interface Turn {
  left(): boolean;
}

/**
 * Paces replay work: every replay asks for a turn before each piece of work and works until its turn
 * is used up (`sliceMs`); turns are handed out one at a time, round robin among the replays that wait,
 * each in a later turn of the event loop than the previous one (after the I/O that was ready has been
 * handled). However many replays run, a step of any other work waits behind at most one slice.
 *
 * While other work is running (some ran between two slices: a request, a delivery, live dispatch), the
 * next slice also waits until replays have used no more than `share` of the time; on an otherwise idle
 * loop slices follow each other at once. A gap is noticed for `CONTENDED_MS` after it was seen.
 */
export class ReplayPacer {
  #waiters: ((turn: Turn) => void)[] = [];
  #scheduled = false;
  /** When the last slice ended (its replay asked for the next turn). */
  #lastEnd = performance.now();
  /** The wait put before the slice now scheduled. */
  #imposed = 0;
  #contendedUntil = 0;

  constructor(private readonly bounds: () => { sliceMs: number; share: number }) {}

  turn(): Promise<Turn> {
    this.#lastEnd = performance.now();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#waiters.length === 0) return;
    this.#scheduled = true;
    if (performance.now() < this.#contendedUntil) {
      const { sliceMs, share } = this.bounds();
      this.#imposed = (sliceMs * (1 - share)) / share;
      setTimeout(() => this.#next(), this.#imposed);
    } else {
      this.#imposed = 0;
      setImmediate(() => this.#next());
    }
  }

  #next(): void {
    this.#scheduled = false;
    const start = performance.now();
    // Time since the last slice beyond the wait we put there: other work had the loop.
    if (start - this.#lastEnd - this.#imposed > OTHER_WORK_MS) this.#contendedUntil = start + CONTENDED_MS;
    const w = this.#waiters.shift();
    if (w) {
      const end = start + this.bounds().sliceMs;
      w({ left: () => performance.now() < end });
    }
    this.#schedule();
  }
}

/** A gap between two slices longer than this means other work ran (ms). */
const OTHER_WORK_MS = 0.3;
/** How long the loop counts as shared after such a gap (ms). */
const CONTENDED_MS = 50;
