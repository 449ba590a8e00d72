import type { BotApiKeyRow, BotRow } from '../schema.js';
import type { Executor } from './executor.js';
import type { PgLookupBatches } from '../pg-batches.js';
import { channelOfRow, channelSelections } from './containers.js';
import { prepared } from './prepared.js';

// On every bot request: prepared once, not rebuilt.
const KEY_COLUMNS = [
  'bot_api_keys.id as key_id',
  'bot_api_keys.bot_id',
  'bot_api_keys.key_type',
  'bot_api_keys.scopes',
  'bot_api_keys.expires_at',
  'bot_api_keys.revoked_at',
  'bot_api_keys.grants',
  'bot_api_keys.paused_at',
  'bot_api_keys.paused_reason',
  'bots.org_id',
  'bots.type as bot_type',
  'bots.status as bot_status',
  'bots.deleted_at as bot_deleted_at',
] as const;
const keyQuery = (db: Executor, keyHash: string) =>
  db
    .selectFrom('bot_api_keys')
    .innerJoin('bots', 'bots.id', 'bot_api_keys.bot_id')
    .select(KEY_COLUMNS)
    .where('bot_api_keys.key_hash', '=', keyHash);
const findKeyByHash = prepared(keyQuery);
/** findKeyByHash with a channel and the key's bot's membership of it, in the same statement. */
const findKeyByHashWithChannel = prepared((db, keyHash: string, channelId: string) =>
  keyQuery(db, keyHash)
    .leftJoin('channels', (j) => j.on('channels.id', '=', channelId))
    .select(channelSelections('bot', 'bots.id')),
);

/** Bots, their API keys and their webhook signing secret. */
export class BotStore {
  constructor(
    private readonly db: Executor,
    private readonly lookups?: PgLookupBatches,
  ) {}

  async insert(row: BotRow): Promise<void> {
    await this.db.insertInto('bots').values(row).execute();
  }

  /** A bot that is not deleted. */
  get(id: string): Promise<BotRow | undefined> {
    return this.db
      .selectFrom('bots')
      .selectAll()
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  }

  /**
   * Bots visible in an organization: its own, plus platform bots registered through the API (published
   * to every organization). Built-in bots have one row per organization, so only its own rows count.
   */
  listVisible(orgId: string): Promise<BotRow[]> {
    return this.db
      .selectFrom('bots')
      .selectAll()
      .where('deleted_at', 'is', null)
      .where((eb) =>
        eb.or([eb('org_id', '=', orgId), eb.and([eb('type', '=', 'platform'), eb('builtin', 'is', null)])]),
      )
      .orderBy('name')
      .execute();
  }

  // --- built-in bots (one row per organization and built-in key) ---

  /** The organization's row of a built-in bot, deleted or not. */
  getBuiltin(orgId: string, builtin: string): Promise<BotRow | undefined> {
    return this.db
      .selectFrom('bots')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('builtin', '=', builtin)
      .executeTakeFirst();
  }

  /** Inserts a built-in bot's row unless the organization has one (instances starting at once). */
  async insertBuiltin(row: BotRow): Promise<boolean> {
    const res = await this.db
      .insertInto('bots')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** How many organizations have each built-in bot active and disabled. */
  async builtinStatusCounts(): Promise<{ builtin: string; status: string; n: number }[]> {
    const rows = await this.db
      .selectFrom('bots')
      .select(['builtin', 'status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('builtin', 'is not', null)
      .where('deleted_at', 'is', null)
      .groupBy(['builtin', 'status'])
      .execute();
    return rows.map((r) => ({ builtin: r.builtin!, status: r.status, n: Number(r.n) }));
  }

  /** Sets the status of a built-in bot in every organization; how many rows changed. */
  async setBuiltinStatus(builtin: string, status: BotRow['status'], now: string): Promise<number> {
    const res = await this.db
      .updateTable('bots')
      .set({ status, updated_at: now })
      .where('builtin', '=', builtin)
      .where('deleted_at', 'is', null)
      .where('status', '!=', status)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  listAll(): Promise<BotRow[]> {
    return this.db.selectFrom('bots').selectAll().where('deleted_at', 'is', null).orderBy('name').execute();
  }

  async update(
    id: string,
    patch: Partial<Pick<BotRow, 'name' | 'description' | 'webhook_url' | 'events' | 'status'>>,
    now: string,
  ): Promise<void> {
    await this.db
      .updateTable('bots')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async softDelete(id: string, now: string): Promise<void> {
    await this.db
      .updateTable('bots')
      .set({ deleted_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
    await this.db
      .updateTable('bot_api_keys')
      .set({ revoked_at: now })
      .where('bot_id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
  }

  // --- API keys ---

  async insertKey(row: BotApiKeyRow): Promise<void> {
    await this.db.insertInto('bot_api_keys').values(row).execute();
  }

  getKey(botId: string, keyId: string): Promise<BotApiKeyRow | undefined> {
    return this.db
      .selectFrom('bot_api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('bot_id', '=', botId)
      .executeTakeFirst();
  }

  listKeys(botId: string): Promise<BotApiKeyRow[]> {
    return this.db
      .selectFrom('bot_api_keys')
      .selectAll()
      .where('bot_id', '=', botId)
      .orderBy('created_at', 'desc')
      .execute();
  }

  async revokeKey(keyId: string, now: string): Promise<boolean> {
    const res = await this.db
      .updateTable('bot_api_keys')
      .set({ revoked_at: now })
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Replaces the key's grants (JSON, or null for none). */
  async setKeyGrants(keyId: string, grants: string | null): Promise<void> {
    await this.db.updateTable('bot_api_keys').set({ grants }).where('id', '=', keyId).execute();
  }

  /**
   * Pauses the key (guard rails, operations/guardrails.ts) unless it is paused already: whether this
   * call paused it (so that the owner is told once).
   */
  async pauseKey(keyId: string, at: string, reason: string): Promise<boolean> {
    const res = await this.db
      .updateTable('bot_api_keys')
      .set({ paused_at: at, paused_reason: reason })
      .where('id', '=', keyId)
      .where('paused_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Resumes a paused key: whether it was paused. */
  async resumeKey(keyId: string): Promise<boolean> {
    const res = await this.db
      .updateTable('bot_api_keys')
      .set({ paused_at: null, paused_reason: null })
      .where('id', '=', keyId)
      .where('paused_at', 'is not', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** The key and its bot, whatever their state; the caller decides what revoked or expired means. */
  async findKeyByHash(keyHash: string) {
    return (await findKeyByHash(this.db, keyHash)).rows[0];
  }

  /**
   * findKeyByHash and the channel `channelId` with whether the key's bot is a member, read in one
   * statement (one snapshot, one round trip): the request path of a channel's messages. `key` is
   * findKeyByHash's row; `channel` is undefined when no such channel exists.
   */
  async findKeyByHashWithChannel(keyHash: string, channelId: string) {
    const row = (await findKeyByHashWithChannel.lookup(this.db, this.lookups, keyHash, channelId))[0];
    // The row as read (its `ch_*` columns too: not copied on every request) and the channel from it.
    return row && { key: row, channel: channelOfRow(row) };
  }

  /** Adds buffered usage: `uses` more calls, the last at `lastUsedAt`. */
  async recordKeyUsage(keyId: string, uses: number, lastUsedAt: string): Promise<void> {
    await this.db
      .updateTable('bot_api_keys')
      .set((eb) => ({ use_count: eb('use_count', '+', uses), last_used_at: lastUsedAt }))
      .where('id', '=', keyId)
      .execute();
  }

  // --- webhook secret ---

  async putWebhookSecret(botId: string, secretEncrypted: string, now: string): Promise<void> {
    await this.db
      .insertInto('bot_webhook_secrets')
      .values({ bot_id: botId, secret_encrypted: secretEncrypted, created_at: now })
      .onConflict((oc) =>
        oc.column('bot_id').doUpdateSet({ secret_encrypted: secretEncrypted, created_at: now }),
      )
      .execute();
  }

  getWebhookSecret(botId: string): Promise<{ secret_encrypted: string; created_at: string } | undefined> {
    return this.db
      .selectFrom('bot_webhook_secrets')
      .select(['secret_encrypted', 'created_at'])
      .where('bot_id', '=', botId)
      .executeTakeFirst();
  }
}
