/**
 * When to try a failed delivery again. `delaysMs` is WORKROOM_WEBHOOK_RETRY_DELAYS (default 60 s, 300 s):
 * the first attempt is immediate, retry n waits delaysMs[n-1] ±10 % (jitter spreads the retries of many
 * deliveries that failed together, e.g. when one receiver came back up). A receiver's Retry-After (on
 * 429/503) is honoured but bounded: never sooner than our own schedule, never later than one hour, so a
 * receiver can slow us down but cannot park a delivery forever or make us hammer it.
 *
 * `now` is the server's business time (runtime/clock.ts): the worker passes its clock's.
 */

import { systemClock } from '../runtime/clock.js';

export const MAX_RETRY_AFTER_MS = 3_600_000;
const JITTER = 0.1;

/**
 * Milliseconds until the next attempt, or null when none is left.
 * @param attempt attempts made so far (≥ 1)
 * @param retryAfterHeader the receiver's Retry-After header; pass it only for 429/503 answers
 * @param random a source of [0, 1) numbers (tests pass a fixed one)
 */
export function retryDelayMs(
  attempt: number,
  delaysMs: number[],
  retryAfterHeader?: string,
  random: () => number = Math.random,
  now: number = systemClock.now(),
): number | null {
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be an integer ≥ 1, got ${attempt}`);
  const base = delaysMs[attempt - 1];
  if (base === undefined) return null;
  const scheduled = Math.max(0, Math.round(base * (1 + (random() * 2 - 1) * JITTER)));
  const asked = retryAfterHeader === undefined ? null : parseRetryAfterMs(retryAfterHeader, now);
  if (asked === null || asked <= scheduled) return scheduled;
  return Math.min(asked, Math.max(scheduled, MAX_RETRY_AFTER_MS));
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when it is neither. */
export function parseRetryAfterMs(header: string, now: number = systemClock.now()): number | null {
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only the HTTP-date form: Date.parse accepts too much (e.g. "1"), so require a weekday-led date.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
