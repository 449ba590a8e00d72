/**
 * Requests first: the webhook fan-out and worker run in the same process (and on SQLite on the same
 * writer) as the request path, and a message to a channel with 50 subscribed bots makes 50 deliveries,
 * each costing about as much as the request itself. Left alone, deliveries would take most of the
 * event loop whenever requests come fast, and requests would slow down to the pace of deliveries.
 *
 * So background work is paced while requests are being served (`ForegroundMeter`: a request in
 * flight, or one ended less than `quietMs` ago), queue up (on average at least `queueing` in flight
 * over the last `windowMs`: the server, not its clients, sets their pace) while the event loop is
 * crowded (at least `crowded` of it was busy over the window):
 * each unit of background work (a fan-out pass, a claim, a batch of records, an attempt) is charged
 * what it cost, and the next one waits until its allowance has caught up. The allowance is `minShare`
 * of the loop while requests queue up and the loop is crowded (counting background work too: a
 * measure of what requests alone took would fall as background work crowded them out, and let it take
 * more still). Requests that leave the loop mostly idle (a steady trickle, however frequent) do not
 * slow deliveries down at all; requests that want the whole loop (a load test) leave deliveries
 * `minShare` of it. With no request
 * being served there is no limit: the backlog built up meanwhile is worked off at full speed.
 * Events are never lost or reordered by this, only delivered later: the fan-out's cursor and the
 * delivery rows are durable.
 */

import { performance } from 'node:perf_hooks';

/** Counts requests in flight; app.ts marks each request's start and end. */
export class ForegroundMeter {
  #inFlight = 0;
  #lastEnd = -Infinity;
  /** Requests in flight integrated over time (request-milliseconds), up to `#changed`. */
  #area = 0;
  #changed = performance.now();

  begin(): void {
    this.#advance();
    this.#inFlight++;
  }

  end(): void {
    this.#advance();
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    this.#lastEnd = this.#changed;
  }

  /** Request-milliseconds in flight so far: its growth over a window is the mean concurrency. */
  area(): number {
    this.#advance();
    return this.#area;
  }

  #advance(): void {
    const now = performance.now();
    this.#area += this.#inFlight * (now - this.#changed);
    this.#changed = now;
  }

  /** A request is in flight, or one ended less than `quietMs` ago. */
  busy(quietMs: number, now = performance.now()): boolean {
    return this.#inFlight > 0 || now - this.#lastEnd < quietMs;
  }
}

export interface PacerOptions {
  /** Fraction of wall-clock time background work gets at least while requests are served. */
  minShare?: number;
  /** Background work that may run at once before the first wait (ms). */
  burstMs?: number;
  /** How long after the last request the foreground counts as busy (ms). */
  quietMs?: number;
  /** The window over which the event loop's use and the requests in flight are measured (ms). */
  windowMs?: number;
  /**
   * The fraction of the window the event loop must be busy (requests and background work together)
   * for background work to be paced: below it, there is room for both.
   */
  crowded?: number;
  /**
   * The mean number of requests in flight over the window from which on they count as queueing (the
   * server, not its clients, sets their pace). Both this and `crowded` must hold for pacing.
   */
  queueing?: number;
}

export class Pacer {
  readonly #meter: ForegroundMeter | undefined;
  readonly #minShare: number;
  readonly #burstMs: number;
  readonly #quietMs: number;
  readonly #windowMs: number;
  readonly #crowded: number;
  readonly #queueing: number;
  #area = 0;
  /** Background milliseconds spent beyond the allowance (negative: allowance left). */
  #debt = 0;
  #at = performance.now();
  /** The current allowance (fraction of wall-clock time) and how it is measured. */
  #share: number;
  #windowStart = performance.now();
  #elu = performance.eventLoopUtilization();

  /** Without a meter, nothing is ever held back (tests, tools). */
  constructor(meter?: ForegroundMeter, opts: PacerOptions = {}) {
    this.#meter = meter;
    this.#minShare = opts.minShare ?? 0.1;
    this.#burstMs = opts.burstMs ?? 5;
    this.#quietMs = opts.quietMs ?? 25;
    this.#windowMs = opts.windowMs ?? 100;
    this.#crowded = opts.crowded ?? 0.6;
    this.#queueing = opts.queueing ?? 4;
    this.#share = 1;
  }

  /** Whether requests are being served. */
  get busy(): boolean {
    return this.#meter?.busy(this.#quietMs) ?? false;
  }

  /** Whether background work is being paced now (requests queue up). */
  get paced(): boolean {
    this.#settle();
    return this.busy && this.#share < 1;
  }

  /**
   * Starts timing a unit of background work; the returned function charges the time since. Time only
   * what keeps the event loop busy: a transaction on SQLite (its statements run on the loop), not one
   * on PostgreSQL, whose wall-clock time is mostly waiting for the database (time its computing parts).
   */
  measure(): () => void {
    if (!this.#meter) return () => undefined;
    const t0 = performance.now();
    return () => this.charge(performance.now() - t0);
  }

  /** Records background work that kept the event loop busy for `ms`. */
  charge(ms: number): void {
    if (!this.#meter) return;
    this.#settle();
    this.#debt += ms;
  }

  /** Milliseconds to wait before the next unit of background work (0: go now). */
  delay(): number {
    if (!this.#meter) return 0;
    this.#settle();
    return this.#debt > 0 ? this.#debt / this.#share : 0;
  }

  /** Resolves when background work may go on. */
  async ready(): Promise<void> {
    for (let wait = this.delay(); wait > 0; wait = this.delay()) {
      await new Promise((r) => setTimeout(r, Math.min(Math.ceil(wait), 50)));
    }
  }

  #settle(): void {
    if (!this.#meter) return;
    const now = performance.now();
    const span = now - this.#windowStart;
    if (span >= this.#windowMs) {
      // How busy the loop was, requests and background work together.
      const elu = performance.eventLoopUtilization(this.#elu);
      const area = this.#meter.area();
      const queueing = (area - this.#area) / span >= this.#queueing;
      this.#area = area;
      const loop = elu.active / span;
      this.#share = queueing && loop >= this.#crowded ? this.#minShare : 1;
      this.#elu = performance.eventLoopUtilization();
      this.#windowStart = now;
    }
    if (!this.busy) this.#debt = Math.min(this.#debt, 0);
    this.#debt = Math.max(-this.#burstMs, this.#debt - (now - this.#at) * this.#share);
    this.#at = now;
  }
}
