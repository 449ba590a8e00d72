import { shortId } from '../format.js';
import { md, oneLine } from '../platform-kit/text.js';
import { addDays } from '../platform-kit/time.js';
import { TN_LIMITS, type Sub, type TaskEventKind } from './model.js';

/** The task notifications bot's texts (pure, Markdown; titles and names escaped). */

export interface TaskLike {
  id: string;
  title: string;
  status: string;
  priority: string;
  assignee_id: string | null;
  due_date: string | null;
}

export interface Place {
  project: string;
  topic: string;
  /** Link to the topic in the web app. */
  link: string;
}

/** The task's reference, as `/task list` shows it and `/task done` takes it. */
const ref = (t: TaskLike) => `\`${shortId(t.id)}\` ${md(oneLine(t.title, 120))}`;
const where = (p: Place) => `[${md(p.project)} › ${md(p.topic)}](${p.link})`;

export type TaskEventLine =
  | { kind: 'created'; task: TaskLike; assignee: string | null; by: string }
  | { kind: 'assigned'; task: TaskLike; assignee: string | null; previous: string | null; by: string }
  | { kind: 'status'; task: TaskLike; status: string; previous: string; by: string };

/** One line for a task event (names already looked up). */
export function eventLine(e: TaskEventLine, place: Place): string {
  const t = e.task;
  switch (e.kind) {
    case 'created': {
      const extra = [
        e.assignee ? `assigned to **${md(e.assignee)}**` : null,
        t.due_date ? `due ${t.due_date}` : null,
        t.priority !== 'medium' ? t.priority : null,
      ].filter(Boolean);
      return `🆕 **Task created** in ${where(place)}: ${ref(t)}${extra.length ? ` — ${extra.join(' · ')}` : ''} · by ${md(e.by)}`;
    }
    case 'assigned': {
      const to = e.assignee ? `to **${md(e.assignee)}**` : 'unassigned';
      const was = e.previous ? ` (was ${md(e.previous)})` : '';
      return `👤 **Task ${e.assignee ? 'assigned' : 'unassigned'}** in ${where(place)}: ${ref(t)} — ${to}${was} · by ${md(e.by)}`;
    }
    case 'status':
      return `${e.status === 'done' ? '✅' : '🔄'} **Status changed** in ${where(place)}: ${ref(t)} — ${e.previous.replace('_', ' ')} → **${e.status.replace('_', ' ')}** · by ${md(e.by)}`;
  }
}

/** Tasks of a daily check, by the subscription's choice: overdue (due before today), due soon. */
export function classify(
  tasks: readonly (TaskLike & { topic: string })[],
  today: string,
  soonDays: number,
  events: readonly TaskEventKind[],
): { overdue: (TaskLike & { topic: string })[]; soon: (TaskLike & { topic: string })[] } {
  const open = tasks.filter((t) => t.status !== 'done' && t.due_date !== null);
  const last = addDays(today, soonDays);
  const byDue = (a: TaskLike, b: TaskLike) =>
    a.due_date! < b.due_date! ? -1 : a.due_date! > b.due_date! ? 1 : a.id < b.id ? -1 : 1;
  return {
    overdue: events.includes('overdue') ? open.filter((t) => t.due_date! < today).sort(byDue) : [],
    soon: events.includes('due_soon')
      ? open.filter((t) => t.due_date! >= today && t.due_date! <= last).sort(byDue)
      : [],
  };
}

/** The daily digest; null when there is nothing to say. */
export function digestText(
  source: { project: string; topic: string | null; link: string },
  today: string,
  found: ReturnType<typeof classify>,
  names: ReadonlyMap<string, string>,
): string | null {
  if (found.overdue.length === 0 && found.soon.length === 0) return null;
  const line = (t: TaskLike & { topic: string }) => {
    const who = t.assignee_id ? ` · ${md(names.get(t.assignee_id) ?? 'a former member')}` : ' · unassigned';
    const topic = source.topic === null ? ` · ${md(t.topic)}` : '';
    return `- ${ref(t)} · due ${t.due_date}${who}${topic}`;
  };
  const section = (title: string, items: (TaskLike & { topic: string })[]) => {
    if (items.length === 0) return [];
    const shown = items.slice(0, TN_LIMITS.digestTasks).map(line);
    if (items.length > TN_LIMITS.digestTasks)
      shown.push(`- …and ${items.length - TN_LIMITS.digestTasks} more`);
    return [`**${title} (${items.length})**`, ...shown];
  };
  const name = source.topic === null ? md(source.project) : `${md(source.project)} › ${md(source.topic)}`;
  return [
    `📅 **Task check** · [${name}](${source.link}) · ${today}`,
    ...section('Overdue', found.overdue),
    ...section('Due soon', found.soon),
  ].join('\n');
}

export const EVENT_LABEL: Record<TaskEventKind, string> = {
  created: 'created',
  assigned: 'assigned',
  status: 'status changed',
  due_soon: 'due soon',
  overdue: 'overdue',
};

export function subLine(s: Sub, i: number): string {
  const name =
    s.topic_name === null
      ? `project **${md(s.project_name)}**`
      : `topic **${md(s.project_name)} › ${md(s.topic_name)}**`;
  const daily =
    s.events.includes('due_soon') || s.events.includes('overdue')
      ? ` · daily check ${s.at} (${s.tz})${s.events.includes('due_soon') ? `, soon = ${s.soon_days === 0 ? 'today' : `within ${s.soon_days} day${s.soon_days === 1 ? '' : 's'}`}` : ''}`
      : '';
  return `${i + 1}. ${name}: ${s.events.map((e) => EVENT_LABEL[e]).join(', ')}${daily}`;
}

export function listText(subs: readonly Sub[]): string {
  if (subs.length === 0)
    return 'This channel gets no task notifications. `/tasknotify add <project>` starts them.';
  return ['**Task notifications posted in this channel**', ...subs.map(subLine)].join('\n');
}
