import type { Executor } from './executor.js';
import { prepared } from './prepared.js';

// On the send path of a key with grants: prepared once, not rebuilt.
const targetsSince = prepared((db, keyId: string, textHash: string, since: string) =>
  db
    .selectFrom('key_recent_texts')
    .select('target_id')
    .where('key_id', '=', keyId)
    .where('text_hash', '=', textHash)
    .where('at', '>', since),
);
const touch = prepared((db, keyId: string, textHash: string, targetId: string, at: string) =>
  db
    .insertInto('key_recent_texts')
    .values({ key_id: keyId, text_hash: textHash, target_id: targetId, at })
    .onConflict((oc) => oc.columns(['key_id', 'text_hash', 'target_id']).doUpdateSet({ at })),
);

/**
 * The burst rule's window (operations/guardrails.ts): for each key, the hash of each normalized text
 * it sent and the targets it went to, with the last time. Rows older than the longest window (a day)
 * are pruned by the leader every 10 minutes (app.ts).
 */
export class KeyRecentTextStore {
  constructor(private readonly db: Executor) {}

  /** Targets the key sent this text to after `since`. */
  async targetsSince(keyId: string, textHash: string, since: string): Promise<string[]> {
    return (await targetsSince(this.db, keyId, textHash, since)).rows.map((r) => r.target_id);
  }

  /** Records that the key sent this text to the target at `at`. */
  async touch(keyId: string, textHash: string, targetId: string, at: string): Promise<void> {
    await touch(this.db, keyId, textHash, targetId, at);
  }

  /** Forgets the rows last touched before `before` (by the index on `at`): how many. */
  async prune(before: string): Promise<number> {
    const r = await this.db.deleteFrom('key_recent_texts').where('at', '<', before).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
