import { AppError } from '../../domain/errors.js';
import { parseLocalTime } from '../../domain/schedule-time.js';
import { option, subcommand, tokenize } from '../platform-kit/args.js';
import { addDays, isIsoDate, parseDays, parseDuration, parseTimeZone } from '../platform-kit/time.js';
import { DEFAULT_QUESTIONS, STANDUP_LIMITS } from './model.js';

/**
 * `/standup` commands, parsed into what they ask for (pure; errors are `invalid_input` with a message
 * that says what to write instead):
 *
 *   /standup setup <HH:MM> <days> <time zone> ["question" …] [window:<duration> | summary:<HH:MM>] [remind:<duration>|off]
 *   /standup show
 *   /standup skip <YYYY-MM-DD|today|tomorrow>      /standup unskip <date>
 *   /standup pause                                  /standup resume
 *   /standup remove
 */

export const STANDUP_USAGE = [
  '**/standup** — a daily stand-up for this channel:',
  '- `/standup setup 09:30 mon-fri Europe/Berlin "What did you do yesterday?" "What will you do today?" "Blockers?"` — options: `window:1h` (or `summary:10:30`) until the summary, `remind:15m` (or `remind:off`) before it',
  '- `/standup show` — the set-up and the next stand-up',
  '- `/standup skip 2026-12-24` (or `today`, `tomorrow`) · `/standup unskip <date>`',
  '- `/standup pause` · `/standup resume` · `/standup remove`',
  'At the time, every member of the channel gets the questions by DM; their replies there are the answers, in order. One summary is posted here, naming who has not answered.',
].join('\n');

export interface SetupArgs {
  time: string;
  days: number[];
  tz: string;
  questions: string[];
  /** Either a window length or a summary time (HH:MM, same day, after the start). */
  window_ms: number | null;
  summary_time: string | null;
  remind_ms: number;
}

export type StandupCommand =
  | { kind: 'help' }
  | { kind: 'setup'; setup: SetupArgs }
  | { kind: 'show' }
  | { kind: 'skip'; date: DateArg }
  | { kind: 'unskip'; date: DateArg }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'remove' };

/** A date as the user wrote it: a calendar date, or today/tomorrow (resolved in the channel's zone). */
export type DateArg = { date: string } | { relative: 0 | 1 };

const fail = (message: string) => new AppError('invalid_input', message);

export function parseStandup(args: string): StandupCommand {
  const [sub, rest] = subcommand(args);
  switch (sub) {
    case '':
    case 'help':
      return { kind: 'help' };
    case 'setup':
    case 'set':
      return { kind: 'setup', setup: parseSetup(rest) };
    case 'show':
    case 'status':
      noMore(sub, rest);
      return { kind: 'show' };
    case 'skip':
      return { kind: 'skip', date: parseDateArg(rest, 'skip') };
    case 'unskip':
      return { kind: 'unskip', date: parseDateArg(rest, 'unskip') };
    case 'pause':
      noMore(sub, rest);
      return { kind: 'pause' };
    case 'resume':
      noMore(sub, rest);
      return { kind: 'resume' };
    case 'remove':
    case 'delete':
      noMore(sub, rest);
      return { kind: 'remove' };
    default:
      throw fail(`Unknown subcommand "${sub.slice(0, 40)}" — try /standup help`);
  }
}

function noMore(sub: string, rest: string): void {
  if (rest !== '') throw fail(`/standup ${sub} takes nothing after it`);
}

export function parseDateArg(text: string, sub: string): DateArg {
  const t = text.trim().toLowerCase();
  if (t === 'today') return { relative: 0 };
  if (t === 'tomorrow') return { relative: 1 };
  if (!isIsoDate(t)) throw fail(`/standup ${sub} takes a date: YYYY-MM-DD, today or tomorrow`);
  return { date: t };
}

/** Resolves a date argument against today's date in the stand-up's zone. */
export function resolveDate(d: DateArg, today: string): string {
  return 'date' in d ? d.date : addDays(today, d.relative);
}

export function parseSetup(text: string): SetupArgs {
  const tokens = tokenize(text);
  const words: string[] = [];
  const questions: string[] = [];
  let window_ms: number | null = null;
  let summary_time: string | null = null;
  let remind_ms: number | null = null;
  for (const t of tokens) {
    if (t.quoted) {
      questions.push(t.text);
      continue;
    }
    const opt = option(t);
    // HH:MM and an IANA zone contain no option name we know; "09:30" has a digit first anyway.
    if (opt && ['window', 'summary', 'remind', 'reminder'].includes(opt[0])) {
      const [name, value] = opt;
      if (name === 'window') {
        const ms = parseDuration(value);
        if (ms === null) throw fail(`window: "${value}" is not a duration such as 45m or 2h`);
        window_ms = ms;
      } else if (name === 'summary') {
        if (!parseLocalTime(value))
          throw fail(`summary: "${value}" is not a time HH:MM (24-hour), e.g. summary:10:30`);
        summary_time = value;
      } else {
        const off = ['off', 'none', 'no', '0'].includes(value.toLowerCase());
        const ms = off ? 0 : parseDuration(value);
        if (ms === null) throw fail(`remind: "${value}" is not a duration such as 15m, or off`);
        remind_ms = ms;
      }
      continue;
    }
    words.push(t.text);
  }
  if (words.length < 3) {
    throw fail(
      'Set a stand-up up with a time, days and a time zone, then the questions in quotes: /standup setup 09:30 mon-fri Europe/Berlin "What did you do yesterday?" "What will you do today?" "Blockers?"',
    );
  }
  if (words.length > 3) {
    throw fail(`Put each question in quotes ("…"); not understood: ${words.slice(3).join(' ').slice(0, 80)}`);
  }
  const [timeText, daysText, tzText] = words as [string, string, string];
  const time = /^\d:\d\d$/.test(timeText) ? `0${timeText}` : timeText;
  if (!parseLocalTime(time)) throw fail(`time: "${timeText}" is not a time HH:MM (24-hour), e.g. 09:30`);
  const days = parseDays(daysText);
  const tz = parseTimeZone(tzText);
  if (questions.length > STANDUP_LIMITS.questions) {
    throw fail(`A stand-up has at most ${STANDUP_LIMITS.questions} questions (${questions.length} given)`);
  }
  for (const [i, q] of questions.entries()) {
    if (q === '') throw fail(`Question ${i + 1} is empty`);
    if (q.length > STANDUP_LIMITS.questionChars) {
      throw fail(`Question ${i + 1} is longer than ${STANDUP_LIMITS.questionChars} characters`);
    }
  }
  if (window_ms !== null && summary_time !== null) throw fail('Give either window: or summary:, not both');
  if (summary_time !== null) {
    const [sh, sm] = parseLocalTime(summary_time)!;
    const [th, tm] = parseLocalTime(time)!;
    if (sh * 60 + sm <= th * 60 + tm) {
      throw fail(`summary: ${summary_time} must be later the same day than the stand-up time ${time}`);
    }
    window_ms = ((sh - th) * 60 + (sm - tm)) * 60_000;
  }
  const window = window_ms ?? STANDUP_LIMITS.windowDefaultMs;
  if (window < STANDUP_LIMITS.windowMinMs || window > STANDUP_LIMITS.windowMaxMs) {
    throw fail('The time from the questions to the summary (window:) must be between 1m and 12h');
  }
  const remind = remind_ms ?? Math.min(STANDUP_LIMITS.remindDefaultMs, Math.floor(window / 2));
  if (remind >= window) {
    throw fail(
      'remind: the reminder must come after the questions, so less than the window before the summary',
    );
  }
  return {
    time,
    days,
    tz,
    questions: questions.length > 0 ? questions : [...DEFAULT_QUESTIONS],
    window_ms: window,
    summary_time,
    remind_ms: remind,
  };
}
