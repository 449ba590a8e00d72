/**
 * The task notifications bot's state (docs/BUILTIN-BOTS.md "Task notifications bot"), as its own data
 * documents in the organization:
 *
 *   tn/c/<channel>               the channel's subscriptions (ChannelSubs)
 *   tn/p/<project>               where the events of a project go (ProjectIndex), for the event handler
 *   tn/f/<channel>/<sub>/<date>  a daily digest, frozen once computed (so a re-run posts the same)
 */

export const TASK_EVENTS = ['created', 'assigned', 'status', 'due_soon', 'overdue'] as const;
export type TaskEventKind = (typeof TASK_EVENTS)[number];

export const TN_LIMITS = {
  subsPerChannel: 20,
  targetsPerProject: 100,
  soonDaysMax: 14,
  /** Tasks listed per section of a digest. */
  digestTasks: 50,
  /** Topics of a project looked at by a daily check. */
  topicsPerCheck: 100,
} as const;

export const DEFAULT_CHECK_TIME = '09:00';

export interface Sub {
  /** Short id, unique in the channel (the random end of the command's invocation id). */
  id: string;
  kind: 'project' | 'topic';
  project_id: string;
  project_name: string;
  topic_id: string | null;
  topic_name: string | null;
  events: TaskEventKind[];
  /** The daily check for due_soon / overdue: local time, zone, and how many days ahead is "soon". */
  at: string;
  tz: string;
  soon_days: number;
  added_by: string;
  added_at: string;
  /** The next daily check scheduled (null: none needed, or not yet armed). */
  next: { date: string; at: string; job_id: string } | null;
}

export interface ChannelSubs {
  subs: Sub[];
}

export interface Target {
  channel_id: string;
  sub_id: string;
  topic_id: string | null;
  events: TaskEventKind[];
}

export interface ProjectIndex {
  targets: Target[];
}

export const keys = {
  channel: (ch: string) => `tn/c/${ch}`,
  project: (p: string) => `tn/p/${p}`,
  digest: (ch: string, sub: string, date: string) => `tn/f/${ch}/${sub}/${date}`,
  digests: (ch: string, sub: string) => `tn/f/${ch}/${sub}/`,
};

export const jobs = {
  check: 'tasknotify.check',
  checkKey: (ch: string, sub: string, date: string) => `tn:${ch}:${sub}:${date}`,
};

/** Whether a subscription needs the daily check. */
export const needsCheck = (s: Pick<Sub, 'events'>) =>
  s.events.includes('due_soon') || s.events.includes('overdue');
