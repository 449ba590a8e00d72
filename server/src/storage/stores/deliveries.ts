import { PostgresAdapter, sql, type Selectable } from 'kysely';
import type { AttemptRow, DeliveryRow, WebhookHealthRow } from '../schema.js';
import type { Executor } from './executor.js';
import { olderThan } from './notifications.js';
import { prepared } from './prepared.js';

/** Due rows a claim looks at, at most (earliest first); fewer when it has few slots to fill. */
const SCAN = 1000;

// Once per delivered attempt: prepared once, not rebuilt.
const INSERT_ATTEMPT = prepared(
  (
    db,
    id: string,
    delivery_id: string,
    attempt: number,
    started_at: string,
    duration_ms: number,
    status: number | null,
    error: string | null,
    response_snippet: string | null,
  ) =>
    db
      .insertInto('webhook_attempts')
      .values({ id, delivery_id, attempt, started_at, duration_ms, status, error, response_snippet }),
);
const MARK_DELIVERED = prepared(
  (db, id: string, attempts: number, last_attempt_at: string, last_status: number, now: string) =>
    db
      .updateTable('webhook_deliveries')
      .set({
        state: 'delivered',
        attempts,
        last_attempt_at,
        last_status,
        last_error: null,
        next_attempt_at: now,
        updated_at: now,
      })
      .where('id', '=', id),
);
const RESET_FAILURES = prepared((db, bot_id: string, now: string) =>
  db
    .updateTable('webhook_health')
    .set({ consecutive_failures: 0, updated_at: now })
    .where('bot_id', '=', bot_id)
    .where('consecutive_failures', '>', 0),
);

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

/** What the worker needs to send one delivery, loaded for a batch at once. */
export interface DeliveryTarget {
  bot_id: string;
  org_id: string;
  name: string;
  created_by: string | null;
  webhook_url: string | null;
  status: string;
  deleted_at: string | null;
  secret_encrypted: string | null;
}

export type DeliveryState = DeliveryRow['state'];

/**
 * Webhook deliveries (one row per event and bot), their attempts, each bot's webhook health, and the
 * durable cursors of outbox consumers.
 */
export class DeliveryStore {
  constructor(private readonly db: Executor) {}

  // --- outbox cursors ---

  /** The consumer's position, locked until the transaction ends on PostgreSQL (one fan-out at a time). */
  async lockCursor(name: string, now: string): Promise<number> {
    await this.db
      .insertInto('outbox_cursors')
      .values({ name, position: 0, updated_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    let q = this.db.selectFrom('outbox_cursors').select('position').where('name', '=', name);
    if (isPostgres(this.db)) q = q.forUpdate();
    return Number((await q.executeTakeFirstOrThrow()).position);
  }

  async setCursor(name: string, position: number, now: string): Promise<void> {
    await this.db
      .updateTable('outbox_cursors')
      .set({ position, updated_at: now })
      .where('name', '=', name)
      .execute();
  }

  /** Bots of these organizations that can receive webhooks: active, not deleted, with a URL. */
  webhookBots(orgIds: string[]): Promise<{ id: string; org_id: string; events: string }[]> {
    if (orgIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('bots')
      .select(['id', 'org_id', 'events'])
      .where('org_id', 'in', orgIds)
      .where('deleted_at', 'is', null)
      .where('status', '=', 'active')
      .where('webhook_url', 'is not', null)
      .execute();
  }

  // --- deliveries ---

  async insertMany(rows: DeliveryRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 200) {
      await this.db
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 200))
        .onConflict((oc) => oc.columns(['event_id', 'bot_id']).doNothing())
        .execute();
    }
  }

  get(id: string): Promise<Selectable<DeliveryRow> | undefined> {
    return this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Claims due deliveries: at most `limit`, at most `perBot` of one bot, none of a paused bot or of
   * `busyBots`; their next_attempt_at becomes `leaseUntil`, so that if this worker dies before recording
   * the attempt, the delivery is due again when the lease ends. On PostgreSQL rows another worker is
   * claiming are skipped (FOR UPDATE SKIP LOCKED), so several instances share the work.
   */
  async claim(a: {
    now: string;
    leaseUntil: string;
    limit: number;
    perBot: number;
    busyBots: string[];
  }): Promise<Selectable<DeliveryRow>[]> {
    const busy = a.busyBots.length > 0 ? sql`and d.bot_id not in (${sql.join(a.busyBots)})` : sql``;
    const due = sql`
      select id from (
        select d.id, d.next_attempt_at,
          row_number() over (partition by d.bot_id order by d.next_attempt_at, d.id) as rn
        from (
          -- The earliest due rows only: a claim's cost does not grow with the backlog.
          select id, bot_id, next_attempt_at from webhook_deliveries d
          where d.state = 'pending' and d.next_attempt_at <= ${a.now} ${busy}
            and not exists (select 1 from webhook_health h where h.bot_id = d.bot_id and h.paused_at is not null)
          order by d.next_attempt_at limit ${Math.min(SCAN, Math.max(64, a.limit * a.perBot))}
        ) d
      ) x where rn <= ${a.perBot} order by next_attempt_at limit ${a.limit}`;
    const ids = isPostgres(this.db)
      ? sql`select id from webhook_deliveries where id in (${due}) and state = 'pending'
              and next_attempt_at <= ${a.now} for update skip locked`
      : due;
    const res = await sql<Selectable<DeliveryRow>>`
      update webhook_deliveries set next_attempt_at = ${a.leaseUntil}
      where id in (${ids}) returning *`.execute(this.db);
    return res.rows;
  }

  /** Event data by outbox seq. */
  async eventData(seqs: number[]): Promise<Map<number, string>> {
    if (seqs.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('events')
      .select(['seq', 'data'])
      .where('seq', 'in', seqs)
      .execute();
    return new Map(rows.map((r) => [Number(r.seq), r.data]));
  }

  async targets(botIds: string[]): Promise<Map<string, DeliveryTarget>> {
    if (botIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('bots as b')
      .leftJoin('bot_webhook_secrets as s', 's.bot_id', 'b.id')
      .select([
        'b.id as bot_id',
        'b.org_id',
        'b.name',
        'b.created_by',
        'b.webhook_url',
        'b.status',
        'b.deleted_at',
        's.secret_encrypted',
      ])
      .where('b.id', 'in', botIds)
      .execute();
    return new Map(rows.map((r) => [r.bot_id, r]));
  }

  async recordAttempt(r: AttemptRow): Promise<void> {
    await INSERT_ATTEMPT(
      this.db,
      r.id,
      r.delivery_id,
      r.attempt,
      r.started_at,
      r.duration_ms,
      r.status,
      r.error,
      r.response_snippet,
    );
  }

  /** A delivered attempt: the delivery is done and the bot's run of failures, if any, ends. */
  async markDelivered(
    d: { id: string; bot_id: string },
    attempts: number,
    startedAt: string,
    status: number,
    now: string,
  ) {
    await MARK_DELIVERED(this.db, d.id, attempts, startedAt, status, now);
    await RESET_FAILURES(this.db, d.bot_id, now);
  }

  async update(id: string, patch: Partial<DeliveryRow>): Promise<void> {
    await this.db.updateTable('webhook_deliveries').set(patch).where('id', '=', id).execute();
  }

  /** Ends every pending delivery of a bot (its webhook is gone). */
  async failPending(botId: string, error: string, now: string): Promise<number> {
    const r = await this.db
      .updateTable('webhook_deliveries')
      .set({ state: 'failed', last_error: error, updated_at: now })
      .where('bot_id', '=', botId)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** A bot's deliveries, newest first, keyset-paged by (created_at, id). */
  listForBot(
    botId: string,
    opts: {
      state?: DeliveryState | undefined;
      before?: { created_at: string; id: string } | undefined;
      limit: number;
    },
  ): Promise<Selectable<DeliveryRow>[]> {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('bot_id', '=', botId);
    if (opts.state) q = q.where('state', '=', opts.state);
    if (opts.before) q = q.where(olderThan(opts.before));
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
  }

  async attemptsOf(deliveryIds: string[]): Promise<Selectable<AttemptRow>[]> {
    if (deliveryIds.length === 0) return [];
    return this.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_id', 'in', deliveryIds)
      .orderBy('delivery_id')
      .orderBy('attempt')
      .orderBy('started_at')
      .execute();
  }

  /** The events fanned out to a bot after an outbox position, with their data (catch-up). */
  eventsForBot(botId: string, afterPosition: number, limit: number) {
    return this.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('events as e', 'e.seq', 'd.event_seq')
      .select([
        'd.event_position as position',
        'd.event_id',
        'd.event_type',
        'd.event_created_at',
        'e.data',
        'd.id as delivery_id',
        'd.state',
      ])
      .where('d.bot_id', '=', botId)
      .where('d.event_position', '>', afterPosition)
      .orderBy('d.event_position')
      .limit(limit)
      .execute();
  }

  /** Deletes delivered and failed deliveries last changed before `before` (attempts go by cascade). */
  async prune(before: string, limit: number): Promise<number> {
    const ids = this.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('state', '<>', 'pending')
      .where('updated_at', '<', before)
      .limit(limit);
    const r = await this.db.deleteFrom('webhook_deliveries').where('id', 'in', ids).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  // --- health (consecutive failures, pause) ---

  getHealth(botId: string): Promise<Selectable<WebhookHealthRow> | undefined> {
    return this.db.selectFrom('webhook_health').selectAll().where('bot_id', '=', botId).executeTakeFirst();
  }

  async putHealth(row: WebhookHealthRow): Promise<void> {
    await this.db
      .insertInto('webhook_health')
      .values(row)
      .onConflict((oc) =>
        oc.column('bot_id').doUpdateSet({
          consecutive_failures: row.consecutive_failures,
          paused_at: row.paused_at,
          paused_reason: row.paused_reason,
          updated_at: row.updated_at,
        }),
      )
      .execute();
  }

  /** Counts a failed attempt (atomically); returns the bot's health with its failures in a row now. */
  countFailure(botId: string, now: string): Promise<Selectable<WebhookHealthRow>> {
    return this.db
      .insertInto('webhook_health')
      .values({
        bot_id: botId,
        consecutive_failures: 1,
        paused_at: null,
        paused_reason: null,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.column('bot_id').doUpdateSet((eb) => ({
          consecutive_failures: eb('webhook_health.consecutive_failures', '+', 1),
          updated_at: now,
        })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }
}
