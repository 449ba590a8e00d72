import { AppError } from '../../domain/errors.js';
import { canonicalTimeZone, localDate, type Weekday } from '../../domain/schedule-time.js';

/**
 * Time pieces shared by the platform bots (stand-up, collection, task notifications): durations
 * ("90s", "15m", "2h", "3d"), weekday sets ("mon-fri", "mon,wed,fri", "daily"), dates and how an
 * instant is shown in a zone. Pure functions; errors are `invalid_input` with a message for the user.
 */

const fail = (message: string) => new AppError('invalid_input', message);

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "15m", "2h", "3d" (one number, one unit) in ms; null when it is not one. */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,6})\s*(s|sec|m|min|h|d)$/i.exec(text.trim());
  if (!m) return null;
  const unit = m[2]!.toLowerCase()[0]!;
  return Number(m[1]) * UNIT_MS[unit]!;
}

/** A duration as the user would write it: "1h 30m", "45m", "30s". */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0m';
  const parts: string[] = [];
  let rest = Math.round(ms / 1000);
  for (const [unit, s] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= s) {
      parts.push(`${Math.floor(rest / s)}${unit}`);
      rest %= s;
    }
  }
  return parts.join(' ');
}

export const WEEKDAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const WEEKDAY_LONG = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

/** "mon", "Monday", "tues" … → 1..7; null when it is not a weekday. */
export function parseWeekday(text: string): Weekday | null {
  const t = text.trim().toLowerCase();
  if (t.length < 2) return null;
  const i = WEEKDAY_LONG.findIndex((d) => d.startsWith(t) && t.length >= 3);
  return i >= 0 ? ((i + 1) as Weekday) : null;
}

/**
 * The days of a schedule: "daily" / "everyday", "weekdays" (mon-fri), "weekends", a range "mon-fri"
 * (wrapping: "fri-mon"), or a list "mon,wed,fri" (ranges allowed in it). Sorted, without repeats.
 */
export function parseDays(text: string): Weekday[] {
  const t = text.trim().toLowerCase();
  if (t === 'daily' || t === 'everyday' || t === 'every-day' || t === 'all') return [1, 2, 3, 4, 5, 6, 7];
  if (t === 'weekdays' || t === 'workdays') return [1, 2, 3, 4, 5];
  if (t === 'weekends') return [6, 7];
  const days = new Set<Weekday>();
  for (const part of t.split(',')) {
    const range = part.split('-');
    if (range.length === 1) {
      const d = parseWeekday(range[0]!);
      if (!d) throw fail(`days: "${part}" is not a weekday (mon, tue, wed, thu, fri, sat, sun)`);
      days.add(d);
    } else if (range.length === 2) {
      const a = parseWeekday(range[0]!);
      const b = parseWeekday(range[1]!);
      if (!a || !b) throw fail(`days: "${part}" is not a range of weekdays such as mon-fri`);
      for (let d = a; ; d = ((d % 7) + 1) as Weekday) {
        days.add(d);
        if (d === b) break;
      }
    } else {
      throw fail(`days: "${part}" is not a weekday or a range such as mon-fri`);
    }
  }
  if (days.size === 0) throw fail('days: name at least one weekday, e.g. mon-fri');
  return [...days].sort((a, b) => a - b);
}

/** [1,2,3,4,5] → "Mon–Fri"; [1,3,5] → "Mon, Wed, Fri"; all seven → "every day". */
export function formatDays(days: readonly number[]): string {
  const sorted = [...new Set(days)].sort((a, b) => a - b);
  if (sorted.length === 7) return 'every day';
  const name = (d: number) => WEEKDAY_NAMES[d - 1]!.replace(/^./, (c) => c.toUpperCase());
  const runs: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    runs.push(
      j - i >= 2
        ? `${name(sorted[i]!)}–${name(sorted[j]!)}`
        : sorted
            .slice(i, j + 1)
            .map(name)
            .join(', '),
    );
    i = j + 1;
  }
  return runs.join(', ');
}

/** A time zone given by a user: its canonical IANA name, or an error naming it. */
export function parseTimeZone(text: string): string {
  const tz = canonicalTimeZone(text.trim());
  if (!tz)
    throw fail(`time zone: "${text}" is not an IANA time zone, e.g. Europe/Berlin or America/New_York`);
  return tz;
}

/** YYYY-MM-DD that is a real date. */
export function isIsoDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === s;
}

/** A date plus n days (YYYY-MM-DD). */
export function addDays(date: string, n: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

/** The ISO weekday (1 = Monday) of a date YYYY-MM-DD. */
export function weekdayOf(date: string): Weekday {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return (((new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7) + 1) as Weekday;
}

/** Today's date in a zone. */
export const todayIn = (timeZone: string, now: number | Date): string => localDate(now, timeZone);

/** An instant shown in a zone: "Mon 23 Nov 2026, 09:30 (Europe/Berlin)". */
export function formatInstant(at: number | Date | string, timeZone: string): string {
  const d = new Date(typeof at === 'string' ? Date.parse(at) : at);
  const p: Record<string, string> = {};
  for (const part of new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(d)) {
    p[part.type] = part.value;
  }
  return `${p.weekday} ${p.day} ${p.month} ${p.year}, ${p.hour}:${p.minute} (${timeZone})`;
}

/** A local date YYYY-MM-DD as "Mon 23 Nov 2026". */
export function formatDate(date: string): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const p: Record<string, string> = {};
  for (const part of new Intl.DateTimeFormat('en-GB', {
    timeZone: 'UTC',
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
  }).formatToParts(new Date(Date.UTC(y, m - 1, d)))) {
    p[part.type] = part.value;
  }
  return `${p.weekday} ${p.day} ${p.month} ${p.year}`;
}

/** Only the time of day in a zone: "09:30". */
export function formatClock(at: number | Date | string, timeZone: string): string {
  const d = new Date(typeof at === 'string' ? Date.parse(at) : at);
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(d);
}
