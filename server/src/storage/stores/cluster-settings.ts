import type { Executor } from './executor.js';

/** A secret of a bot as stored (encrypted), for re-encryption under a new key. */
export interface StoredSecret {
  bot_id: string;
  secret_encrypted: string;
}

/** Everything stored encrypted under the key: the bots' webhook secrets and ed25519 signing keys. */
export const SECRET_COLUMNS = {
  webhook_secret: { table: 'bot_webhook_secrets', column: 'secret_encrypted' },
  signing_key: { table: 'bot_signing_keys', column: 'private_key_encrypted' },
} as const;
export type SecretKind = keyof typeof SECRET_COLUMNS;

/**
 * Settings that every instance on the database shares (migration 0015), and the encrypted secrets a key
 * rotation rewrites (encryption-key.ts).
 */
export class ClusterSettingsStore {
  constructor(private readonly db: Executor) {}

  async get(name: string): Promise<string | undefined> {
    const r = await this.db
      .selectFrom('cluster_settings')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirst();
    return r?.value;
  }

  /** Sets `name` unless it is set already (the first instance wins); the value it has afterwards. */
  async setIfAbsent(name: string, value: string, now: string): Promise<string> {
    await this.db
      .insertInto('cluster_settings')
      .values({ name, value, updated_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.get(name)) ?? value;
  }

  async set(name: string, value: string, now: string): Promise<void> {
    await this.db
      .insertInto('cluster_settings')
      .values({ name, value, updated_at: now })
      .onConflict((oc) => oc.column('name').doUpdateSet({ value, updated_at: now }))
      .execute();
  }

  async delete(name: string): Promise<void> {
    await this.db.deleteFrom('cluster_settings').where('name', '=', name).execute();
  }

  /** A page of one kind of stored secret, by bot id. */
  secretsAfter(kind: SecretKind, botId: string, limit: number): Promise<StoredSecret[]> {
    const { table, column } = SECRET_COLUMNS[kind];
    return this.db
      .selectFrom(table)
      .select(['bot_id', `${column} as secret_encrypted` as 'secret_encrypted'])
      .where('bot_id', '>', botId)
      .orderBy('bot_id')
      .limit(limit)
      .execute() as Promise<StoredSecret[]>;
  }

  /** Replaces a secret's stored form if it is still `from` (a secret changed meanwhile is left alone). */
  async replaceSecret(kind: SecretKind, botId: string, from: string, to: string): Promise<boolean> {
    const { table, column } = SECRET_COLUMNS[kind];
    const r = await this.db
      .updateTable(table)
      .set({ [column]: to })
      .where('bot_id', '=', botId)
      .where(column, '=', from)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}
