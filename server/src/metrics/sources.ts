import { sql, type CompiledQuery } from 'kysely';
import type { Clock } from '../runtime/clock.js';
import type { Storage } from '../storage/storage.js';

/**
 * What the scrape-time gauges read (registry.ts): a few cheap queries and counters the running services
 * keep anyway. app.ts hands these over; metrics/ does not import the services themselves (they are
 * above it), only their shape.
 *
 * The queries, each served by an index (or a table kept small by pruning):
 * - webhook deliveries not finished, and of them the due ones and the oldest due (`webhook_deliveries_due`,
 *   the partial index on pending rows' next_attempt_at);
 * - the newest outbox position (the index's maximum), the fan-out's cursor (one row of outbox_cursors)
 *   and, while they differ, the first event after the cursor (by position);
 * - scheduled jobs due (pending rows of scheduled_jobs; finished ones are pruned after 30 days).
 */

export interface PoolUse {
  max: number;
  used: number;
  idle: number;
  waiting: number;
}

export interface ScrapeSources {
  storage: Storage;
  /** Business time: due times and ages are measured against it. */
  clock: Clock;
  /** The fan-out's durable cursor in outbox_cursors (delivery/fanout.ts). */
  fanoutCursor: string;
  /** The live stream's hub (realtime/hub.ts), when it runs. */
  realtime?: {
    readonly clients: ReadonlySet<unknown>;
    readonly pending: { unauthenticated: number };
    readonly stats: { slowDisconnects: number };
  };
  /** Connections of the database pool (storage), when it tells. */
  pool?: () => PoolUse;
  /** How long one snapshot is served to scrapes (default 1 s). */
  cacheMs?: number;
}

export interface ScrapeSnapshot {
  webhooks: { pending: number; due: number; oldestDueAgeSeconds: number };
  outbox: { head: number; lagEvents: number; lagSeconds: number };
  realtime: { authenticated: number; unauthenticated: number; slowDisconnects: number };
  scheduler: { due: number; oldestDueAgeSeconds: number };
  pool: PoolUse;
  /** How long reading this snapshot took. */
  seconds: number;
}

/** One snapshot at a time, served for `cacheMs` to every gauge of a scrape and to scrapes meanwhile. */
/** Stands for the scrape's time in the compiled snapshot statement. */
const NOW = '\u0000now';

interface SnapshotRow {
  pending: number | string | null;
  due: number | string | null;
  oldest_due: string | null;
  head: number | string | null;
  cursor: number | string | null;
  jobs_due: number | string | null;
  jobs_oldest: string | null;
}

export class Snapshots {
  #compiled: CompiledQuery<SnapshotRow> | undefined;
  #current: { at: number; value: Promise<ScrapeSnapshot> } | undefined;

  constructor(private readonly sources: ScrapeSources) {}

  /** The next get() reads anew. */
  forget(): void {
    this.#current = undefined;
  }

  get(): Promise<ScrapeSnapshot> {
    const now = performance.now();
    const c = this.#current;
    if (c && now - c.at < (this.sources.cacheMs ?? 1000)) return c.value;
    const value = this.#read();
    this.#current = { at: now, value };
    // A failed read (database down) is not kept: the next scrape tries again.
    value.catch(() => {
      if (this.#current?.value === value) this.#current = undefined;
    });
    return value;
  }

  async #read(): Promise<ScrapeSnapshot> {
    const started = performance.now();
    const s = this.sources;
    const db = s.storage.stores.db;
    const nowMs = s.clock.now();
    const now = new Date(nowMs).toISOString();
    const positionColumn = s.storage.numbersOutboxAfterCommit ? 'position' : 'seq';
    const ageSeconds = (at: string | null | undefined) =>
      at ? Math.max(0, (nowMs - Date.parse(at)) / 1000) : 0;

    // One statement, one round trip: each value a subquery served by an index (or a small table). A
    // second only while the fan-out lags, for the age of the oldest event it has not reached.
    // `state = 'pending'` is a literal, not a parameter: only then does SQLite's planner use the
    // partial index on pending deliveries (a parameter cannot prove the index's condition).
    // Built and compiled once (Kysely builds a query anew on every call otherwise); each scrape only
    // puts the time in.
    this.#compiled ??= this.#snapshotQuery(positionColumn);
    const compiled = this.#compiled;
    const r = (
      await db.executeQuery<SnapshotRow>({
        ...compiled,
        parameters: compiled.parameters.map((p) => (p === NOW ? now : p)),
      })
    ).rows[0];
    const head = Number(r?.head ?? 0);
    const fannedOut = Number(r?.cursor ?? 0);
    const lagEvents = Math.max(0, head - fannedOut);
    let lagSeconds = 0;
    if (lagEvents > 0) {
      const first = await db
        .selectFrom('events')
        .select('created_at')
        .where(sql.ref(positionColumn), '>', fannedOut)
        .orderBy(sql.ref(positionColumn))
        .limit(1)
        .executeTakeFirst();
      lagSeconds = ageSeconds(first?.created_at);
    }
    const rt = s.realtime;
    const unauthenticated = rt?.pending.unauthenticated ?? 0;
    return {
      webhooks: {
        pending: Number(r?.pending ?? 0),
        due: Number(r?.due ?? 0),
        oldestDueAgeSeconds: ageSeconds(r?.oldest_due as string | null | undefined),
      },
      outbox: { head, lagEvents, lagSeconds },
      realtime: {
        authenticated: Math.max(0, (rt?.clients.size ?? 0) - unauthenticated),
        unauthenticated,
        slowDisconnects: rt?.stats.slowDisconnects ?? 0,
      },
      scheduler: {
        due: Number(r?.jobs_due ?? 0),
        oldestDueAgeSeconds: ageSeconds(r?.jobs_oldest as string | null | undefined),
      },
      pool: s.pool?.() ?? { max: 0, used: 0, idle: 0, waiting: 0 },
      seconds: (performance.now() - started) / 1000,
    };
  }

  /** The snapshot statement, compiled with NOW where the scrape's time goes. */
  #snapshotQuery(positionColumn: 'position' | 'seq'): CompiledQuery<SnapshotRow> {
    const db = this.sources.storage.stores.db;
    const s = this.sources;
    return db
      .selectNoFrom((eb) => [
        eb
          .selectFrom('webhook_deliveries')
          .select((d) => d.fn.countAll().as('n'))
          .where('state', '=', sql.lit('pending'))
          .as('pending'),
        eb
          .selectFrom('webhook_deliveries')
          .select((d) => d.fn.countAll().as('n'))
          .where('state', '=', sql.lit('pending'))
          .where('next_attempt_at', '<=', NOW)
          .as('due'),
        eb
          .selectFrom('webhook_deliveries')
          .select((d) => d.fn.min('next_attempt_at').as('at'))
          .where('state', '=', sql.lit('pending'))
          .where('next_attempt_at', '<=', NOW)
          .as('oldest_due'),
        eb
          .selectFrom('events')
          .select((e) => e.fn.max<number>(sql.ref(positionColumn)).as('p'))
          .as('head'),
        eb.selectFrom('outbox_cursors').select('position').where('name', '=', s.fanoutCursor).as('cursor'),
        eb
          .selectFrom('scheduled_jobs')
          .select((j) => j.fn.countAll().as('n'))
          .where('state', '=', sql.lit('pending'))
          .where('run_at', '<=', NOW)
          .as('jobs_due'),
        eb
          .selectFrom('scheduled_jobs')
          .select((j) => j.fn.min('run_at').as('at'))
          .where('state', '=', sql.lit('pending'))
          .where('run_at', '<=', NOW)
          .as('jobs_oldest'),
      ])
      .compile();
  }
}
