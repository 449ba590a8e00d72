import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Storage } from '../storage/storage.js';
import type { Executor } from '../storage/stores/executor.js';
import type { EventBus } from './bus.js';

/**
 * The ordered, gap-free reader of the `events` outbox, shared by every consumer (webhook fan-out,
 * WebSocket hub). Each event gets a **position**: an integer that increases in commit order, so a
 * consumer that has read up to position p never later finds a committed event at or below p. Consumers
 * keep the position as their cursor and clients see it as "the sequence" of an event.
 *
 * Why not `seq`: PostgreSQL hands out identity values when the row is inserted, not when its
 * transaction commits. Transaction A inserts seq 10, B inserts seq 11 and commits first; a reader that
 * saw 11 and moved its cursor to 11 never sees 10 once A commits. So on PostgreSQL a **sequencer**
 * gives positions after commit: every event row records its transaction id (`tx_id`, default
 * `pg_current_xact_id()`), and the sequencer numbers, in seq order, only the rows whose transaction is
 * older than the oldest transaction still running (`pg_snapshot_xmin(pg_current_snapshot())`): those
 * transactions have finished, so no row can still appear among them. It runs under a transaction-level
 * advisory lock, so positions are handed out in one order even with several server instances, and a
 * consumer reading `position > cursor` cannot miss one. Positions are consecutive (max + row number).
 *
 * Why this and not the xid watermark itself as cursor: a plain integer is what clients can hold and
 * compare (WebSocket resume, catch-up), and it keeps the write path as it was: the insert only adds a
 * column default; numbering is one batched UPDATE after commit, off the request path.
 *
 * On SQLite there is one writer and a transaction's rows become visible at its commit, in seq order:
 * seq is already commit order and is the position (no sequencer, no extra column).
 *
 * Latency: the sequencer runs when a local commit is published on the bus, and again shortly while
 * rows wait behind a running transaction (a transaction that writes no event can hold them back for
 * its duration); events of other instances are found by the poll.
 */

export interface OutboxEvent {
  /** Commit-ordered position: the cursor of every consumer. */
  position: number;
  seq: number;
  id: string;
  org_id: string;
  type: string;
  /** JSON text, as the operation emitted it. */
  data: string;
  created_at: string;
}

export interface OutboxReaderOptions {
  /** Poll interval when nothing wakes the reader (events written by another instance). */
  pollMs?: number;
  /** Rows numbered per sequencer pass. */
  batch?: number;
}

type Wake = () => void;

export class OutboxReader {
  readonly name = 'outbox';
  readonly #pollMs: number;
  readonly #batch: number;
  readonly #listeners = new Set<Wake>();
  #timer: NodeJS.Timeout | undefined;
  #unsubscribeBus: (() => void) | undefined;
  /** The sequencer pass in progress and whether another one was asked for meanwhile. */
  #sequencing: Promise<void> | undefined;
  #again = false;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = 2;
  #soon: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly storage: Storage,
    private readonly bus: EventBus,
    private readonly log: Logger,
    opts: OutboxReaderOptions = {},
  ) {
    this.#pollMs = opts.pollMs ?? 1000;
    this.#batch = opts.batch ?? 1000;
  }

  get usesSequencer(): boolean {
    return this.storage.dialect === 'postgres';
  }

  start(): void {
    this.#stopped = false;
    this.#unsubscribeBus = this.bus.subscribe(() => this.#onCommit());
    this.#timer = setInterval(() => this.#onCommit(), this.#pollMs);
    this.#timer.unref();
    this.#onCommit(); // events left unnumbered by a previous run
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribeBus?.();
    clearInterval(this.#timer);
    clearTimeout(this.#retry);
    clearTimeout(this.#soon);
    this.#soon = undefined;
    await this.#sequencing?.catch(() => undefined);
  }

  /** Calls `listener` whenever new events may be readable. Returns the unsubscribe function. */
  onWake(listener: Wake): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Events after `position`, in position order; through `db` (e.g. an open transaction) if given. */
  async readAfter(
    position: number,
    limit: number,
    db: Executor = this.storage.stores.db,
  ): Promise<OutboxEvent[]> {
    const q = this.usesSequencer
      ? sql<OutboxEvent>`select position, seq, id, org_id, type, data, created_at from events
          where position > ${position} order by position limit ${limit}`
      : sql<OutboxEvent>`select seq as position, seq, id, org_id, type, data, created_at from events
          where seq > ${position} order by seq limit ${limit}`;
    return (await q.execute(db)).rows;
  }

  /** Events of one organization with `after < position <= upTo`, in order, at most `limit` (resume). */
  async readRange(orgId: string, after: number, upTo: number, limit: number): Promise<OutboxEvent[]> {
    const q = this.usesSequencer
      ? sql<OutboxEvent>`select position, seq, id, org_id, type, data, created_at from events
          where org_id = ${orgId} and position > ${after} and position <= ${upTo} order by position limit ${limit}`
      : sql<OutboxEvent>`select seq as position, seq, id, org_id, type, data, created_at from events
          where org_id = ${orgId} and seq > ${after} and seq <= ${upTo} order by seq limit ${limit}`;
    return (await q.execute(this.storage.stores.db)).rows;
  }

  /** The newest position (0 when the outbox is empty): where a consumer that wants only new events starts. */
  async head(db: Executor = this.storage.stores.db): Promise<number> {
    const q = this.usesSequencer
      ? sql<{ p: number | null }>`select max(position) as p from events`
      : sql<{ p: number | null }>`select max(seq) as p from events`;
    return Number((await q.execute(db)).rows[0]?.p ?? 0);
  }

  /**
   * An in-memory consumer: `handler` receives the events after `fromPosition` in order, one batch at a
   * time (the next batch waits for the handler's promise). A failing handler gets the same batch again
   * after a second. The consumer keeps its own cursor; to survive restarts, store the last position
   * and pass it back in.
   */
  subscribe(
    name: string,
    fromPosition: number,
    handler: (events: OutboxEvent[]) => Promise<void>,
    batch = 500,
  ): () => void {
    let cursor = fromPosition;
    let running = false;
    let again = false;
    let closed = false;
    const pump = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          for (;;) {
            if (closed) return;
            const events = await this.readAfter(cursor, batch);
            if (events.length === 0) break;
            await handler(events);
            cursor = events[events.length - 1]!.position;
          }
        } while (again);
      } catch (err) {
        this.log.error({ err, consumer: name }, 'outbox consumer failed; retrying');
        setTimeout(() => void pump(), 1000).unref();
      } finally {
        running = false;
      }
    };
    const off = this.onWake(() => void pump());
    void pump();
    return () => {
      closed = true;
      off();
    };
  }

  /** Numbers finished events now (PostgreSQL); resolves when done. Wakes consumers. */
  sequence(): Promise<void> {
    if (!this.usesSequencer) {
      this.#wake();
      return Promise.resolve();
    }
    if (this.#sequencing) {
      this.#again = true;
      return this.#sequencing;
    }
    this.#sequencing = (async () => {
      try {
        do {
          this.#again = false;
          const { numbered, waiting } = await this.#sequenceOnce();
          if (numbered > 0) this.#wake();
          if (numbered === this.#batch)
            this.#again = true; // more are ready than one pass numbers
          else if (waiting && !this.#stopped) this.#retryLater();
          else this.#retryMs = 2;
        } while (this.#again && !this.#stopped);
      } catch (err) {
        if (!this.#stopped) this.log.error({ err }, 'outbox sequencer failed; retrying');
        if (!this.#stopped) this.#retryLater();
      } finally {
        this.#sequencing = undefined;
      }
    })();
    return this.#sequencing;
  }

  #onCommit(): void {
    if (this.#stopped) return;
    if (!this.usesSequencer) return this.#wake();
    // Commits that land within 2 ms share one sequencer pass (a transaction of its own on PostgreSQL).
    this.#soon ??= setTimeout(() => {
      this.#soon = undefined;
      void this.sequence();
    }, 2);
  }

  /** Rows still wait behind a running transaction: look again soon, backing off to the poll interval. */
  #retryLater(): void {
    if (this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.sequence();
    }, this.#retryMs);
    this.#retry.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, this.#pollMs);
  }

  async #sequenceOnce(): Promise<{ numbered: number; waiting: boolean }> {
    return this.storage.transaction(async (stores) => {
      const db = stores.db;
      // One sequencer at a time per schema (several instances may share the database).
      await sql`select pg_advisory_xact_lock(hashtext('workroom.outbox.' || current_schema()))`.execute(db);
      const res = await sql`
        with ready as (
          select seq, row_number() over (order by seq) as n from (
            select seq from events
            where position is null and tx_id < pg_snapshot_xmin(pg_current_snapshot())
            order by seq limit ${this.#batch}
          ) r
        ), base as (select coalesce(max(position), 0) as p from events)
        update events e set position = base.p + ready.n
        from ready, base where e.seq = ready.seq`.execute(db);
      const numbered = Number(res.numAffectedRows ?? 0);
      const left = await sql<{
        w: boolean;
      }>`select exists(select 1 from events where position is null) as w`.execute(db);
      return { numbered, waiting: left.rows[0]?.w === true };
    });
  }

  #wake(): void {
    for (const l of this.#listeners) {
      try {
        l();
      } catch (err) {
        this.log.error({ err }, 'outbox listener failed');
      }
    }
  }
}
