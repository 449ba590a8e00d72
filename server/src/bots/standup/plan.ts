import { localDate, nextOccurrence } from '../../domain/schedule-time.js';
import type { StandupConfig } from './model.js';

/**
 * When stand-ups happen (pure). A channel's stand-ups form a chain of scheduled jobs: only the next
 * start is scheduled, and each start schedules the one after it, computed from its own planned instant
 * (never from the clock, so a late or repeated run plans the same next one). The occurrence's local
 * date names it: dedupe keys and the run document are per date, so a date never has two stand-ups.
 * Daylight-saving changes follow domain/schedule-time.ts: 09:30 stays 09:30 local time; a time the
 * clocks skip happens when they jump; a time they repeat happens the first time only.
 */

export interface Occurrence {
  /** Local date in the stand-up's zone. */
  date: string;
  /** The instant (ISO 8601 UTC). */
  at: string;
}

type Schedule = Pick<StandupConfig, 'time' | 'days' | 'tz'>;

/** The first occurrence strictly after `after` (skip dates and pauses are decided when it is due). */
export function nextStart(s: Schedule, after: number): Occurrence {
  const at = nextOccurrence({ time: s.time, timeZone: s.tz, weekdays: s.days }, after);
  return { date: localDate(at, s.tz), at: at.toISOString() };
}

/**
 * The occurrence after the one planned at `plannedAt`, to be scheduled by that one's start job. When
 * the start ran late (the server was down), planning from the clock instead keeps the next start in
 * the future; the small margin keeps a start that ran on time from landing on the same occurrence.
 */
export function followingStart(s: Schedule, plannedAt: string, now: number): Occurrence {
  return nextStart(s, Math.max(Date.parse(plannedAt), now - 30_000));
}

/**
 * The times of one occurrence: the questions go out when the start runs, the summary `window` later
 * (counted from the planned instant, or from the real start when it ran late, so that members always
 * get the whole window), the reminder `remind` before the summary (none when that is not after the
 * start).
 */
export function runTimes(
  plannedAt: string,
  now: number,
  window_ms: number,
  remind_ms: number,
): { started_at: string; summary_at: string; remind_at: string | null } {
  const start = Math.max(Date.parse(plannedAt), now);
  const summary = start + window_ms;
  const remind = remind_ms > 0 ? summary - remind_ms : null;
  return {
    started_at: new Date(start).toISOString(),
    summary_at: new Date(summary).toISOString(),
    remind_at: remind !== null && remind > start ? new Date(remind).toISOString() : null,
  };
}

/** Whether an occurrence on `date` is held: not paused, not a skip date. */
export function heldOn(c: Pick<StandupConfig, 'paused' | 'skip'>, date: string): boolean {
  return !c.paused && !c.skip.includes(date);
}

/** Skip dates still to come (today included), sorted. */
export function futureSkips(skip: readonly string[], today: string): string[] {
  return [...new Set(skip.filter((d) => d >= today))].sort();
}
