/**
 * Local wall-clock times in IANA time zones, with `Intl` only (no time-zone library): the next instant
 * at which it is HH:MM on one of the given weekdays in a zone, for bots that run "every weekday at
 * 09:00 Europe/Berlin" (docs/SCHEDULER.md "Time zones").
 *
 * Daylight-saving rules (the same every day of the year, whatever the zone's offsets):
 * - a time that exists once is that instant: 09:00 stays 09:00 local across DST changes;
 * - a time that does not exist (the spring-forward gap, e.g. 02:30 in Europe/Berlin on the last Sunday
 *   of March) is moved to the next valid instant: the moment the clocks jump (03:00 local);
 * - a time that exists twice (the fall-back overlap, e.g. 01:30 in America/New_York on the first Sunday
 *   of November) is the first of the two instants only: it fires once, at 01:30 daylight time.
 */

/** ISO weekday: 1 = Monday … 7 = Sunday. */
export type Weekday = 1 | 2 | 3 | 4 | 5 | 6 | 7;
export const ALL_WEEKDAYS: readonly Weekday[] = [1, 2, 3, 4, 5, 6, 7];
export const WORKDAYS: readonly Weekday[] = [1, 2, 3, 4, 5];

const TIME_RE = /^([01]\d|2[0-3]):([0-5]\d)$/;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size > 500) formatters.clear(); // zone names come from users: bounded
    formatters.set(timeZone, f);
  }
  return f;
}

/** The canonical name of an IANA time zone ("europe/berlin" → "Europe/Berlin"), or null if unknown. */
export function canonicalTimeZone(name: string): string | null {
  if (typeof name !== 'string' || name.length === 0 || name.length > 64) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null; // RangeError: invalid time zone
  }
}

export const isValidTimeZone = (name: string): boolean => canonicalTimeZone(name) !== null;

/** "HH:MM" (00:00 to 23:59) as [hour, minute], or null. */
export function parseLocalTime(text: string): [number, number] | null {
  const m = TIME_RE.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

interface Wall {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The wall-clock reading of an instant (ms) in a zone, to the second. */
function wallClock(ms: number, timeZone: string): Wall {
  const w: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(ms))) {
    if (p.type !== 'literal') w[p.type] = Number(p.value);
  }
  return {
    year: w.year!,
    month: w.month!,
    day: w.day!,
    hour: w.hour! % 24,
    minute: w.minute!,
    second: w.second!,
  };
}

const wallAsUtc = (w: Wall): number => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);

/** The zone's offset from UTC at an instant, in ms (local = UTC + offset). */
export function zoneOffsetMs(ms: number, timeZone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallAsUtc(wallClock(whole, timeZone)) - whole;
}

/**
 * The instant at which the wall clock of `timeZone` reads the given local date and time, by the rules
 * above: the earlier instant when it reads it twice, the end of the gap when it never does.
 */
export function localToInstant(
  timeZone: string,
  local: { year: number; month: number; day: number; hour: number; minute: number },
): number {
  const target = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute);
  // Every offset in force within a day of the target: the instant, if any, is target - one of them.
  const offsets = new Set([
    zoneOffsetMs(target - 86_400_000, timeZone),
    zoneOffsetMs(target, timeZone),
    zoneOffsetMs(target + 86_400_000, timeZone),
  ]);
  const valid = [...offsets]
    .map((o) => target - o)
    .filter((t) => wallAsUtc(wallClock(t, timeZone)) === target)
    .sort((a, b) => a - b);
  if (valid.length > 0) return valid[0]!;
  // A gap: the clocks jumped over the target. Candidates with the offsets before and after the jump
  // lie on both sides of the jump; the instant of the jump is the first whose wall time is past it.
  const sorted = [...offsets].sort((a, b) => a - b);
  let lo = target - sorted[sorted.length - 1]!; // reads before the target
  let hi = target - sorted[0]!; // reads after the target
  if (!(wallAsUtc(wallClock(lo, timeZone)) < target && wallAsUtc(wallClock(hi, timeZone)) > target)) {
    throw new Error(`cannot place ${JSON.stringify(local)} in ${timeZone}`);
  }
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2000) * 1000;
    if (mid <= lo || mid >= hi) break;
    if (wallAsUtc(wallClock(mid, timeZone)) < target) lo = mid;
    else hi = mid;
  }
  return hi;
}

export interface LocalSchedule {
  /** "HH:MM", 24-hour local time. */
  time: string;
  /** IANA time zone name, e.g. "Europe/Berlin". */
  timeZone: string;
  /** ISO weekdays (1 = Monday … 7 = Sunday) on which it occurs; all days when omitted or empty. */
  weekdays?: readonly number[] | undefined;
}

/** Checks a schedule; the message names what is wrong (for operations to report as invalid input). */
export function scheduleProblem(s: LocalSchedule): string | null {
  if (!parseLocalTime(s.time)) return 'time: must be HH:MM in 24-hour form, e.g. 09:00';
  if (!isValidTimeZone(s.timeZone)) return `time_zone: "${s.timeZone}" is not an IANA time zone`;
  if (s.weekdays?.some((d) => !Number.isInteger(d) || d < 1 || d > 7)) {
    return 'weekdays: must be ISO weekdays, 1 (Monday) to 7 (Sunday)';
  }
  return null;
}

/**
 * The first instant strictly after `after` at which the schedule occurs (see the DST rules at the top).
 * Throws on an invalid schedule (check it with `scheduleProblem` first).
 */
export function nextOccurrence(s: LocalSchedule, after: Date | number): Date {
  const problem = scheduleProblem(s);
  if (problem) throw new RangeError(problem);
  const [hour, minute] = parseLocalTime(s.time)!;
  const days = new Set(s.weekdays && s.weekdays.length > 0 ? s.weekdays : ALL_WEEKDAYS);
  const afterMs = typeof after === 'number' ? after : after.getTime();
  const today = wallClock(afterMs, s.timeZone);
  // From the local date of `after` (an occurrence earlier that day may still be past), at most 8 days.
  for (let k = -1; k <= 8; k++) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + k));
    const weekday = (((date.getUTCDay() + 6) % 7) + 1) as Weekday;
    if (!days.has(weekday)) continue;
    const at = localToInstant(s.timeZone, {
      year: date.getUTCFullYear(),
      month: date.getUTCMonth() + 1,
      day: date.getUTCDate(),
      hour,
      minute,
    });
    if (at > afterMs) return new Date(at);
  }
  throw new Error('unreachable: every week has the weekday');
}

/** The local date (YYYY-MM-DD) of an instant in a zone: a stable name for an occurrence (dedupe keys). */
export function localDate(at: Date | number, timeZone: string): string {
  const w = wallClock(typeof at === 'number' ? at : at.getTime(), timeZone);
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`;
}
