/**
 * The stand-up bot's state (docs/BUILTIN-BOTS.md "Stand-up bot"), kept as the bot's own data documents
 * in the organization (one instance of the bot per organization, so nothing here is ever shared with
 * another organization). Keys:
 *
 *   su/<channel>/config            the channel's set-up (StandupConfig)
 *   su/<channel>/r/<date>          one stand-up occurrence, by local date (StandupRun): at most one a day
 *   su/<channel>/p/<date>/<user>   one member's answers to that occurrence (Participant)
 *   su/<channel>/s/<date>          the summary text, frozen once computed (so a re-run posts the same)
 *   su-q/<user>                    the stand-ups waiting for a member's answers, oldest first (Queue):
 *                                  the member answers one stand-up at a time in their DM with the bot
 *
 * Participant and summary documents are deleted once the summary is posted; a channel keeps its last
 * RUNS_KEPT occurrence documents (for `/standup show`).
 */

export const STANDUP_LIMITS = {
  questions: 10,
  questionChars: 300,
  /** Members asked per stand-up (the first this many user members of the channel, in join order). */
  participants: 200,
  /** An answer is stored up to this many characters (the rest is cut, and the member told). */
  answerChars: 2000,
  /** …and this many UTF-8 bytes (10 answers of a member fit one 64 KB document). */
  answerBytes: 4000,
  skipDates: 30,
  windowMinMs: 60_000,
  windowMaxMs: 12 * 3_600_000,
  windowDefaultMs: 3_600_000,
  remindDefaultMs: 15 * 60_000,
  /** Stand-ups waiting in one member's queue at once. */
  queue: 50,
  /** The summary message is cut to fit this (the platform allows 50,000 characters a message). */
  summaryChars: 45_000,
  /** …and to this many UTF-8 bytes, as it is kept as bot data (64 KB a document) until posted. */
  summaryBytes: 60_000,
} as const;

export const RUNS_KEPT = 14;

export const DEFAULT_QUESTIONS = [
  'What did you do yesterday?',
  'What will you do today?',
  'Anything blocking you?',
] as const;

export interface StandupConfig {
  channel_id: string;
  /** HH:MM local time at which the questions are sent. */
  time: string;
  /** ISO weekdays, 1 = Monday. */
  days: number[];
  tz: string;
  questions: string[];
  /** From the questions to the summary. */
  window_ms: number;
  /** The reminder comes this long before the summary; 0: no reminder. */
  remind_ms: number;
  paused: boolean;
  /** Local dates (YYYY-MM-DD) on which no stand-up is held. */
  skip: string[];
  /**
   * Changes with every set-up, pause and resume: a scheduled start of an older generation finds it
   * changed and does nothing (the new one is scheduled by the change).
   */
  gen: number;
  created_by: string;
  updated_by: string;
  updated_at: string;
  /** The next start that is scheduled. */
  next: { date: string; at: string; job_id: string } | null;
  /** The last occurrence that started (date), whatever came of it. */
  last_date: string | null;
}

export interface StandupRun {
  channel_id: string;
  /** The channel's name when it started, for the DMs (frozen: the same text on every re-run). */
  channel_name: string;
  date: string;
  tz: string;
  questions: string[];
  /** The planned instant (the schedule's), and when it really started (later after downtime). */
  planned_at: string;
  started_at: string;
  remind_at: string | null;
  summary_at: string;
  participants: string[];
  /** User members beyond STANDUP_LIMITS.participants, not asked. */
  left_out: number;
  state: 'open' | 'closed' | 'posted';
  summary_message_id: string | null;
}

export interface Answer {
  text: string;
  message_id: string;
  at: string;
}

export interface Participant {
  user_id: string;
  answers: Answer[];
  /** Set by the summary: answers after it are not taken. */
  closed: boolean;
}

export interface QueueEntry {
  channel_id: string;
  date: string;
}

export interface Queue {
  runs: QueueEntry[];
}

export const keys = {
  config: (ch: string) => `su/${ch}/config`,
  run: (ch: string, date: string) => `su/${ch}/r/${date}`,
  runs: (ch: string) => `su/${ch}/r/`,
  participant: (ch: string, date: string, user: string) => `su/${ch}/p/${date}/${user}`,
  participants: (ch: string, date: string) => `su/${ch}/p/${date}/`,
  summary: (ch: string, date: string) => `su/${ch}/s/${date}`,
  queue: (user: string) => `su-q/${user}`,
  all: (ch: string) => `su/${ch}/`,
};

/** Job kinds and their dedupe keys (one job per channel, date and purpose; starts also per generation). */
export const jobs = {
  start: 'standup.start',
  remind: 'standup.remind',
  summary: 'standup.summary',
  startKey: (ch: string, date: string, gen: number) => `su:${ch}:${date}:g${gen}`,
  remindKey: (ch: string, date: string) => `su:${ch}:${date}:remind`,
  summaryKey: (ch: string, date: string) => `su:${ch}:${date}:summary`,
};
