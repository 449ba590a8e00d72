/**
 * The collection bot's state (docs/BUILTIN-BOTS.md "Collection bot"), as the bot's own data documents
 * in the organization:
 *
 *   co/<id>               one collection (Collection); id = the /collect invocation's id
 *   co/<id>/r/<user>      one member's reply (Reply): their DM messages, text and file references
 *   co/<id>/out           the result, frozen in chunks of one message each when it closes (Result)
 *   co-ch/<channel>       the channel's collections, newest last (ChannelIndex), for /collect list
 *   co-q/<user>           the open collections waiting for a member, oldest first (Inbox): a DM
 *                         message answers the oldest one they have not replied to yet
 *
 * Replies and the frozen result are deleted once the result is delivered; a channel keeps its last
 * KEPT_PER_CHANNEL collections (open ones always).
 */

export const COLLECT_LIMITS = {
  promptChars: 500,
  recipients: 200,
  /** Open collections per channel at once. */
  openPerChannel: 20,
  /** A member's reply (all their messages together), in characters and UTF-8 bytes. */
  replyChars: 4000,
  replyBytes: 8000,
  /** Files one reply may reference. */
  filesPerReply: 10,
  minDurationMs: 60_000,
  maxDurationMs: 30 * 86_400_000,
  /** One result message (the platform allows 50,000 characters) and its stored size. */
  resultChars: 45_000,
  resultBytes: 60_000,
  /** Open collections in one member's inbox. */
  inbox: 50,
} as const;

export const KEPT_PER_CHANNEL = 20;
/** `due:friday` and `due:2026-12-01` mean this local time. */
export const DEFAULT_DUE_TIME = '17:00';

export interface FileRef {
  id: string;
  filename: string;
  size: number;
}

export interface ReplyPart {
  message_id: string;
  text: string;
  files: FileRef[];
  at: string;
}

export interface Reply {
  user_id: string;
  parts: ReplyPart[];
  /** Set when the collection closes: later messages are not taken. */
  closed: boolean;
}

export type Share = 'dm' | 'channel';

export interface Collection {
  id: string;
  channel_id: string;
  /** Frozen at creation, for the DMs (the same text on every re-run). */
  channel_name: string;
  requester_id: string;
  requester_name: string;
  prompt: string;
  due_at: string;
  remind_at: string | null;
  tz: string;
  /** Where the result goes: always a DM to the requester; `channel` also posts it in the channel. */
  share: Share;
  recipients: string[];
  left_out: number;
  state: 'open' | 'closed' | 'delivered' | 'cancelled';
  created_at: string;
  /** Scheduled jobs (to cancel them). */
  jobs: { remind: string | null; close: string | null };
}

export interface Result {
  chunks: string[];
  replied: number;
}

export interface ChannelIndex {
  ids: string[];
}

export interface Inbox {
  ids: string[];
}

export const keys = {
  collection: (id: string) => `co/${id}`,
  reply: (id: string, user: string) => `co/${id}/r/${user}`,
  replies: (id: string) => `co/${id}/r/`,
  result: (id: string) => `co/${id}/out`,
  channel: (ch: string) => `co-ch/${ch}`,
  inbox: (user: string) => `co-q/${user}`,
};

export const jobs = {
  open: 'collect.open',
  remind: 'collect.remind',
  close: 'collect.close',
  openKey: (id: string) => `co:${id}:open`,
  remindKey: (id: string) => `co:${id}:remind`,
  closeKey: (id: string) => `co:${id}:close`,
  closeNowKey: (id: string) => `co:${id}:close-now`,
  closeLateKey: (id: string) => `co:${id}:close-late`,
};

/**
 * The reference users type: the last 8 characters of the id (ids are time-ordered UUIDs, whose first
 * characters are the same for everything created in the same moment; the last ones are random).
 */
export const refOf = (id: string) => id.slice(-8);
