import type { ReactionRow } from '../schema.js';
import type { Executor } from './executor.js';
import { prepared } from './prepared.js';

/** One emoji on one message: how many reacted and who (a user or bot reference each). */
export interface ReactionSummary {
  emoji: string;
  count: number;
  reactors: { type: 'user' | 'bot'; id: string }[];
}

/** Reactors listed per emoji; the count stays exact beyond it. */
const MAX_REACTORS = 50;

/**
 * The reactions of `n` messages, a statement per list length up to a page of messages (every read of
 * messages asks: built and compiled with Kysely each time it cost ~59 µs of a read_messages call, 2 µs
 * prepared; bench/notes/mcp-profile.md). Longer lists are built each time.
 */
const PREPARED_UP_TO = 200;
const summarizeRows = (db: Executor, ids: string[]) =>
  db
    .selectFrom('message_reactions')
    .select(['message_id', 'emoji', 'reactor_type', 'reactor_id', 'created_at'])
    .where('message_id', 'in', ids)
    .orderBy('message_id')
    .orderBy('created_at')
    .orderBy('reactor_id');
const summarizeStatements = new Map<number, ReturnType<typeof summarizeStatement>>();
const summarizeStatement = () => prepared((db, ...ids: string[]) => summarizeRows(db, ids));
function summarizeQuery(n: number) {
  let q = summarizeStatements.get(n);
  if (!q) summarizeStatements.set(n, (q = summarizeStatement()));
  return q;
}

/**
 * Emoji reactions (migration 0011): one row per (message, emoji, reactor). Adding twice or removing
 * what is not there changes nothing and says so (the boolean), so the operation emits an event only
 * for a real change.
 */
export class ReactionStore {
  constructor(private readonly db: Executor) {}

  async add(row: ReactionRow): Promise<boolean> {
    const res = await this.db
      .insertInto('message_reactions')
      .values(row)
      .onConflict((oc) => oc.columns(['message_id', 'emoji', 'reactor_type', 'reactor_id']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async remove(
    messageId: string,
    emoji: string,
    reactor: { type: 'user' | 'bot'; id: string },
  ): Promise<boolean> {
    const res = await this.db
      .deleteFrom('message_reactions')
      .where('message_id', '=', messageId)
      .where('emoji', '=', emoji)
      .where('reactor_type', '=', reactor.type)
      .where('reactor_id', '=', reactor.id)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** The reactions of these messages, by message id, each emoji in the order it was first used. */
  async summarize(messageIds: readonly string[]): Promise<Map<string, ReactionSummary[]>> {
    const out = new Map<string, ReactionSummary[]>();
    if (messageIds.length === 0) return out;
    const rows =
      messageIds.length <= PREPARED_UP_TO
        ? (await summarizeQuery(messageIds.length)(this.db, ...messageIds)).rows
        : await summarizeRows(this.db, [...messageIds]).execute();
    for (const r of rows) {
      const list = out.get(r.message_id) ?? [];
      if (!out.has(r.message_id)) out.set(r.message_id, list);
      let s = list.find((x) => x.emoji === r.emoji);
      if (!s) list.push((s = { emoji: r.emoji, count: 0, reactors: [] }));
      s.count++;
      if (s.reactors.length < MAX_REACTORS) s.reactors.push({ type: r.reactor_type, id: r.reactor_id });
    }
    return out;
  }
}
