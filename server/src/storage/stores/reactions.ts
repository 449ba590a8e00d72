import type { ReactionRow } from '../schema.js';
import type { Executor } from './executor.js';

/** One emoji on one message: how many reacted and who (a user or bot reference each). */
export interface ReactionSummary {
  emoji: string;
  count: number;
  reactors: { type: 'user' | 'bot'; id: string }[];
}

/** Reactors listed per emoji; the count stays exact beyond it. */
const MAX_REACTORS = 50;

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
    const rows = await this.db
      .selectFrom('message_reactions')
      .select(['message_id', 'emoji', 'reactor_type', 'reactor_id', 'created_at'])
      .where('message_id', 'in', [...messageIds])
      .orderBy('message_id')
      .orderBy('created_at')
      .orderBy('reactor_id')
      .execute();
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
