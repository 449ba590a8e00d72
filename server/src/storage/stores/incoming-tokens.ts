import type { BotIncomingTokenRow } from '../schema.js';
import type { Executor } from './executor.js';

/** The incoming-webhook token of each bot (its hash only). */
export class IncomingTokenStore {
  constructor(private readonly db: Executor) {}

  /** Sets the bot's token, replacing any previous one. */
  async put(row: BotIncomingTokenRow): Promise<void> {
    await this.db
      .insertInto('bot_incoming_tokens')
      .values(row)
      .onConflict((oc) =>
        oc.column('bot_id').doUpdateSet({
          token_hash: row.token_hash,
          created_by: row.created_by,
          created_at: row.created_at,
        }),
      )
      .execute();
  }

  get(botId: string): Promise<BotIncomingTokenRow | undefined> {
    return this.db
      .selectFrom('bot_incoming_tokens')
      .selectAll()
      .where('bot_id', '=', botId)
      .executeTakeFirst();
  }

  /** Removes the bot's token; false when it had none. */
  async delete(botId: string): Promise<boolean> {
    const r = await this.db.deleteFrom('bot_incoming_tokens').where('bot_id', '=', botId).executeTakeFirst();
    return r.numDeletedRows > 0n;
  }
}
