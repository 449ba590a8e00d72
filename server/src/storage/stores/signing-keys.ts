import type { BotSigningKeyRow } from '../schema.js';
import type { Executor } from './executor.js';

/** Each bot's optional ed25519 webhook signing key (migration 0013): private part encrypted. */
export class SigningKeyStore {
  constructor(private readonly db: Executor) {}

  /** Sets the bot's key, replacing any previous one. */
  async put(row: BotSigningKeyRow): Promise<void> {
    await this.db
      .insertInto('bot_signing_keys')
      .values(row)
      .onConflict((oc) =>
        oc.column('bot_id').doUpdateSet({
          private_key_encrypted: row.private_key_encrypted,
          public_key: row.public_key,
          created_at: row.created_at,
        }),
      )
      .execute();
  }

  get(botId: string): Promise<BotSigningKeyRow | undefined> {
    return this.db.selectFrom('bot_signing_keys').selectAll().where('bot_id', '=', botId).executeTakeFirst();
  }

  /** Removes it; false when there was none. */
  async delete(botId: string): Promise<boolean> {
    const r = await this.db.deleteFrom('bot_signing_keys').where('bot_id', '=', botId).executeTakeFirst();
    return r.numDeletedRows > 0n;
  }
}
