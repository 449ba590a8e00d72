import pg from 'pg';
import { namePgStatement } from './pg-statements.js';

/**
 * Group commit and lookup batching on PostgreSQL (issue 18, point 7).
 *
 * Under load, many statements of the same shape are ready at once: a message's insert for every POST,
 * a credential lookup for every request. Each pays the same fixed costs on both sides: a round trip
 * (a socket write that wakes a backend, and its answer), the executor's start-up, and for a write a
 * commit with its WAL flush (and the stored generated column's expression parsed again). Here the calls
 * of a kind made in one turn of the event loop go as **one** statement at the end of that turn; while
 * `maxInFlight` statements of the kind are running (one by default), calls wait for one to finish and
 * then go together. No timer: on a quiet server a call goes at the end of the turn it was made in, so
 * it answers as fast as before, and the batches grow only as work queues up (the load sets their
 * size). Measured (POST a message on PostgreSQL, 32 connections, rounds alternating): one statement in
 * flight gave the largest batches and the most throughput (median 0.58× the reference, against 0.50×
 * with two of each and 0.52× with one write and two lookups); sending at the end of the turn instead of
 * at once cut the statements that carried one call from ~1/3 to ~5 % (the handlers one batch's answer
 * resumes reach their next statement in the same turn), at the same throughput on one machine, and
 * fewer round trips where the database is across a network. A statement that stalls does not hold the
 * others back (`STALLED_AFTER_MS`).
 *
 * - `PgWriteBatches`: writes that are one statement of plain INSERTs outside any transaction (what
 *   pg-deferred-transaction.ts makes of a transaction that only inserted). A batch is each INSERT with
 *   one row per write (`values (…), (…)`) in one statement: one commit, all rows or none. If PostgreSQL
 *   refuses it (a constraint one row broke), every write of the batch is sent again alone for its own
 *   answer. A write is answered only after the statement holding it committed. The rows of a batch
 *   commit together, so their outbox events are numbered together; their order among themselves is not
 *   promised, as for writes that commit at the same moment.
 * - `PgLookupBatches`: reads outside any transaction that answer at most one row per call (the request
 *   path's credential with its channel). A batch reads every call's row in one statement, over
 *   `unnest` of the calls' parameters, in one snapshot taken after every call of it was made: what a
 *   call sees is as fresh as if it had been sent alone (a token revoked before a request arrived is
 *   revoked for it).
 */

interface Waiting<T, A> {
  item: T;
  resolve: (answer: A) => void;
  reject: (err: unknown) => void;
}

/** How a kind of call is sent: one alone, or several of one shape as one statement (answers in order). */
interface Sender<T, A> {
  alone(item: T, shape: string): Promise<A>;
  together(items: T[], shape: string): Promise<A[]>;
}

/**
 * How long the statements in flight may all have been running before a call stops waiting for them:
 * a statement that waits on a lock (an INSERT whose foreign-key check waits for a transaction that
 * deletes the channel, say) must not hold back everyone else's. A call made when every statement in
 * flight started longer ago than this goes at once, with the calls of its shape that waited, up to
 * `STALLED_MAX_IN_FLIGHT` statements in flight.
 */
const STALLED_AFTER_MS = 25;
const STALLED_MAX_IN_FLIGHT = 6;

/**
 * Holds calls back while `maxInFlight` are running, then sends those of one shape together. If
 * PostgreSQL refuses a statement of several calls, none of it took effect: each call is sent again
 * alone, for its own answer. Any other failure (the connection lost) leaves the outcome unknown, and
 * every call of the statement hears of it, as it would have alone.
 */
class Coalescer<T, A> {
  /** Start times of the statements in flight, oldest first. */
  readonly #inFlight: number[] = [];
  /** Calls waiting, by shape; a Map keeps the order in which each shape first waited. */
  readonly #waiting = new Map<string, Waiting<T, A>[]>();

  constructor(
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
    private readonly sender: Sender<T, A>,
  ) {}

  /** Whether the calls made in this turn of the event loop are sent at its end (see `run`). */
  #endOfTurn = false;

  /**
   * Queues the call. If a statement may go now, the calls of this turn of the event loop go at its end
   * (`setImmediate`, after the I/O callbacks of the turn): the requests a turn reads, or the handlers a
   * batch's answer resumes, reach the same point in the same turn, and go as one statement instead of
   * the first alone and the rest after it. Otherwise the call waits for a statement to finish.
   */
  run(item: T, shape: string): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      const queue = this.#waiting.get(shape);
      const w: Waiting<T, A> = { item, resolve, reject };
      if (queue) queue.push(w);
      else this.#waiting.set(shape, [w]);
      if (this.#inFlight.length < this.maxInFlight) {
        if (!this.#endOfTurn) {
          this.#endOfTurn = true;
          setImmediate(() => {
            this.#endOfTurn = false;
            this.#fill();
          });
        }
      } else if (this.#stalled()) this.#sendWaiting(shape);
    });
  }

  /** Sends waiting calls, those that waited longest first, while fewer than `maxInFlight` run. */
  #fill(): void {
    while (this.#inFlight.length < this.maxInFlight) {
      const first = this.#waiting.keys().next();
      if (first.done) return;
      this.#sendWaiting(first.value);
    }
  }

  async #dispatch(calls: Waiting<T, A>[], shape: string): Promise<void> {
    const started = performance.now();
    this.#inFlight.push(started);
    try {
      await this.#send(calls, shape);
    } finally {
      this.#inFlight.splice(this.#inFlight.indexOf(started), 1);
      // The calls that waited longest go next; above the usual number in flight (stalled statements)
      // only if those in flight are stalled too.
      if (this.#inFlight.length < this.maxInFlight) this.#fill();
      else {
        const first = this.#waiting.keys().next();
        if (!first.done && this.#stalled()) this.#sendWaiting(first.value);
      }
    }
  }

  async #send(calls: Waiting<T, A>[], shape: string): Promise<void> {
    if (calls.length === 1) {
      const [call] = calls as [Waiting<T, A>];
      await this.sender.alone(call.item, shape).then(call.resolve, call.reject);
      return;
    }
    let answers: A[];
    try {
      answers = await this.sender.together(
        calls.map((c) => c.item),
        shape,
      );
    } catch (err) {
      if (err instanceof pg.DatabaseError) for (const c of calls) await this.#send([c], shape);
      else for (const c of calls) c.reject(err);
      return;
    }
    calls.forEach((c, i) => c.resolve(answers[i]!));
  }

  /** Whether every statement in flight is stalled (the newest started long ago), and one more may go. */
  #stalled(): boolean {
    const running = this.#inFlight.length;
    return (
      running > 0 &&
      running < STALLED_MAX_IN_FLIGHT &&
      performance.now() - this.#inFlight[running - 1]! > STALLED_AFTER_MS
    );
  }

  /** Sends the waiting calls of `shape` (up to `maxBatch`) together. */
  #sendWaiting(shape: string): void {
    const queue = this.#waiting.get(shape);
    if (!queue) return;
    const calls = queue.splice(0, this.maxBatch);
    this.#waiting.delete(shape);
    if (queue.length > 0) this.#waiting.set(shape, queue); // to the back: other shapes go next
    void this.#dispatch(calls, shape);
  }
}

/** Calls made, and the statements sent for them (tests and benches read them). */
export interface BatchCounts {
  calls: number;
  statements: number;
}

/**
 * Gives a client back to the pool, or destroys it after an error PostgreSQL did not answer itself (a
 * broken connection must not go back to the pool).
 */
export function releaseClient(client: pg.PoolClient, err?: unknown): void {
  client.release(err !== undefined && !(err instanceof pg.DatabaseError) ? (err as Error) : undefined);
}

/** Runs one statement outside any transaction on a pooled connection (named: pg-statements.ts); its rows. */
export async function runPooled(
  pool: pg.Pool,
  sql: string,
  parameters: readonly unknown[],
): Promise<Record<string, unknown>[]> {
  namePgStatement(sql);
  // Not pool.query, which bypasses the named statements.
  const client = await pool.connect();
  let rows: Record<string, unknown>[];
  try {
    rows = (await client.query(sql, [...parameters])).rows as Record<string, unknown>[];
  } catch (err) {
    releaseClient(client, err);
    throw err;
  }
  releaseClient(client);
  return rows;
}

/** `runPooled`, counted. */
function query(
  pool: pg.Pool,
  counts: BatchCounts,
  sql: string,
  parameters: readonly unknown[],
): Promise<Record<string, unknown>[]> {
  counts.statements++;
  return runPooled(pool, sql, parameters);
}

/** `sql` with every parameter `$n` renumbered `$(n + offset)` (our own SQL: `$n` is never in a literal). */
export const renumberParameters = (sql: string, offset: number): string =>
  offset === 0 ? sql : sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);

/** Statements as one: all but the last as data-modifying CTEs `w0, w1, …` of the last. */
export function asOneStatement(statements: readonly string[]): string {
  const last = statements[statements.length - 1]!;
  if (statements.length === 1) return last;
  return `with ${statements
    .slice(0, -1)
    .map((s, i) => `w${i} as (${s})`)
    .join(', ')} ${last}`;
}

/** Batch statement texts, by shape and size: a few sizes of a few shapes, bounded all the same. */
class Texts {
  readonly #made = new Map<string, string>();
  get(shape: string, size: number, make: () => string): string {
    const key = `${size}\u0000${shape}`;
    let text = this.#made.get(key);
    if (text === undefined) {
      text = make();
      if (this.#made.size < 4096) this.#made.set(key, text);
    }
    return text;
  }
}

// --- writes ---

/** One part of a write: a plain `insert into … (…) values (…)` with numbered parameters `$1…`. */
export interface WritePart {
  sql: string;
  parameters: readonly unknown[];
}

/** `insert into <table> (<columns>) values (<one row>)`, and nothing after it. */
const SINGLE_ROW_INSERT = /^(insert into .+? values )(\((?:[^()']|\([^()']*\))*\))$/is;

/** Whether `sql` is a single-row INSERT; answers kept by text (the texts are our own few statements). */
const SINGLE_ROW: Map<string, boolean> = new Map();
function singleRowInsert(sql: string): boolean {
  let yes = SINGLE_ROW.get(sql);
  if (yes === undefined) {
    yes = SINGLE_ROW_INSERT.test(sql);
    if (SINGLE_ROW.size < 1024) SINGLE_ROW.set(sql, yes);
  }
  return yes;
}

/**
 * The statement of `rows` writes of the parts `texts` (with these parameter counts): each INSERT with
 * `rows` rows, the INSERTs as data-modifying CTEs; parameters part by part, row by row. Undefined if a
 * part is not a single-row INSERT. With one row it is the text pg-deferred-transaction.ts combines.
 */
export function batchedInsertSql(
  texts: readonly string[],
  counts: readonly number[],
  rows: number,
): string | undefined {
  const inserts: string[] = [];
  let offset = 0;
  for (let i = 0; i < texts.length; i++) {
    const m = SINGLE_ROW_INSERT.exec(texts[i]!);
    if (!m) return undefined;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) tuples.push(renumberParameters(m[2]!, offset + r * counts[i]!));
    inserts.push(m[1]! + tuples.join(', '));
    offset += counts[i]! * rows;
  }
  return inserts.length === 0 ? undefined : asOneStatement(inserts);
}

function writeShape(parts: readonly WritePart[]): string {
  let key = '';
  for (const p of parts) key += `${p.parameters.length}\u0001${p.sql}\u0000`;
  return key;
}

/** Group commit of one-statement writes (see the top of this file). */
export class PgWriteBatches {
  readonly #texts = new Texts();
  readonly #coalescer: Coalescer<readonly WritePart[], void>;

  constructor(
    private readonly pool: pg.Pool,
    maxInFlight = 1,
    maxRows = 64,
  ) {
    this.#coalescer = new Coalescer(maxInFlight, maxRows, {
      alone: (write, shape) => this.#write([write], shape),
      together: async (writes, shape) => {
        await this.#write(writes, shape);
        return writes.map(() => undefined);
      },
    });
  }

  /** Writes made, and the statements sent for them (a refused batch and its writes sent again alone). */
  readonly counts: BatchCounts = { calls: 0, statements: 0 };

  /** Whether a write can go in a batch: every part a single-row INSERT. */
  static batchable(parts: readonly WritePart[]): boolean {
    return parts.length > 0 && parts.every((p) => singleRowInsert(p.sql));
  }

  /** Runs the write (one statement, atomic); resolves once it is committed. */
  run(parts: readonly WritePart[]): Promise<void> {
    this.counts.calls++;
    return this.#coalescer.run(parts, writeShape(parts));
  }

  /** Writes of one shape (`writeShape` of their parts) as one statement. */
  async #write(writes: (readonly WritePart[])[], shape: string): Promise<void> {
    const parts = writes[0]!;
    const text = this.#texts.get(shape, writes.length, () => {
      const made = batchedInsertSql(
        parts.map((p) => p.sql),
        parts.map((p) => p.parameters.length),
        writes.length,
      );
      if (made === undefined) throw new Error('a write that is not plain INSERTs was batched');
      return made;
    });
    const parameters: unknown[] = [];
    for (let p = 0; p < parts.length; p++)
      for (const w of writes) for (const v of w[p]!.parameters) parameters.push(v);
    await query(this.pool, this.counts, text, parameters);
  }
}

// --- lookups ---

interface Lookup {
  sql: string;
  parameters: readonly unknown[];
}

/** The column a batched lookup answers each row's call with. */
const CALL_COLUMN = 'wr_call';

/**
 * `calls` calls of a lookup (`sql`, with `count` text parameters) as one statement: the parameters as
 * arrays (`$n` the n-th parameter of every call), each call's row joined to its number.
 */
export function batchedLookupSql(sql: string, count: number): string {
  const columns = Array.from({ length: count }, (_, i) => `p${i + 1}`);
  const arrays = columns.map((_, i) => `$${i + 1}::text[]`).join(', ');
  const inner = sql.replace(/\$(\d+)/g, (_, n: string) => `wr_calls.p${n}`);
  return (
    `select wr_calls.${CALL_COLUMN}::int as ${CALL_COLUMN}, wr_row.* from unnest(${arrays}) with ordinality ` +
    `as wr_calls(${columns.join(', ')}, ${CALL_COLUMN}) cross join lateral (${inner}) as wr_row`
  );
}

/** Lookup batching: reads of at most one row per call (see the top of this file). */
export class PgLookupBatches {
  readonly #texts = new Texts();
  readonly #coalescer: Coalescer<Lookup, Record<string, unknown>[]>;

  constructor(
    private readonly pool: pg.Pool,
    maxInFlight = 1,
    maxCalls = 64,
  ) {
    this.#coalescer = new Coalescer(maxInFlight, maxCalls, {
      alone: (call) => query(this.pool, this.counts, call.sql, [...call.parameters]),
      together: (calls) => this.#lookUp(calls),
    });
  }

  /** Lookups made, and the statements sent for them. */
  readonly counts: BatchCounts = { calls: 0, statements: 0 };

  /** Whether a call can go in a batch: only string parameters (they are sent as text arrays). */
  static batchable(parameters: readonly unknown[]): boolean {
    return parameters.length > 0 && parameters.every((p) => typeof p === 'string');
  }

  /** Runs the lookup; its rows (at most one), with a `wr_call` column too when it went in a batch. */
  run<R>(sql: string, parameters: readonly unknown[]): Promise<R[]> {
    this.counts.calls++;
    return this.#coalescer.run({ sql, parameters }, sql) as Promise<R[]>;
  }

  /** Several calls of one lookup as one statement: each call's rows. */
  async #lookUp(calls: Lookup[]): Promise<Record<string, unknown>[][]> {
    const { sql, parameters } = calls[0]!;
    const count = parameters.length;
    const text = this.#texts.get(sql, count, () => batchedLookupSql(sql, count));
    const arrays = Array.from({ length: count }, (_, i) => calls.map((c) => c.parameters[i]));
    const rows = await query(this.pool, this.counts, text, arrays);
    const answers: Record<string, unknown>[][] = calls.map(() => []);
    // Each row keeps its `wr_call` column: copying the row without it cost 2.7 % of the server's busy
    // time in a profile of POST under load, and the readers read the columns they know.
    for (const row of rows) answers[(row[CALL_COLUMN] as number) - 1]?.push(row);
    return answers;
  }
}
