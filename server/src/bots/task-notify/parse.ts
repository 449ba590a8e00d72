import { AppError } from '../../domain/errors.js';
import { parseLocalTime } from '../../domain/schedule-time.js';
import { option, subcommand, tokenize } from '../platform-kit/args.js';
import { parseTimeZone } from '../platform-kit/time.js';
import { DEFAULT_CHECK_TIME, TASK_EVENTS, TN_LIMITS, type TaskEventKind } from './model.js';

/**
 * `/tasknotify` commands, run in the channel that receives the notifications (pure; errors are
 * `invalid_input` saying what to write instead):
 *
 *   /tasknotify add <project>[/<topic>] [created] [assigned] [status] [due_soon] [overdue] [all]
 *                   [at:HH:MM] [tz:<zone>] [soon:<days>]
 *   /tasknotify list
 *   /tasknotify remove <number from the list | project[/topic]>
 *
 * A name with spaces is quoted: "Website relaunch/Design". No events named: all of them.
 */

export const TN_USAGE = [
  '**/tasknotify** — post the task events of a project or topic in this channel:',
  '- `/tasknotify add <project>[/<topic>] [created] [assigned] [status] [due_soon] [overdue]` — all events when none is named; quote names with spaces: `"Website relaunch/Design"`',
  '- the daily check for `due_soon` and `overdue`: `at:09:00` (default), `tz:Europe/Berlin` (default UTC), `soon:2` days ahead (default 1: due today or tomorrow)',
  '- `/tasknotify list` · `/tasknotify remove <number or project[/topic]>`',
].join('\n');

export interface AddArgs {
  project: string;
  topic: string | null;
  events: TaskEventKind[];
  at: string;
  tz: string;
  soon_days: number;
}

export type TnCommand =
  | { kind: 'help' }
  | { kind: 'add'; add: AddArgs }
  | { kind: 'list' }
  | { kind: 'remove'; target: { index: number } | { project: string; topic: string | null } };

const fail = (message: string) => new AppError('invalid_input', message);

const EVENT_ALIASES: Record<string, TaskEventKind> = {
  created: 'created',
  create: 'created',
  new: 'created',
  assigned: 'assigned',
  assign: 'assigned',
  status: 'status',
  status_changed: 'status',
  'status-changed': 'status',
  due_soon: 'due_soon',
  'due-soon': 'due_soon',
  soon: 'due_soon',
  overdue: 'overdue',
};

export function parseEvent(word: string): TaskEventKind[] | null {
  const w = word.toLowerCase().replace(/,$/, '');
  if (w === 'all') return [...TASK_EVENTS];
  const e = EVENT_ALIASES[w];
  return e ? [e] : null;
}

/** "Project/Topic" → names (a "/" inside a quoted project name is not possible: use the ids then). */
export function parseSource(text: string): { project: string; topic: string | null } {
  const i = text.indexOf('/');
  const project = (i < 0 ? text : text.slice(0, i)).trim();
  const topic = i < 0 ? null : text.slice(i + 1).trim();
  if (project === '') throw fail('Name the project: /tasknotify add <project>[/<topic>]');
  if (topic === '') throw fail('Name the topic after the "/", or leave the "/" out for the whole project');
  return { project, topic };
}

export function parseTaskNotify(args: string): TnCommand {
  const [sub, rest] = subcommand(args);
  if (sub === '' || sub === 'help') return { kind: 'help' };
  if (sub === 'list' || sub === 'ls') {
    if (rest !== '') throw fail('/tasknotify list takes nothing after it');
    return { kind: 'list' };
  }
  if (sub === 'remove' || sub === 'rm' || sub === 'delete') {
    const tokens = tokenize(rest);
    if (tokens.length !== 1)
      throw fail(
        '/tasknotify remove takes one thing: the number /tasknotify list shows, or the project[/topic]',
      );
    const t = tokens[0]!.text;
    if (!tokens[0]!.quoted && /^\d{1,3}$/.test(t)) return { kind: 'remove', target: { index: Number(t) } };
    return { kind: 'remove', target: parseSource(t) };
  }
  if (sub !== 'add') throw fail(`Unknown subcommand "${sub.slice(0, 40)}" — try /tasknotify help`);
  const tokens = tokenize(rest);
  let source: { project: string; topic: string | null } | null = null;
  const events = new Set<TaskEventKind>();
  let at = DEFAULT_CHECK_TIME;
  let tz = 'UTC';
  let soon = 1;
  for (const t of tokens) {
    const opt = option(t);
    if (opt && ['at', 'tz', 'zone', 'soon'].includes(opt[0])) {
      const [name, value] = opt;
      if (name === 'at') {
        const v = /^\d:\d\d$/.test(value) ? `0${value}` : value;
        if (!parseLocalTime(v)) throw fail(`at: "${value}" is not a time HH:MM (24-hour)`);
        at = v;
      } else if (name === 'soon') {
        if (!/^\d{1,2}$/.test(value) || Number(value) < 0 || Number(value) > TN_LIMITS.soonDaysMax) {
          throw fail(`soon: is a number of days from 0 (due today) to ${TN_LIMITS.soonDaysMax}`);
        }
        soon = Number(value);
      } else tz = parseTimeZone(value);
      continue;
    }
    if (source === null) {
      source = parseSource(t.text);
      continue;
    }
    const e = t.quoted ? null : parseEvent(t.text);
    if (!e) {
      throw fail(
        `"${t.text.slice(0, 40)}" is not an event: created, assigned, status, due_soon, overdue or all (quote a project name with spaces)`,
      );
    }
    for (const x of e) events.add(x);
  }
  if (source === null)
    throw fail('Name the project (or project/topic): /tasknotify add <project>[/<topic>] [events…]');
  const list = events.size === 0 ? [...TASK_EVENTS] : TASK_EVENTS.filter((e) => events.has(e));
  return { kind: 'add', add: { ...source, events: list, at, tz, soon_days: soon } };
}
