import { AppError } from '../../domain/errors.js';
import { localToInstant, parseLocalTime } from '../../domain/schedule-time.js';
import { option, subcommand, tokenize } from '../platform-kit/args.js';
import {
  addDays,
  formatDuration,
  isIsoDate,
  parseDuration,
  parseTimeZone,
  parseWeekday,
  todayIn,
  weekdayOf,
} from '../platform-kit/time.js';
import { COLLECT_LIMITS, DEFAULT_DUE_TIME, type Share } from './model.js';

/**
 * `/collect` commands (pure; errors are `invalid_input` saying what to write instead):
 *
 *   /collect "Send your weekly report" due:friday [remind:<duration>|off] [share:channel] [tz:<zone>]
 *   /collect list · /collect cancel <ref> · /collect close <ref>
 *
 * due: a weekday (the next one, today if it is still before the time), `today`, `tomorrow`, a date
 * YYYY-MM-DD — each at 17:00 unless `@HH:MM` follows (due:fri@12:00) —, a time HH:MM today, or a
 * duration from now (due:2h, due:3d). Local times are in `tz:` (default UTC).
 */

export const COLLECT_USAGE = [
  '**/collect** — ask every member of this channel for something by DM and gather the replies:',
  '- `/collect "Send your weekly report" due:friday` — due: a weekday, `today`, `tomorrow` or `YYYY-MM-DD` (17:00, or add `@HH:MM`: `due:fri@12:00`), `HH:MM` today, or a duration (`due:2h`)',
  '- options: `tz:Europe/Berlin` (default UTC), `remind:2h` before the deadline (or `remind:off`), `share:channel` to post the result here too (it always goes to you by DM)',
  '- `/collect list` · `/collect close <ref>` (deliver now) · `/collect cancel <ref>`',
  'Members reply to the bot’s DM: text, and links to files they uploaded in this channel (`/api/files/<id>`).',
].join('\n');

export interface CreateArgs {
  prompt: string;
  due_at: string;
  remind_at: string | null;
  tz: string;
  share: Share;
}

export type CollectCommand =
  | { kind: 'help' }
  | { kind: 'create'; create: CreateArgs }
  | { kind: 'list' }
  | { kind: 'cancel'; ref: string }
  | { kind: 'close'; ref: string };

const fail = (message: string) => new AppError('invalid_input', message);

export function parseCollect(args: string, now: number): CollectCommand {
  const [sub, rest] = subcommand(args);
  if (sub === '' || sub === 'help') return { kind: 'help' };
  if (sub === 'list' || sub === 'ls') {
    if (rest !== '') throw fail('/collect list takes nothing after it');
    return { kind: 'list' };
  }
  if (sub === 'cancel' || sub === 'close') return { kind: sub, ref: parseRef(rest, sub) };
  return { kind: 'create', create: parseCreate(args, now) };
}

function parseRef(text: string, sub: string): string {
  const r = text.trim().toLowerCase();
  if (!/^[0-9a-f-]{4,36}$/.test(r))
    throw fail(`/collect ${sub} takes the reference /collect list shows, e.g. 1a2b3c4d`);
  return r;
}

export function parseCreate(text: string, now: number): CreateArgs {
  const words: string[] = [];
  let due: string | null = null;
  let remind: number | null = null;
  let tz = 'UTC';
  let share: Share = 'dm';
  for (const t of tokenize(text)) {
    const opt = option(t);
    if (!opt || !['due', 'remind', 'reminder', 'share', 'tz', 'zone'].includes(opt[0])) {
      words.push(t.text);
      continue;
    }
    const [name, value] = opt;
    if (name === 'due') due = value;
    else if (name === 'tz' || name === 'zone') tz = parseTimeZone(value);
    else if (name === 'share') {
      const v = value.toLowerCase();
      if (v !== 'channel' && v !== 'dm')
        throw fail('share: is channel (post the result here too) or dm (only to you)');
      share = v;
    } else {
      const off = ['off', 'none', 'no', '0'].includes(value.toLowerCase());
      const ms = off ? 0 : parseDuration(value);
      if (ms === null) throw fail(`remind: "${value}" is not a duration such as 2h, or off`);
      remind = ms;
    }
  }
  const prompt = words.join(' ').trim();
  if (prompt === '') throw fail('Say what to send: /collect "Send your weekly report" due:friday');
  if (prompt.length > COLLECT_LIMITS.promptChars) {
    throw fail(`The request is longer than ${COLLECT_LIMITS.promptChars} characters`);
  }
  if (due === null) throw fail('Give a deadline: due:friday, due:2026-12-01, due:17:00 or due:2h');
  const dueAt = parseDue(due, tz, now);
  const span = dueAt - now;
  if (span < COLLECT_LIMITS.minDurationMs) throw fail('The deadline must be at least a minute ahead');
  if (span > COLLECT_LIMITS.maxDurationMs) throw fail('The deadline may be at most 30 days ahead');
  const before = remind ?? defaultRemind(span);
  if (before >= span) {
    throw fail(`remind: ${formatDuration(before)} before the deadline would be before the request itself`);
  }
  return {
    prompt,
    due_at: new Date(dueAt).toISOString(),
    remind_at: before > 0 ? new Date(dueAt - before).toISOString() : null,
    tz,
    share,
  };
}

/** Reminder before the deadline: a day for collections of two days or more, an hour from two hours, else half-way. */
export function defaultRemind(spanMs: number): number {
  if (spanMs >= 2 * 86_400_000) return 86_400_000;
  if (spanMs >= 2 * 3_600_000) return 3_600_000;
  return Math.floor(spanMs / 2);
}

/** The instant a `due:` value names (see the top), in ms. */
export function parseDue(value: string, tz: string, now: number): number {
  const v = value.trim().toLowerCase();
  const rel = parseDuration(v);
  if (rel !== null) return now + rel;
  const [dayPart, timePart] = v.split('@') as [string, string | undefined];
  const at = (date: string, time: string) => {
    const [hour, minute] = parseLocalTime(time)!;
    const [year, month, day] = date.split('-').map(Number) as [number, number, number];
    return localToInstant(tz, { year, month, day, hour, minute });
  };
  const today = todayIn(tz, now);
  if (timePart === undefined && parseLocalTime(normalTime(v))) {
    const t = at(today, normalTime(v));
    if (t <= now)
      throw fail(`due:${value} has passed today; give a day too, e.g. due:tomorrow@${normalTime(v)}`);
    return t;
  }
  let time = DEFAULT_DUE_TIME;
  if (timePart !== undefined) {
    time = normalTime(timePart);
    if (!parseLocalTime(time)) throw fail(`due: "${timePart}" is not a time HH:MM (24-hour)`);
  }
  if (dayPart === 'today') return at(today, time);
  if (dayPart === 'tomorrow') return at(addDays(today, 1), time);
  if (isIsoDate(dayPart)) return at(dayPart, time);
  const wd = parseWeekday(dayPart);
  if (wd) {
    for (let k = 0; k <= 7; k++) {
      const date = addDays(today, k);
      if (weekdayOf(date) !== wd) continue;
      const t = at(date, time);
      if (t > now) return t;
    }
  }
  throw fail(
    `due: "${value}" is not a deadline: use a weekday (due:friday), today, tomorrow, a date (due:2026-12-01), a time (due:17:00) or a duration (due:2h)`,
  );
}

const normalTime = (t: string) => (/^\d:\d\d$/.test(t) ? `0${t}` : t);
