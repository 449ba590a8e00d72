/**
 * The one clock of the server's business time (docs/ARCHITECTURE.md "Clock"): when things are due
 * (scheduled jobs, their leases, grace and retries, a stand-up's start, a poll's closing), the time
 * stamped on written rows, and the bots' `ctx.now`. The lifecycle owner (app.ts, `startApp(config,
 * { clock })`) owns it and hands it to every part as `Services.clock`; the default is `systemClock`.
 *
 * A test passes a `TestClock` to startApp, in process: there is no environment variable and no
 * endpoint that reaches it, so nothing from the network can move a server's time.
 *
 * Design: `TestClock` is an offset clock over real time, `now() = Date.now() + offset`. `advance(ms)`
 * raises the offset and fires, in due order, every timer of this clock that is now due. Real time
 * keeps flowing, so database I/O, HTTP, sockets and Node's own timers (delivery retries, HTTP
 * time-outs, group commit) work as usual; only business time jumps. `@sinonjs/fake-timers` was not
 * chosen: it replaces Node's timers for the whole process, which stalls the real I/O an integration
 * test depends on (pg pool, better-sqlite3 group commit's setImmediate, HTTP keep-alive), and it has
 * to be ticked by hand for every await.
 *
 * How long work may take (a job handler's time-out, the shutdown deadline, back-off between retries of
 * a contended write) is not business time and stays on Node's timers.
 */

/** A timer of a clock: fires by the clock's time. Never keeps the process alive (like `unref()`). */
export interface ClockTimer {
  readonly __clockTimer: true;
}

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** `now()` as ISO 8601 UTC with milliseconds (fixed width, so it sorts as text). */
  nowIso(): string;
  /** Calls `fn` once the clock's time has moved `ms` on. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  /** Calls `fn` every `ms` of the clock's time (at most once per jump of a test clock). */
  setInterval(fn: () => void, ms: number): ClockTimer;
  /** Cancels a timer of this clock (undefined and fired timers are ignored). */
  clearTimeout(t: ClockTimer | undefined): void;
}

/** `nowIso` of a clock: formatted once per millisecond (a write stamps several rows and events). */
function isoOf(now: () => number): () => string {
  let ms = NaN;
  let iso = '';
  return () => {
    const t = now();
    if (t !== ms) {
      ms = t;
      iso = new Date(t).toISOString();
    }
    return iso;
  };
}

/** The real clock: Date.now() and Node's timers (unref'd). */
export const systemClock: Clock = {
  now: () => Date.now(),
  nowIso: isoOf(() => Date.now()),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return t as unknown as ClockTimer;
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, Math.max(1, ms));
    t.unref();
    return t as unknown as ClockTimer;
  },
  clearTimeout(t) {
    // clearTimeout also clears an interval in Node.
    if (t) clearTimeout(t as unknown as NodeJS.Timeout);
  },
};

interface TestTimer extends ClockTimer {
  fn: () => void;
  /** Clock time when it fires next. */
  due: number;
  /** Set for an interval. */
  every: number | undefined;
  /** The real timer that fires it if real time gets there first. */
  real: NodeJS.Timeout | undefined;
  /** Order of creation (timers due at the same time fire in it). */
  seq: number;
}

/**
 * A clock for tests: real time plus an offset that `advance` / `set` raise (never lower). Timers fire
 * when real time reaches them or when a jump passes them, in due order; an interval fires at most once
 * per jump and is then due `every` ms after the jump (as a real timer would catch up once).
 */
export class TestClock implements Clock {
  #offset = 0;
  #seq = 0;
  readonly #timers = new Set<TestTimer>();

  /** Starts at real time, or at `start` (epoch ms or ISO 8601) if that is later. */
  constructor(start?: number | string) {
    if (start !== undefined) this.set(start);
  }

  now(): number {
    return Date.now() + this.#offset;
  }

  nowIso(): string {
    return new Date(this.now()).toISOString();
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    return this.#add(fn, ms, undefined);
  }

  setInterval(fn: () => void, ms: number): ClockTimer {
    return this.#add(fn, ms, Math.max(1, ms));
  }

  clearTimeout(t: ClockTimer | undefined): void {
    const timer = t as TestTimer | undefined;
    if (!timer || !this.#timers.has(timer)) return;
    clearTimeout(timer.real);
    this.#timers.delete(timer);
  }

  /** Moves the clock `ms` on and fires every timer now due, in due order. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('a test clock only moves forward');
    this.#offset += ms;
    this.#fireDue();
  }

  /** Moves the clock on to `at` (epoch ms or ISO 8601); a time already passed leaves it as it is. */
  set(at: number | string): void {
    const t = typeof at === 'string' ? Date.parse(at) : at;
    if (Number.isNaN(t)) throw new RangeError(`not a time: ${String(at)}`);
    this.advance(Math.max(0, t - this.now()));
  }

  /** Timers waiting (for tests of the clock itself). */
  get pending(): number {
    return this.#timers.size;
  }

  #add(fn: () => void, ms: number, every: number | undefined): TestTimer {
    const timer: TestTimer = {
      __clockTimer: true,
      fn,
      due: this.now() + Math.max(0, ms),
      every,
      real: undefined,
      seq: this.#seq++,
    };
    this.#timers.add(timer);
    this.#arm(timer);
    return timer;
  }

  #arm(timer: TestTimer): void {
    clearTimeout(timer.real);
    timer.real = setTimeout(() => this.#fireDue(), Math.max(0, timer.due - this.now()) + 1);
    timer.real.unref();
  }

  #fireDue(): void {
    const now = this.now();
    const due = [...this.#timers].filter((t) => t.due <= now).sort((a, b) => a.due - b.due || a.seq - b.seq);
    let failure: { err: unknown } | undefined;
    for (const t of due) {
      if (!this.#timers.has(t)) continue; // cleared by a timer fired before it
      if (t.every === undefined) {
        clearTimeout(t.real);
        this.#timers.delete(t);
      } else {
        t.due = now + t.every;
        this.#arm(t);
      }
      try {
        t.fn();
      } catch (err) {
        failure ??= { err }; // the other due timers still fire
      }
    }
    // Timers not yet due: their real timers were armed for the old offset.
    for (const t of this.#timers) if (!due.includes(t)) this.#arm(t);
    if (failure) throw failure.err;
  }
}
