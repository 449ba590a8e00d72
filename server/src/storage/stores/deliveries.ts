import { CompiledQuery, PostgresAdapter, sql, type Selectable } from 'kysely';
import { namePgStatement } from '../pg-statements.js';
import type { AttemptRow, DeliveryRow, WebhookHealthRow } from '../schema.js';
import type { Executor } from './executor.js';
import { olderThan } from './notifications.js';
import { prepared } from './prepared.js';

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
  (db, id: string, attempts: number, last_attempt_at: string, last_status: number | null, now: string) =>
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

// A fan-out inserts one row per (event, bot): on SQLite one prepared statement run per row inside the
// fan-out's transaction (synchronous, no query building); on PostgreSQL one statement for the batch.
// The fan-out's cursor, every pass on SQLite (Kysely built these for every pass: ~2 % of a POST's
// profile with the tool-call audit, measured 2026-11-28).
const CREATE_CURSOR = prepared((db, name: string, now: string) =>
  db
    .insertInto('outbox_cursors')
    .values({ name, position: 0, updated_at: now })
    .onConflict((oc) => oc.column('name').doNothing()),
);
const LOCK_CURSOR = prepared((db, name: string) => {
  const q = db.selectFrom('outbox_cursors').select('position').where('name', '=', name);
  return isPostgres(db) ? q.forUpdate() : q;
});
const SET_CURSOR = prepared((db, name: string, position: number, now: string) =>
  db.updateTable('outbox_cursors').set({ position, updated_at: now }).where('name', '=', name),
);

const INSERT_DELIVERY = prepared(
  (
    db,
    id: string,
    org_id: string,
    bot_id: string,
    event_id: string,
    event_seq: number | null,
    event_position: number | null,
    event_type: string,
    event_created_at: string,
    state: string,
    next_attempt_at: string,
    last_error: string | null,
    now: string,
  ) =>
    db
      .insertInto('webhook_deliveries')
      .values({
        id,
        org_id,
        bot_id,
        event_id,
        event_seq,
        event_position,
        event_type,
        event_created_at,
        payload: null,
        state: state as DeliveryRow['state'],
        attempts: 0,
        next_attempt_at,
        last_attempt_at: null,
        last_status: null,
        last_error,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['event_id', 'bot_id']).doNothing()),
);
const PG_INSERT_DELIVERIES = `
  insert into webhook_deliveries (id, org_id, bot_id, event_id, event_seq, event_position, event_type,
    event_created_at, payload, state, attempts, next_attempt_at, last_attempt_at, last_status, last_error,
    created_at, updated_at)
  select id, org_id, bot_id, event_id, event_seq, event_position, event_type, event_created_at, null, state,
    0, next_attempt_at, null, null, last_error, $12, $12
  from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[])
    as v(id, org_id, bot_id, event_id, event_seq, event_position, event_type, event_created_at, state,
      next_attempt_at, last_error)
  on conflict (event_id, bot_id) do nothing
  returning id`;
/** The same, moving a consumer's cursor in the same statement ($13 position, $14 name). */
const PG_INSERT_DELIVERIES_MOVE_CURSOR = `
  with cursor_moved as (
    update outbox_cursors set position = $13, updated_at = $12 where name = $14
  )${PG_INSERT_DELIVERIES}`;
/**
 * PostgreSQL, the fan-out's pass without a transaction (delivery/fanout.ts): the rows inserted and the
 * cursor moved from $15 to $13 in one statement, only if the cursor is still at $15 (compare and set:
 * when another instance moved it meanwhile, the UPDATE finds no row, in READ COMMITTED after waiting
 * for that instance's commit, and nothing is inserted). Answers a `moved` row when it moved, then the
 * ids inserted.
 */
const PG_INSERT_DELIVERIES_IF_CURSOR_AT = `
  with moved as (
    update outbox_cursors set position = $13, updated_at = $12 where name = $14 and position = $15
    returning 1
  ), ins as (
    insert into webhook_deliveries (id, org_id, bot_id, event_id, event_seq, event_position, event_type,
      event_created_at, payload, state, attempts, next_attempt_at, last_attempt_at, last_status, last_error,
      created_at, updated_at)
    select id, org_id, bot_id, event_id, event_seq, event_position, event_type, event_created_at, null,
      state, 0, next_attempt_at, null, null, last_error, $12, $12
    from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
      $8::text[], $9::text[], $10::text[], $11::text[])
      as v(id, org_id, bot_id, event_id, event_seq, event_position, event_type, event_created_at, state,
        next_attempt_at, last_error)
    where exists (select 1 from moved)
    on conflict (event_id, bot_id) do nothing
    returning id
  )
  select true as moved, null as id from moved
  union all select false, id from ins`;
/**
 * PostgreSQL: what `subscribersOf` answers for the organizations $1 (built-in bots too when $2), then the
 * bot members of the channels $3 (`parent` set: the channel), in one statement.
 */
const PG_SUBSCRIBERS_AND_CHANNEL_BOTS = `
  select id as bot_id, org_id, events, builtin, null as parent from bots
  where org_id = any($1::text[]) and deleted_at is null and status = 'active'
    and ($2::boolean or builtin is null)
  union all
  select member_id, null, null, null, channel_id from channel_members
  where channel_id = any($3::text[]) and member_type = 'bot'`;
/** PostgreSQL: a cursor's position, the row created at 0 when missing, in one statement (no lock). */
const PG_READ_CURSOR = `
  with created as (
    insert into outbox_cursors (name, position, updated_at) values ($1, 0, $2)
    on conflict (name) do nothing returning position
  )
  select position from created union all select position from outbox_cursors where name = $1`;
/**
 * PostgreSQL: `due` through migration 0023's function, whose plan is the due index read in order
 * whatever the statistics say (a backlog no longer costs every claim a read and sort of all of it).
 */
const PG_DUE = 'select * from workroom_due_deliveries($1, $2, $3::text[], $4::text[])';
/** PostgreSQL: `lease`, with each leased row's event data (`event_data`), in one statement. */
const PG_LEASE = `
  with leased as (
    update webhook_deliveries set next_attempt_at = $1
    where id = any($2::text[]) and state = 'pending' and next_attempt_at <= $3
    returning *
  )
  select l.*, e.data as event_data from leased l left join events e on e.seq = l.event_seq`;
/** Rows of one compare-and-set fan-out statement at most (more go through a transaction). */
export const MAX_ROWS_IF_CURSOR_AT = 5000;

/**
 * Delivered attempts recorded in one statement (atomic by itself, so no transaction is needed): the
 * attempts inserted, their deliveries marked delivered, the bots' runs of failures ended.
 */
const PG_RECORD_DELIVERED = `
  with attempts as (
    insert into webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, status, error,
      response_snippet)
    select id, delivery_id, attempt, started_at, duration_ms, status, null, snippet
    from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::int[], $7::text[])
      as v(id, delivery_id, attempt, started_at, duration_ms, status, snippet)
  ), delivered as (
    update webhook_deliveries d set state = 'delivered', attempts = v.attempt,
      last_attempt_at = v.started_at, last_status = v.status, last_error = null, next_attempt_at = $8,
      updated_at = $8
    from unnest($2::text[], $3::int[], $4::text[], $6::int[]) as v(id, attempt, started_at, status)
    where d.id = v.id
  )
  update webhook_health set consecutive_failures = 0, updated_at = $8
  where bot_id = any($9::text[]) and consecutive_failures > 0`;

const subscribersOf = (builtin: boolean) =>
  prepared((db, org_id: string) =>
    db
      .selectFrom('bots')
      .select(['id as bot_id', 'org_id', 'events', 'builtin'])
      .where('org_id', '=', org_id)
      .where('deleted_at', 'is', null)
      .where('status', '=', 'active')
      // Custom bots with or without a webhook URL (a bot without one receives over its socket,
      // docs/SOCKET.md; its rows wait for a socket); built-in bots only with an in-process receiver.
      .where((eb) => (builtin ? eb.lit(true) : eb('builtin', 'is', null))),
  );
const SUBSCRIBERS = subscribersOf(false);
const SUBSCRIBERS_WITH_BUILTIN = subscribersOf(true);

const MEMBER_TABLES = {
  channel: ['channel_members', 'channel_id'],
  project: ['project_members', 'project_id'],
  dm_room: ['dm_room_members', 'dm_room_id'],
} as const;

/**
 * The data a leased delivery's attempt sends: its event's data when it has an event (the outbox row
 * read with the lease), else its own payload (an event not in the outbox: webhook.test); JSON `null` when
 * neither is there (an event pruned meanwhile).
 */
function attemptData(row: Selectable<DeliveryRow>, eventData: string | null | undefined): string {
  return (row.event_seq !== null ? eventData : row.payload) ?? 'null';
}

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

/** Fixed SQL text run with new parameters (a named statement on PostgreSQL: planned once per connection). */
async function raw<R>(db: Executor, text: string, parameters: unknown[]): Promise<R[]> {
  namePgStatement(text);
  return (await db.executeQuery<R>(CompiledQuery.raw(text, parameters) as CompiledQuery<R>)).rows;
}

/** A due delivery as a claim first sees it. */
export interface DueDelivery {
  id: string;
  org_id: string;
  bot_id: string;
  attempts: number;
  next_attempt_at: string;
  event_position: number | null;
}

/** A leased delivery and the data its attempt sends (JSON text). */
export interface LeasedDelivery {
  row: Selectable<DeliveryRow>;
  data: string;
}

/** A delivery the fan-out creates. */
export interface NewDelivery {
  id: string;
  org_id: string;
  bot_id: string;
  event_id: string;
  event_seq: number;
  event_position: number;
  event_type: string;
  event_created_at: string;
  state: 'pending' | 'failed';
  /** Now (due), or the end of the lease when the fan-out hands it to the worker at once. */
  next_attempt_at: string;
  last_error: string | null;
}

/** A bot that may receive deliveries, as the fan-out first looks at it. */
export interface Subscriber {
  bot_id: string;
  org_id: string;
  /** JSON array of the event types it subscribed to. */
  events: string;
  builtin: string | null;
}

/** What sending to a bot needs, and whether its webhook is paused. */
export interface ReceivingBot extends DeliveryTarget {
  paused: boolean;
}

/** A finished attempt that delivered. */
export interface DeliveredAttempt {
  attemptId: string;
  deliveryId: string;
  botId: string;
  attempt: number;
  startedAt: string;
  durationMs: number;
  status: number | null;
  snippet: string | null;
}

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
  /** Set for a built-in bot: delivered in process (delivery/in-process.ts), not over HTTP. */
  builtin: string | null;
  /** The bot's ed25519 key, encrypted, when it has one (its deliveries also carry `v1a`). */
  signing_key_encrypted?: string | null;
  /** Nothing is sent before this time (a receiver's Retry-After, or the pace of max_per_minute). */
  hold_until?: string | null;
  /** The most deliveries a minute its owner allows (null: no limit): one per claim, spaced. */
  max_per_minute?: number | null;
}

export type DeliveryState = DeliveryRow['state'];

/**
 * Webhook deliveries (one row per event and bot), their attempts, each bot's webhook health, and the
 * durable cursors of outbox consumers.
 */
/** The rows' columns as arrays, in the order the PostgreSQL inserts unnest them (`PG_INSERT_DELIVERIES…`). */
function deliveryColumns(rows: readonly NewDelivery[]): unknown[][] {
  const col = <K extends keyof NewDelivery>(k: K) => rows.map((r) => r[k]);
  return [
    col('id'),
    col('org_id'),
    col('bot_id'),
    col('event_id'),
    col('event_seq'),
    col('event_position'),
    col('event_type'),
    col('event_created_at'),
    col('state'),
    col('next_attempt_at'),
    col('last_error'),
  ];
}

export class DeliveryStore {
  constructor(private readonly db: Executor) {}

  // --- outbox cursors ---

  /**
   * The consumer's position, locked until the transaction ends on PostgreSQL (one fan-out at a time).
   * `create`: make the row first if there is none (a consumer does it once, then only moves it).
   */
  async lockCursor(name: string, now: string, create = true): Promise<number> {
    if (create) await CREATE_CURSOR(this.db, name, now);
    const row = (await LOCK_CURSOR(this.db, name)).rows[0];
    if (!row) throw new Error(`outbox cursor "${name}" does not exist`);
    return Number(row.position);
  }

  /** PostgreSQL: the position of cursor `name`, created at 0 when missing; no lock (see insertDeliveriesIfCursorAt). */
  async readCursor(name: string, now: string): Promise<number> {
    const rows = await raw<{ position: number }>(this.db, PG_READ_CURSOR, [name, now]);
    return Number(rows[0]!.position);
  }

  /**
   * PostgreSQL: inserts a fan-out pass's rows and moves its cursor from `cursor.from` to `cursor.to`, in
   * one statement, only if the cursor is still at `from` (compare and set). Returns the ids inserted (a
   * row whose (event, bot) pair exists already is not), or null when the cursor was elsewhere: then
   * nothing was inserted. At most MAX_ROWS_IF_CURSOR_AT rows.
   */
  async insertDeliveriesIfCursorAt(
    rows: NewDelivery[],
    now: string,
    cursor: { name: string; from: number; to: number },
  ): Promise<Set<string> | null> {
    if (rows.length > MAX_ROWS_IF_CURSOR_AT) throw new Error('too many rows for one statement');
    const out = await raw<{ moved: boolean; id: string | null }>(this.db, PG_INSERT_DELIVERIES_IF_CURSOR_AT, [
      ...deliveryColumns(rows),
      now,
      cursor.to,
      cursor.name,
      cursor.from,
    ]);
    if (!out.some((r) => r.moved)) return null;
    return new Set(out.flatMap((r) => (r.moved || r.id === null ? [] : [r.id])));
  }

  async setCursor(name: string, position: number, now: string): Promise<void> {
    await SET_CURSOR(this.db, name, position, now);
  }

  /**
   * Bots of these organizations that can receive deliveries: active, not deleted, custom (by webhook or
   * socket) or built in when `builtin` is true (they receive in process), with their subscriptions. One
   * prepared statement per organization: the fan-out asks for every batch of events.
   */
  async subscribers(orgIds: string[], builtin: boolean): Promise<Subscriber[]> {
    const out: Subscriber[] = [];
    for (const org of orgIds)
      out.push(...(await (builtin ? SUBSCRIBERS_WITH_BUILTIN : SUBSCRIBERS)(this.db, org)).rows);
    return out;
  }

  /**
   * PostgreSQL: `subscribers(orgIds, builtin)` and `botMembers('channel', channelIds)` in one statement
   * (the fan-out asks both for every pass: one round trip fewer per pass).
   */
  async subscribersAndChannelBots(
    orgIds: string[],
    builtin: boolean,
    channelIds: string[],
  ): Promise<{ subscribers: Subscriber[]; channelBots: { parent: string; bot_id: string }[] }> {
    const rows = await raw<Subscriber & { parent: string | null }>(this.db, PG_SUBSCRIBERS_AND_CHANNEL_BOTS, [
      orgIds,
      builtin,
      channelIds,
    ]);
    const subscribers: Subscriber[] = [];
    const channelBots: { parent: string; bot_id: string }[] = [];
    for (const { parent, ...r } of rows) {
      if (parent === null) subscribers.push(r);
      else channelBots.push({ parent, bot_id: r.bot_id });
    }
    return { subscribers, channelBots };
  }

  /** The bot members of containers of one kind, as (container, bot) pairs: one query for a batch. */
  async botMembers(
    kind: 'channel' | 'project' | 'dm_room',
    ids: string[],
  ): Promise<{ parent: string; bot_id: string }[]> {
    if (ids.length === 0) return [];
    const [table, parent] = MEMBER_TABLES[kind];
    // PostgreSQL: one named statement per kind whatever the number of ids (planned once per connection).
    if (isPostgres(this.db))
      return raw(
        this.db,
        `select ${parent} as parent, member_id as bot_id from ${table} where ${parent} = any($1::text[]) and member_type = 'bot'`,
        [ids],
      );
    const res = await sql<{ parent: string; bot_id: string }>`
      select ${sql.ref(parent)} as parent, member_id as bot_id from ${sql.table(table)}
      where ${sql.ref(parent)} in (${sql.join(ids)}) and member_type = 'bot'`.execute(this.db);
    return res.rows;
  }

  /** The project of each of these topics. */
  async topicProjects(topicIds: string[]): Promise<Map<string, string>> {
    if (topicIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('topics')
      .select(['id', 'project_id'])
      .where('id', 'in', topicIds)
      .execute();
    return new Map(rows.map((r) => [r.id, r.project_id]));
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

  /**
   * Inserts the deliveries of a fan-out pass and moves its cursor (on PostgreSQL in one statement: the
   * cursor's update rides along the last insert). Returns the ids inserted (a row that already existed
   * for the same event and bot is not).
   */
  async insertDeliveriesAndMoveCursor(
    rows: NewDelivery[],
    now: string,
    cursor: { name: string; position: number },
  ): Promise<Set<string>> {
    if (rows.length === 0 || !isPostgres(this.db)) {
      const inserted = await this.insertDeliveries(rows, now);
      await this.setCursor(cursor.name, cursor.position, now);
      return inserted;
    }
    return this.insertDeliveries(rows, now, cursor);
  }

  /**
   * The fan-out's rows, in one go; an (event, bot) pair that already exists is left as it is. Returns
   * the ids actually inserted. With `cursor` (PostgreSQL), its last statement also moves that cursor.
   */
  async insertDeliveries(
    rows: NewDelivery[],
    now: string,
    cursor?: { name: string; position: number },
  ): Promise<Set<string>> {
    const inserted = new Set<string>();
    if (rows.length === 0) return inserted;
    if (isPostgres(this.db)) {
      for (let i = 0; i < rows.length; i += 5000) {
        const part = rows.slice(i, i + 5000);
        const last = i + 5000 >= rows.length;
        const moveCursor = cursor !== undefined && last;
        const text = moveCursor ? PG_INSERT_DELIVERIES_MOVE_CURSOR : PG_INSERT_DELIVERIES;
        const out = await raw<{ id: string }>(this.db, text, [
          ...deliveryColumns(part),
          now,
          ...(moveCursor ? [cursor.position, cursor.name] : []),
        ]);
        for (const r of out) inserted.add(r.id);
      }
      return inserted;
    }
    for (const r of rows) {
      const res = await INSERT_DELIVERY(
        this.db,
        r.id,
        r.org_id,
        r.bot_id,
        r.event_id,
        r.event_seq,
        r.event_position,
        r.event_type,
        r.event_created_at,
        r.state,
        r.next_attempt_at,
        r.last_error,
        now,
      );
      if (Number(res.numAffectedRows ?? 0) > 0) inserted.add(r.id);
    }
    return inserted;
  }

  get(id: string): Promise<Selectable<DeliveryRow> | undefined> {
    return this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Due deliveries, earliest first, at most `limit`: none of a paused bot, of `busyBots` or of
   * `busyOrgs` (organizations at their share of the worker's slots, delivery/slots.ts). Inside a
   * transaction on PostgreSQL the rows are locked and rows another worker is claiming are skipped
   * (FOR UPDATE SKIP LOCKED), so several instances share the work; there the look is one named
   * statement (`PG_DUE`) that reads the due index in order and stops at the limit, however long the
   * backlog. The worker picks among them and leases the ones it takes (`lease`).
   */
  async due(a: {
    now: string;
    limit: number;
    busyBots: string[];
    busyOrgs?: string[];
  }): Promise<DueDelivery[]> {
    if (isPostgres(this.db))
      return raw<DueDelivery>(this.db, PG_DUE, [a.now, a.limit, a.busyBots, a.busyOrgs ?? []]);
    const busy = a.busyBots.length > 0 ? sql`and d.bot_id not in (${sql.join(a.busyBots)})` : sql``;
    const busyOrgs =
      a.busyOrgs && a.busyOrgs.length > 0 ? sql`and d.org_id not in (${sql.join(a.busyOrgs)})` : sql``;
    const res = await sql<DueDelivery>`
      select d.id, d.org_id, d.bot_id, d.attempts, d.next_attempt_at, d.event_position
      from webhook_deliveries d
      where d.state = 'pending' and d.next_attempt_at <= ${a.now} ${busy} ${busyOrgs}
        and not exists (select 1 from webhook_health h where h.bot_id = d.bot_id
          and (h.paused_at is not null or h.hold_until > ${a.now}))
      order by d.next_attempt_at limit ${a.limit}`.execute(this.db);
    return res.rows;
  }

  /**
   * Leases deliveries found by `due`: their next_attempt_at becomes `leaseUntil`, so that if this worker
   * dies before recording the attempt, the delivery is due again when the lease ends. Returns the rows
   * (only those still pending and due), each with the `data` its attempt sends: its event's data from
   * the outbox, or the payload stored with it (a webhook test's), or `null`. On PostgreSQL the lease and
   * the event data are one named statement (one round trip of a claim less, and planned once per
   * connection whatever the number of ids).
   */
  async lease(ids: string[], now: string, leaseUntil: string): Promise<LeasedDelivery[]> {
    if (ids.length === 0) return [];
    if (isPostgres(this.db)) {
      const rows = await raw<Selectable<DeliveryRow> & { event_data: string | null }>(this.db, PG_LEASE, [
        leaseUntil,
        ids,
        now,
      ]);
      return rows.map(({ event_data, ...row }) => ({ row, data: attemptData(row, event_data) }));
    }
    const res = await sql<Selectable<DeliveryRow>>`
      update webhook_deliveries set next_attempt_at = ${leaseUntil}
      where id in (${sql.join(ids)}) and state = 'pending' and next_attempt_at <= ${now}
      returning *`.execute(this.db);
    const data = await this.eventData(
      res.rows.map((r) => r.event_seq).filter((seq): seq is number => seq !== null),
    );
    return res.rows.map((row) => ({
      row,
      data: attemptData(row, row.event_seq !== null ? data.get(row.event_seq) : undefined),
    }));
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

  async targets(botIds: string[]): Promise<Map<string, ReceivingBot>> {
    if (botIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('bots as b')
      .leftJoin('bot_webhook_secrets as s', 's.bot_id', 'b.id')
      .leftJoin('webhook_health as h', 'h.bot_id', 'b.id')
      .leftJoin('bot_signing_keys as k', 'k.bot_id', 'b.id')
      .select([
        'b.id as bot_id',
        'b.org_id',
        'b.name',
        'b.created_by',
        'b.webhook_url',
        'b.status',
        'b.deleted_at',
        'b.builtin',
        's.secret_encrypted',
        'h.paused_at',
        'h.hold_until',
        'h.max_per_minute',
        'k.private_key_encrypted as signing_key_encrypted',
      ])
      .where('b.id', 'in', botIds)
      .execute();
    return new Map(
      rows.map(({ paused_at, hold_until, max_per_minute, ...r }) => [
        r.bot_id,
        // Fields first (a literal that starts with a spread is slow: domain/objects.ts).
        {
          paused: paused_at !== null,
          hold_until: hold_until ?? null,
          max_per_minute: max_per_minute ?? null,
          ...r,
        },
      ]),
    );
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
    status: number | null,
    now: string,
  ) {
    await MARK_DELIVERED(this.db, d.id, attempts, startedAt, status, now);
    await RESET_FAILURES(this.db, d.bot_id, now);
  }

  /**
   * Delivered attempts of several deliveries at once (the worker records in batches). On PostgreSQL one
   * statement, atomic by itself: the caller may run it outside a transaction.
   */
  async recordDelivered(items: DeliveredAttempt[], now: string): Promise<void> {
    if (items.length === 0) return;
    const bots = [...new Set(items.map((i) => i.botId))];
    if (isPostgres(this.db)) {
      const col = <K extends keyof DeliveredAttempt>(k: K) => items.map((i) => i[k]);
      await raw(this.db, PG_RECORD_DELIVERED, [
        col('attemptId'),
        col('deliveryId'),
        col('attempt'),
        col('startedAt'),
        col('durationMs'),
        col('status'),
        col('snippet'),
        now,
        bots,
      ]);
      return;
    }
    for (const i of items) {
      await INSERT_ATTEMPT(
        this.db,
        i.attemptId,
        i.deliveryId,
        i.attempt,
        i.startedAt,
        i.durationMs,
        i.status,
        null,
        i.snippet,
      );
      await MARK_DELIVERED(this.db, i.deliveryId, i.attempt, i.startedAt, i.status, now);
    }
    for (const b of bots) await RESET_FAILURES(this.db, b, now);
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

  /**
   * Holds the bot's endpoint until `until` (nothing is claimed for it before), unless it is held
   * longer already: the later of the two holds stands, with its reason.
   */
  async hold(botId: string, until: string, reason: string, now: string): Promise<void> {
    await this.db
      .insertInto('webhook_health')
      .values({
        bot_id: botId,
        consecutive_failures: 0,
        paused_at: null,
        paused_reason: null,
        hold_until: until,
        hold_reason: reason,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc
          .column('bot_id')
          .doUpdateSet({ hold_until: until, hold_reason: reason, updated_at: now })
          .where((eb) =>
            eb.or([eb('webhook_health.hold_until', 'is', null), eb('webhook_health.hold_until', '<', until)]),
          ),
      )
      .execute();
  }

  /** Sets what the owner allows (deliveries a minute; null: no limit), and clears the pace's hold. */
  async setMaxPerMinute(botId: string, max: number | null, now: string): Promise<void> {
    await this.db
      .insertInto('webhook_health')
      .values({
        bot_id: botId,
        consecutive_failures: 0,
        paused_at: null,
        paused_reason: null,
        max_per_minute: max,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('bot_id').doUpdateSet({ max_per_minute: max, updated_at: now }))
      .execute();
  }

  /** Ends a hold (a manager resumed the webhook). */
  async clearHold(botId: string, now: string): Promise<void> {
    await this.db
      .updateTable('webhook_health')
      .set({ hold_until: null, hold_reason: null, updated_at: now })
      .where('bot_id', '=', botId)
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
