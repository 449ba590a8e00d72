import { TestClock } from '../../src/runtime/clock.js';

/**
 * A test clock that real time does not move: it stands still until the test calls `advance` / `set`
 * (a TestClock is an offset over real time, which keeps flowing). For tests of rates (the sign-in
 * throttle, the API rate limits): a token bucket refills only when the test moves the clock, never
 * because the machine was slow, so the same requests get the same answers on any machine.
 *
 * Its timers fire as a TestClock's do, in due order when a jump passes them (real time never gets
 * them there). Everything stamped by business time in a test on this clock carries the same time
 * until the test moves it.
 */
export class FrozenClock extends TestClock {
  #at: number;

  /** Stands at real time now, or at `start` (epoch ms or ISO 8601) if that is later. */
  constructor(start?: number | string) {
    super();
    this.#at = Date.now();
    if (start !== undefined) this.set(start);
  }

  override now(): number {
    return this.#at;
  }

  override advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('a test clock only moves forward');
    this.#at += ms;
    super.advance(ms); // fires the timers now due (by this.now())
  }
}
