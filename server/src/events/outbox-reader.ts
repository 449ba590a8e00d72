import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { parseEvent, type TypedEventData } from '../domain/events.js';
import { systemClock, type Clock, type ClockTimer } from '../runtime/clock.js';
import type { EventDeadLetterRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import { EventStore } from '../storage/stores/events.js';
import type { Executor } from '../storage/stores/executor.js';
import { prepared } from '../storage/stores/prepared.js';
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
 * gives positions after commit, to the rows it can see: a row is visible only once its transaction has
 * committed, so numbering what is visible numbers committed events only, each once. A numbering pass
 * is one statement (`position = max(position) + row_number() over (order by seq)` for the unnumbered
 * rows it sees) under a transaction-level advisory lock per schema, so passes (of every instance)
 * happen one after the other, and a pass sees everything the previous one numbered: the lock is
 * released only after the previous pass's commit is visible. A reader that sees position p therefore
 * sees every position below p (the same or an earlier pass numbered it), and an event that commits
 * later, whatever its seq, is numbered by a later pass, above everything handed out before. A (lower
 * seq) event that commits after a higher one is not skipped: it gets the next position then.
 *
 * Nothing waits for other transactions: not for unrelated ones (an open transaction of another
 * database of the cluster, a long batch job), and not for other event-writing ones either, since their
 * rows simply get numbered when they become visible. (The first version numbered only rows older than
 * the cluster's oldest running transaction id, `pg_snapshot_xmin`; any transaction open anywhere in the
 * cluster held every event back, up to a second at p99 in CI.) Positions are therefore in commit order
 * (in seq order among the events one pass finds), not in seq order; the `tx_id` column is kept for
 * diagnosis only.
 *
 * Why a separate position and not `seq` with a watermark: a plain integer is what clients can hold and
 * compare (WebSocket resume, catch-up), and it keeps the write path as it was: the insert only fills
 * column defaults; numbering is one batched UPDATE after commit, off the request path.
 *
 * On SQLite there is one writer and a transaction's rows become visible at its commit, in seq order:
 * seq is already commit order and is the position (no sequencer, no extra column).
 *
 * Latency: the sequencer runs within a few milliseconds of a local commit (the bus); every pass that
 * numbered something wakes this reader's consumers after its commit and sends a NOTIFY on PostgreSQL,
 * which wakes the consumers of the other instances at once when `listen` is given (a reader ignores its
 * own NOTIFY: its consumers were woken already). A slow poll is the fallback (an instance that died
 * between its commit and its pass, a lost listening connection, a reader without `listen`): it numbers
 * what is left and wakes the consumers whether or not it numbered anything, since another reader may
 * have numbered events without telling this one.
 *
 * Dead letters: every row read is parsed with its type's schema of the event catalogue before any
 * consumer sees it. A row that fails (not JSON, an unknown type, data that does not match) is logged
 * once per process at error level with its id, type, position and the paths that failed (never the
 * values: a command's data carries its response_url), recorded in `event_dead_letters` (migration 0010;
 * EventStore.deadLetter, idempotent across consumers and instances) and counted in `stats.deadLettered`;
 * consumers read on past it. Reads still return `limit` events when that many valid ones follow, so a
 * short read keeps meaning "that was all".
 */

/** An outbox row as stored. */
interface OutboxRow {
  position: number;
  seq: number;
  id: string;
  org_id: string;
  type: string;
  /** JSON text, as the operation emitted it. */
  data: string;
  created_at: string;
}

/**
 * An outbox event as every consumer gets it: checked against its type's schema in the event catalogue
 * (domain/events.ts), so `type` narrows `data`. A row that does not match is never handed out: it is
 * logged and dead-lettered (see "Dead letters" below).
 */
export type OutboxEvent = TypedEventData & {
  /** Commit-ordered position: the cursor of every consumer. */
  position: number;
  seq: number;
  id: string;
  org_id: string;
  /** `data` as stored (JSON text): what a webhook delivery sends, without serializing it again. */
  dataJson: string;
  created_at: string;
};

export interface OutboxReaderOptions {
  /**
   * Poll interval when nothing wakes the reader (a fallback: see "Latency" above), by `clock`: a test
   * clock moved on polls at once, like the jobs and retries it made due.
   */
  pollMs?: number;
  /** The server's clock (runtime/clock.ts); default: the system clock. */
  clock?: Clock;
  /** Rows numbered per sequencer pass. */
  batch?: number;
  /**
   * PostgreSQL: listens on a channel on a connection of its own (storage/pg-listen.ts) and calls
   * `onPayload` for each NOTIFY; resolves to the function that stops listening. Without it, events
   * numbered by another instance are found by the poll.
   */
  listen?: (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>;
}

/**
 * The NOTIFY channel of numbering passes; the payload is the schema whose outbox moved, then a space and
 * the id of the reader that numbered (a payload of the schema alone wakes every reader of it).
 */
export const OUTBOX_CHANNEL = 'workroom_outbox';

// The reads every wake makes (each consumer, after each commit): prepared once, not rebuilt by Kysely
// on every call, and run at once on SQLite (storage/stores/prepared.ts).
const COLUMNS = ['seq', 'id', 'org_id', 'type', 'data', 'created_at'] as const;
const POSITION = sql<number>`position`.as('position');
const SEQ_AS_POSITION = sql<number>`seq`.as('position');
const AFTER_POSITION = prepared((db, after: number, n: number) =>
  db
    .selectFrom('events')
    .select([POSITION, ...COLUMNS])
    .where(sql`position`, '>', after)
    .orderBy(sql`position`)
    .limit(n),
);
const AFTER_SEQ = prepared((db, after: number, n: number) =>
  db
    .selectFrom('events')
    .select([SEQ_AS_POSITION, ...COLUMNS])
    .where('seq', '>', after)
    .orderBy('seq')
    .limit(n),
);
const RANGE_BY_POSITION = prepared((db, orgId: string, after: number, upTo: number, n: number) =>
  db
    .selectFrom('events')
    .select([POSITION, ...COLUMNS])
    .where('org_id', '=', orgId)
    .where(sql`position`, '>', after)
    .where(sql`position`, '<=', upTo)
    .orderBy(sql`position`)
    .limit(n),
);
const RANGE_BY_SEQ = prepared((db, orgId: string, after: number, upTo: number, n: number) =>
  db
    .selectFrom('events')
    .select([SEQ_AS_POSITION, ...COLUMNS])
    .where('org_id', '=', orgId)
    .where('seq', '>', after)
    .where('seq', '<=', upTo)
    .orderBy('seq')
    .limit(n),
);

/**
 * Rows checked recently, by event id (see `#check`): more than one consumer reads each event, within
 * moments. At most this many, holding at most this many characters of data text (a message may be
 * 50,000 characters: the bound keeps the memory small, 45 MB was held without it; 2 M characters are
 * 4 MB of text, about 4,000 message events).
 */
const CHECKED_MAX = 4096;
const CHECKED_MAX_CHARS = 2 * 1024 * 1024;

type Wake = () => void;

export class OutboxReader {
  readonly name = 'outbox';
  readonly #pollMs: number;
  readonly #batch: number;
  readonly #listen: OutboxReaderOptions['listen'];
  readonly #listeners = new Set<Wake>();
  readonly #clock: Clock;
  #timer: ClockTimer | undefined;
  #unsubscribeBus: (() => void) | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  /** The sequencer pass in progress and whether another one was asked for meanwhile. */
  #sequencing: Promise<void> | undefined;
  #again = false;
  #retry: NodeJS.Timeout | undefined;
  #soon: NodeJS.Timeout | undefined;
  /** SQLite: a wake is queued for the end of this turn's promise callbacks (see `#onCommit`). */
  #wakeQueued = false;
  #stopped = false;
  /** Tells this reader's own NOTIFYs from other instances'. */
  readonly #instance = randomUUID();
  /** Dead-lettered event ids this process has logged already (a trailing one is read again). */
  readonly #dead = new Set<string>();
  /**
   * Rows found not to match their schema (by this reader, since it started): see "Dead letters"; reads
   * shared by consumers (`#sharedRead`); rows whose check was not repeated (`#passed`).
   */
  readonly stats = { deadLettered: 0, sharedReads: 0, checksReused: 0 };
  /** Wakes so far, and the in-memory consumers' reads in flight since the last one (see #sharedRead). */
  #wakes = 0;
  readonly #reads = new Map<string, { wake: number; events: Promise<OutboxEvent[]> }>();

  constructor(
    private readonly storage: Storage,
    private readonly bus: EventBus,
    private readonly log: Logger,
    opts: OutboxReaderOptions = {},
  ) {
    this.#pollMs = opts.pollMs ?? 1000;
    this.#clock = opts.clock ?? systemClock;
    this.#batch = opts.batch ?? 1000;
    this.#listen = opts.listen;
  }

  get usesSequencer(): boolean {
    return this.storage.numbersOutboxAfterCommit;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    this.#unsubscribeBus = this.bus.subscribe(() => this.#onCommit());
    this.#timer = this.#clock.setInterval(() => this.#onPoll(), this.#pollMs);
    if (this.usesSequencer && this.#listen) {
      try {
        const schema = (
          await sql<{ s: string }>`select current_schema() as s`.execute(this.storage.stores.db)
        ).rows[0]?.s;
        this.#unlisten = await this.#listen(OUTBOX_CHANNEL, (payload) => {
          const [forSchema, from] = payload.split(' ');
          if (forSchema === schema && from !== this.#instance && !this.#stopped) this.#wake();
        });
      } catch (err) {
        this.log.warn({ err }, "outbox: cannot LISTEN; other instances' events are found by polling");
      }
    }
    this.#onCommit(); // events left unnumbered by a previous run
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribeBus?.();
    this.#clock.clearTimeout(this.#timer);
    clearTimeout(this.#retry);
    clearTimeout(this.#soon);
    this.#soon = undefined;
    await this.#unlisten?.().catch(() => undefined);
    this.#unlisten = undefined;
    await this.#sequencing?.catch(() => undefined);
  }

  /** Calls `listener` whenever new events may be readable. Returns the unsubscribe function. */
  onWake(listener: Wake): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Events after `position`, in position order; through `db` (e.g. an open transaction) if given. */
  readAfter(position: number, limit: number, db: Executor = this.storage.stores.db): Promise<OutboxEvent[]> {
    const query = this.usesSequencer ? AFTER_POSITION : AFTER_SEQ;
    const read = (after: number, n: number): Promise<OutboxRow[]> =>
      query(db, after, n).then((r) => r.rows as OutboxRow[]);
    return this.#checked(read, position, limit, db);
  }

  /** Events of one organization with `after < position <= upTo`, in order, at most `limit` (resume). */
  readRange(orgId: string, after: number, upTo: number, limit: number): Promise<OutboxEvent[]> {
    const db = this.storage.stores.db;
    const query = this.usesSequencer ? RANGE_BY_POSITION : RANGE_BY_SEQ;
    const read = (from: number, n: number): Promise<OutboxRow[]> =>
      query(db, orgId, from, upTo, n).then((r) => r.rows as OutboxRow[]);
    return this.#checked(read, after, limit, db);
  }

  /** The newest position (0 when the outbox is empty): where a consumer that wants only new events starts. */
  async head(db: Executor = this.storage.stores.db): Promise<number> {
    const q = this.usesSequencer
      ? sql<{ p: number | null }>`select max(position) as p from events`
      : sql<{ p: number | null }>`select max(seq) as p from events`;
    return Number((await q.execute(db)).rows[0]?.p ?? 0);
  }

  /**
   * Reads rows with `read(after, n)` from `after` on and checks each against the catalogue; rows that
   * fail are dead-lettered (through `db`, so inside the caller's transaction if it has one) and read
   * past, so that up to `limit` valid events are returned whenever that many follow.
   */
  async #checked(
    read: (after: number, n: number) => Promise<OutboxRow[]>,
    after: number,
    limit: number,
    db: Executor,
  ): Promise<OutboxEvent[]> {
    const out: OutboxEvent[] = [];
    let asked = limit;
    let rows = await read(after, asked);
    for (;;) {
      const dead: EventDeadLetterRow[] = [];
      for (const r of rows) {
        const e = this.#check(r);
        if ('error' in e) dead.push(e.error);
        else out.push(e.event);
      }
      if (dead.length > 0) await new EventStore(db).deadLetter(dead);
      if (rows.length < asked || out.length >= limit || dead.length === 0) return out;
      // Dead rows took places of the page: read on for the rest.
      after = Number(rows[rows.length - 1]!.position);
      asked = limit - out.length;
      rows = await read(after, asked);
    }
  }

  /**
   * Rows that passed their check, by event id, with the type and data text checked: every event is read
   * by more than one consumer (the webhook fan-out in its transaction, the live feed and the committed
   * events after each wake), and a row whose type and text are the ones checked needs no second
   * JSON.parse and schema check. Anything else (another row under that id, a row never seen) is checked.
   */
  readonly #passed = new Map<string, { type: string; json: string; event: TypedEventData }>();
  #passedChars = 0;

  #check(r: OutboxRow): { event: OutboxEvent } | { error: EventDeadLetterRow } {
    const seen = this.#passed.get(r.id);
    let parsed: ReturnType<typeof parseEvent>;
    if (seen && seen.type === r.type && seen.json === r.data) {
      parsed = { ok: true, event: seen.event };
      this.stats.checksReused++;
    } else {
      try {
        parsed = parseEvent(r.type, JSON.parse(r.data));
      } catch {
        parsed = { ok: false, error: 'data is not JSON' };
      }
      if (parsed.ok && r.data.length <= CHECKED_MAX_CHARS / 4) {
        // The oldest go first (a Map iterates in insertion order). Clearing the whole map instead
        // lost the rows that a consumer a little behind the head was about to read again: under
        // load the fan-out's reads found none of them (2 parses an event; measured 2026-11-28).
        for (const [id, old] of this.#passed) {
          if (this.#passed.size < CHECKED_MAX && this.#passedChars + r.data.length <= CHECKED_MAX_CHARS)
            break;
          this.#passed.delete(id);
          this.#passedChars -= old.json.length;
        }
        this.#passed.set(r.id, { type: r.type, json: r.data, event: parsed.event });
        this.#passedChars += r.data.length;
      }
    }
    const position = Number(r.position);
    if (parsed.ok) {
      return {
        // One literal of one shape (not a spread of the parsed event): measured 2026-11-28, the spread
        // and its added fields were ~5 % of a POST's profile on SQLite.
        event: {
          type: parsed.event.type,
          data: parsed.event.data,
          position,
          seq: Number(r.seq),
          id: r.id,
          org_id: r.org_id,
          dataJson: r.data,
          created_at: r.created_at,
        } as OutboxEvent, // type and data are parseEvent's checked pair, taken apart
      };
    }
    if (!this.#dead.has(r.id)) {
      if (this.#dead.size >= 10_000) this.#dead.clear();
      this.#dead.add(r.id);
      this.stats.deadLettered++;
      this.log.error(
        { eventId: r.id, type: r.type, position, orgId: r.org_id, error: parsed.error },
        'outbox: event does not match its schema; dead-lettered (event_dead_letters), consumers read past it',
      );
    }
    return {
      error: {
        event_id: r.id,
        position,
        org_id: r.org_id,
        type: r.type.slice(0, 200),
        error: parsed.error,
        event_created_at: r.created_at,
        dead_at: this.#clock.nowIso(),
      },
    };
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
            const events = await this.#sharedRead(cursor, batch);
            if (events.length === 0) break;
            await handler(events);
            cursor = events[events.length - 1]!.position;
            // Fewer than asked: that was all there was. What is numbered later wakes us (`again`),
            // so no second read to find nothing.
            if (events.length < batch) break;
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

  /**
   * One read for the in-memory consumers that ask for the same page after the same wake (the live feed
   * and the committed-events listeners both follow the head, so one wake had each read and parse the
   * same rows). Shared only within one wake: a read started before a later wake may miss what that wake
   * announced, so a consumer woken later reads again. Consumers must not change the events they get.
   */
  #sharedRead(position: number, limit: number): Promise<OutboxEvent[]> {
    const key = `${position}:${limit}`;
    const inFlight = this.#reads.get(key);
    if (inFlight && inFlight.wake === this.#wakes) {
      this.stats.sharedReads++;
      return inFlight.events;
    }
    const entry = { wake: this.#wakes, events: this.readAfter(position, limit) };
    this.#reads.set(key, entry);
    const forget = () => {
      if (this.#reads.get(key) === entry) this.#reads.delete(key);
    };
    entry.events.then(forget, forget);
    return entry.events;
  }

  /** Numbers committed events now (PostgreSQL); resolves when done. Wakes consumers. */
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
          const numbered = await this.#sequenceOnce();
          if (numbered > 0) this.#wake();
          if (numbered === this.#batch) this.#again = true; // more are ready than one pass numbers
        } while (this.#again && !this.#stopped);
      } catch (err) {
        if (!this.#stopped) {
          this.log.error({ err }, 'outbox sequencer failed; retrying');
          this.#retry ??= setTimeout(() => {
            this.#retry = undefined;
            void this.sequence();
          }, 100);
          this.#retry.unref();
        }
      } finally {
        this.#sequencing = undefined;
      }
    })();
    return this.#sequencing;
  }

  /** The fallback: numbers what is left, then wakes the consumers in any case (see "Latency"). */
  #onPoll(): void {
    if (this.#stopped) return;
    if (!this.usesSequencer) return this.#wake();
    void this.sequence().then(() => this.#wake());
  }

  #onCommit(): void {
    if (this.#stopped) return;
    if (!this.usesSequencer) {
      // The transactions of one group commit publish one after the other as their promises resolve,
      // in the same turn: one wake for them all (each wake had every consumer read, most finding
      // nothing: 2.2 outbox reads a group commit under load, 1.5 after).
      if (this.#wakeQueued) return;
      this.#wakeQueued = true;
      process.nextTick(() => {
        this.#wakeQueued = false;
        if (!this.#stopped) this.#wake();
      });
      return;
    }
    // Commits that land within 1 ms share one sequencer pass (a transaction of its own on PostgreSQL).
    this.#soon ??= setTimeout(() => {
      this.#soon = undefined;
      void this.sequence();
    }, 1);
  }

  /**
   * One numbering pass: every unnumbered event it sees (committed ones only), in seq order, under the
   * per-schema advisory lock, in one statement (storage: migration 0008); NOTIFYs the other instances.
   */
  #sequenceOnce(): Promise<number> {
    return this.storage.stores.events.numberCommitted(this.#batch, this.#instance);
  }

  #wake(): void {
    this.#wakes++;
    for (const l of this.#listeners) {
      try {
        l();
      } catch (err) {
        this.log.error({ err }, 'outbox listener failed');
      }
    }
  }
}
