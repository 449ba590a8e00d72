import { describe, expect, it } from 'vitest';
import { systemClock, TestClock } from '../src/runtime/clock.js';

/**
 * The clock of business time (server/src/runtime/clock.ts): the system clock, and the test clock that
 * tests move (an offset over real time; its timers fire when real time or a jump reaches them).
 */
describe('clock', () => {
  it('the system clock is Date.now() and fires its timers in real time', async () => {
    const before = Date.now();
    expect(systemClock.now()).toBeGreaterThanOrEqual(before);
    expect(Date.parse(systemClock.nowIso())).toBeGreaterThanOrEqual(before);
    // A real timer: not fired at once (nor by the next turn of the event loop), fired later. Its delay is
    // not checked to the millisecond against Date.now(): libuv counts from its cached loop time, which can
    // be a few ms older than the call on a loaded machine (CI once saw a 5 ms timer fire 4 ms later).
    let fired = 0;
    const done = new Promise<void>((resolve) =>
      systemClock.setTimeout(() => {
        fired = Date.now();
        resolve();
      }, 200),
    );
    await new Promise((r) => setImmediate(r));
    expect(fired).toBe(0);
    await done;
    expect(fired - before).toBeGreaterThanOrEqual(100);
  });

  it('a test clock starts at real time or later, moves only forward, and keeps flowing', async () => {
    const c = new TestClock();
    expect(Math.abs(c.now() - Date.now())).toBeLessThan(50);
    const later = new TestClock('2031-01-01T00:00:00.000Z');
    expect(later.nowIso().slice(0, 16)).toBe('2031-01-01T00:00');
    expect(() => later.advance(-1)).toThrow(RangeError);
    later.set('2020-01-01T00:00:00Z'); // in the past: nothing happens
    expect(later.now()).toBeGreaterThanOrEqual(Date.parse('2031-01-01T00:00:00Z'));
    const t0 = later.now();
    await expect.poll(() => later.now() > t0).toBe(true); // real time keeps flowing
  });

  it('a jump fires every timer now due, in due order, once; an interval fires once per jump', () => {
    const c = new TestClock();
    const fired: string[] = [];
    c.setTimeout(() => fired.push('2h'), 2 * 3_600_000);
    c.setTimeout(() => fired.push('1m'), 60_000);
    const gone = c.setTimeout(() => fired.push('cleared'), 30_000);
    c.setTimeout(() => fired.push('3h'), 3 * 3_600_000);
    const every = c.setInterval(() => fired.push('every 10m'), 600_000);
    c.clearTimeout(gone);
    c.advance(2 * 3_600_000 + 1000);
    expect(fired).toEqual(['1m', 'every 10m', '2h']);
    c.advance(600_000);
    expect(fired).toEqual(['1m', 'every 10m', '2h', 'every 10m']);
    c.clearTimeout(every);
    c.advance(3_600_000);
    expect(fired).toEqual(['1m', 'every 10m', '2h', 'every 10m', '3h']);
    expect(c.pending).toBe(0);
  });

  it('a timer of a test clock also fires when real time reaches it', async () => {
    const c = new TestClock();
    const at = await new Promise<number>((resolve) => c.setTimeout(() => resolve(c.now()), 20));
    expect(c.pending).toBe(0);
    c.advance(3_600_000); // a timer set after a jump counts from the new time
    const start = c.now();
    const due = await new Promise<number>((resolve) => c.setTimeout(() => resolve(c.now()), 20));
    expect(due - start).toBeGreaterThanOrEqual(20);
    expect(due - at).toBeGreaterThanOrEqual(3_600_000);
  });

  it('a timer that throws does not keep the other due timers from firing', () => {
    const c = new TestClock();
    const fired: number[] = [];
    c.setTimeout(() => {
      throw new Error('boom');
    }, 10);
    c.setTimeout(() => fired.push(2), 20);
    expect(() => c.advance(100)).toThrow('boom');
    expect(fired).toEqual([2]);
  });
});
