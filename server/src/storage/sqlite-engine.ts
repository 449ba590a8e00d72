import type BetterSqlite3 from 'better-sqlite3';
import {
  type CompiledQuery,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';

/**
 * Our SQLite driver for Kysely, built around one writer connection and **group commit**.
 *
 * Why: with WAL and synchronous=NORMAL, the cost of a small write transaction is its commit (every
 * page it touched is appended to the WAL, with a lock round trip), not its statements. Consecutive
 * messages land on the same b-tree leaves, so committing a group of transactions at once writes those
 * pages once for all of them.
 *
 * How: a write transaction (`engineTransaction`) runs as a SAVEPOINT inside an open group transaction
 * and, once released, waits for the group's COMMIT, which runs when the event loop has handled the
 * I/O that was ready (setImmediate): every transaction that finished in that turn shares one commit.
 * Nobody is answered before their commit: a transaction's promise resolves only after it, and if the
 * commit fails, every transaction of the group fails. Reads outside a transaction never see the
 * uncommitted group: while one is open they run on a second, read-only connection that sees the last
 * commit (WAL lets it read while the writer writes).
 *
 * Reads outside a transaction are also answered from a committed-read cache, emptied by every commit
 * (see `#results`).
 *
 * The writer is guarded by a FIFO lock (a transaction owns it until it ends), visible so that
 * `prepared` statements on the request path can run synchronously without Kysely's promise chain
 * whenever that is safe. Statements are prepared once per SQL text and reused.
 */
export class SqliteEngine {
  readonly #statements = new Map<string, BetterSqlite3.Statement>();
  readonly #readStatements = new Map<string, BetterSqlite3.Statement>();
  #locked = false;
  /** Waiters in arrival order; unlock hands the connection to the first (no wake-everyone herd). */
  readonly #waiters: (() => void)[] = [];
  /** The open group transaction, if any. */
  #group: Group | undefined;
  /** Commits of group transactions so far (for tests and diagnostics). */
  groupCommits = 0;
  /** A transaction (savepoint) is in progress on the writer. */
  #inTransaction = false;
  /** A checkpoint was asked for: run it after the next commit (or now, if nothing is open). */
  #checkpointDue = false;
  /** The group's commit came due while a transaction was in progress: commit when it ends. */
  #commitWhenDone = false;
  /**
   * Runs on the writer right before every COMMIT, in the transaction being committed (and after a write
   * committed on its own): the search index's pending messages (migration 0007). May throw: the
   * transaction then rolls back. `force`: whatever there is to do, now.
   */
  beforeCommit: ((force?: boolean) => void) | undefined;

  /**
   * @param raw the one writer connection
   * @param reader a read-only connection to the same file, for reads outside transactions while a
   *   group is open (without one, such a read commits the group first).
   */
  constructor(
    readonly raw: BetterSqlite3.Database,
    readonly reader?: BetterSqlite3.Database,
  ) {}

  statement(text: string): BetterSqlite3.Statement {
    return cached(this.#statements, this.raw, text);
  }

  /** Runs one statement synchronously on the writer. The caller must own the connection. */
  run<R>(text: string, parameters: readonly unknown[]): QueryResult<R> {
    const stmt = this.statement(text);
    if (stmt.reader) return { rows: allRows<R>(stmt, parameters) };
    const { changes, lastInsertRowid } = stmt.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /**
   * Runs a statement that is not part of a transaction, now: a read sees committed data only; a write
   * commits at once, or, if a group is open, joins it and its promise resolves after the group's
   * commit. The connection must be free or owned by the caller's (non-transaction) statement.
   * Reads may be answered from the committed-read cache (see `#results`).
   */
  runOutsideTransaction<R>(
    text: string,
    parameters: readonly unknown[],
  ): QueryResult<R> | Promise<QueryResult<R>> {
    const stmt = this.statement(text);
    if (isRead(stmt)) {
      if (this.#group && !this.reader) this.commitGroup(); // no reader (in-memory database): commit first
      return this.#committedRows<R>(stmt, text, parameters);
    }
    // No group open: commit on its own at once (holding the writer for one event-loop turn would send
    // every read of that turn to the reader). Otherwise join the group and resolve after its commit.
    if (!this.#group) {
      try {
        const result = this.run<R>(text, parameters);
        try {
          this.beforeCommit?.(); // in a transaction of its own, if it has anything to do
        } catch {
          // The write is committed; what is left to do is done by the next commit (which fails if it can't).
        }
        return result;
      } finally {
        this.#clearResults();
      }
    }
    const group = this.#joinGroup();
    try {
      const result = this.run<R>(text, parameters);
      return group.committed.then(() => result);
    } catch (err) {
      this.#checkGroupAlive();
      throw err;
    }
  }

  /**
   * Runs a read while a transaction holds the writer: on the reader connection, which sees the last
   * commit. Undefined when the statement is not a read (or there is no reader): it must wait its turn.
   */
  readCommitted<R>(text: string, parameters: readonly unknown[]): QueryResult<R> | undefined {
    if (!this.reader) return undefined;
    const stmt = this.statement(text);
    if (!isRead(stmt)) return undefined;
    return this.#committedRows<R>(stmt, text, parameters);
  }

  /**
   * Committed-read cache: results of reads made outside any transaction (at most `CACHED_ROWS_MAX` rows
   * each, at most `CACHED_RESULTS_MAX` results, `CACHED_ROWS_TOTAL` rows and `CACHED_BYTES_TOTAL` in
   * all), keyed by SQL and parameters, and emptied by every commit on the writer — the way the
   * database changes while the server runs (and, within a millisecond, when another process writes to
   * the file: see `#noticeOtherWriters`). No query of ours asks SQLite for the time or a random value.
   * So an entry is what the query would return now. Rows are frozen: they are shared by every caller.
   * (A read whose arguments change on every call, a timestamp say, would only churn it: compare times
   * in code instead, as `findByToken` does.)
   */
  readonly #results = new Map<string, unknown[]>();
  #cachedRows = 0;
  #cachedBytes = 0;

  #dataVersion: BetterSqlite3.Statement | undefined;
  #lastDataVersion: unknown;
  #checkedAt = 0;

  /**
   * Another process writing to the file (an operator's sqlite3 session, a second server started by
   * mistake) bypasses our commits: the reader's `data_version` tells, checked at most once a
   * millisecond, and the cache starts afresh when it moved.
   */
  #noticeOtherWriters(): void {
    if (!this.reader) return; // in-memory: no other connection can exist
    const now = performance.now();
    if (now - this.#checkedAt < 1) return;
    this.#checkedAt = now;
    this.#dataVersion ??= this.reader.prepare('pragma data_version').pluck();
    const v = this.#dataVersion.get();
    if (v !== this.#lastDataVersion) {
      this.#lastDataVersion = v;
      this.#clearResults();
    }
  }

  #clearResults(): void {
    if (this.#results.size === 0) return;
    this.#results.clear();
    this.#cachedRows = 0;
    this.#cachedBytes = 0;
  }

  #committedRows<R>(
    stmt: BetterSqlite3.Statement,
    text: string,
    parameters: readonly unknown[],
  ): QueryResult<R> {
    // With a group open (uncommitted changes on the writer), committed data is on the reader.
    const source =
      this.#group || this.#inTransaction ? cached(this.#readStatements, this.reader!, text) : stmt;
    this.#noticeOtherWriters();
    const key = cacheKey(text, parameters);
    let rows = this.#results.get(key) as R[] | undefined;
    if (!rows) {
      rows = allRows<R>(source, parameters);
      const bytes = rows.length <= CACHED_ROWS_MAX ? approximateSize(rows) : Infinity;
      if (bytes <= CACHED_BYTES_TOTAL / 8) {
        for (const r of rows) Object.freeze(r);
        Object.freeze(rows);
        // A bound on what the cache holds (results, rows, bytes), whatever the queries: start afresh.
        if (
          this.#results.size >= CACHED_RESULTS_MAX ||
          this.#cachedRows + rows.length > CACHED_ROWS_TOTAL ||
          this.#cachedBytes + bytes > CACHED_BYTES_TOTAL
        )
          this.#clearResults();
        this.#results.set(key, rows);
        this.#cachedRows += rows.length;
        this.#cachedBytes += bytes;
      }
    }
    // A fresh array each time: callers may reorder what they get (Kysely's migrator sorts its rows in
    // place, which threw on a restart with two migrations or more); the rows themselves stay frozen.
    return { rows: Object.isFrozen(rows) ? rows.slice() : rows };
  }

  // --- transactions and group commit ---

  /** Starts a transaction (a savepoint in the open group); returns its group. The caller holds the lock. */
  beginTransaction(): Group {
    const group = this.#joinGroup();
    this.statement('savepoint wr_tx').run();
    this.#inTransaction = true;
    return group;
  }

  /** Ends the transaction begun by `beginTransaction`: keeps its changes in the group, or undoes them. */
  endTransaction(keep: boolean): void {
    this.#inTransaction = false;
    if (!this.raw.inTransaction) {
      this.#commitWhenDone = false;
      // SQLite rolled back the whole group (e.g. disk full): nobody in it may be told it committed.
      this.#checkGroupAlive();
      return;
    }
    if (!keep) this.statement('rollback to wr_tx').run();
    this.statement('release wr_tx').run();
    if (this.#commitWhenDone) {
      this.#commitWhenDone = false;
      this.commitGroup();
    }
  }

  /** A plain transaction outside group commit (Kysely's own `transaction()`, used by migrations). */
  beginPlainTransaction(): void {
    this.commitGroup();
    this.statement('begin').run();
    this.#inTransaction = true;
  }

  endPlainTransaction(commit: boolean): void {
    this.#inTransaction = false;
    if (this.raw.inTransaction) {
      if (commit)
        try {
          this.beforeCommit?.();
        } catch (err) {
          this.statement('rollback').run();
          throw err;
        }
      this.statement(commit ? 'commit' : 'rollback').run();
    }
    if (commit) this.#clearResults();
  }

  get inTransaction(): boolean {
    return this.#inTransaction;
  }

  /** Commits the open group now; every transaction in it is told the outcome. Not inside a transaction. */
  commitGroup(): void {
    const group = this.#group;
    if (!group) return;
    this.#group = undefined;
    try {
      if (!this.raw.inTransaction) throw new Error('the group transaction was rolled back by SQLite');
      this.beforeCommit?.();
      this.statement('commit').run();
      this.#clearResults();
      this.groupCommits++;
      group.resolve();
      if (this.#checkpointDue) this.#checkpoint();
    } catch (err) {
      try {
        if (this.raw.inTransaction) this.statement('rollback').run();
      } catch {
        // the connection is broken: the members still hear of the failure below
      }
      group.reject(err);
    }
  }

  /**
   * Asks for a checkpoint by the writer itself, between two commits: unlike the worker's, it cannot be
   * overtaken by new commits, so it copies the whole WAL back and the next write starts the WAL over.
   */
  checkpointSoon(): void {
    this.#checkpointDue = true;
    if (!this.#group && !this.#inTransaction && this.raw.open) this.#checkpoint();
  }

  #checkpoint(): void {
    this.#checkpointDue = false;
    try {
      this.raw.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // busy (the worker is checkpointing): it will ask again
    }
  }

  #joinGroup(): Group {
    this.#checkGroupAlive();
    if (this.#group) return this.#group;
    this.statement('begin').run();
    const group = new Group();
    this.#group = group;
    setImmediate(() => {
      if (this.#group !== group) return;
      // A transaction in progress (awaiting something mid-way) is part of the group: commit after it.
      if (this.#inTransaction) this.#commitWhenDone = true;
      else this.commitGroup();
    });
    return group;
  }

  /** If SQLite ended the group's transaction on its own (after an I/O error), fails the group. */
  #checkGroupAlive(): void {
    if (this.#group && !this.raw.inTransaction) this.commitGroup();
  }

  // --- the writer lock ---

  get locked(): boolean {
    return this.#locked;
  }

  /** Transactions waiting for the writer (metrics). */
  get waiting(): number {
    return this.#waiters.length;
  }

  lock(): Promise<void> {
    if (!this.#locked) {
      this.#locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  unlock(): void {
    const next = this.#waiters.shift();
    if (next)
      next(); // stays locked: ownership passes to the next waiter
    else this.#locked = false;
  }
}

/** A group transaction: the commit its members wait for. */
class Group {
  resolve!: () => void;
  reject!: (err: unknown) => void;
  readonly committed = new Promise<void>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
  constructor() {
    this.committed.catch(() => {}); // members see the failure; an unwatched group is not an unhandled rejection
  }
}

function cached(cache: Map<string, BetterSqlite3.Statement>, db: BetterSqlite3.Database, text: string) {
  let stmt = cache.get(text);
  if (!stmt) {
    if (cache.size >= 1000) cache.clear();
    stmt = db.prepare(text);
    if (stmt.reader) {
      stmt.raw(true);
      ROW_BUILDERS.set(stmt, rowBuilder(stmt.columns().map((c) => c.name)));
    }
    cache.set(text, stmt);
  }
  return stmt;
}

const CACHED_RESULTS_MAX = 2000;
const CACHED_ROWS_MAX = 100;
const CACHED_ROWS_TOTAL = 20_000;
/** Messages may be 50,000 characters: rows alone do not bound the memory. One result: an eighth. */
const CACHED_BYTES_TOTAL = 64 * 1024 * 1024;

/** Roughly the memory of a result: two bytes a character of its strings, eight a number. */
function approximateSize(rows: readonly unknown[]): number {
  let n = 0;
  for (const r of rows) {
    const o = r as Record<string, unknown>;
    for (const k in o) {
      const v = o[k];
      n += typeof v === 'string' ? 2 * v.length : 8;
    }
  }
  return n;
}

/** Parameters are strings, numbers, bigints or null; the prefixes keep 1, '1' and null apart. */
function cacheKey(text: string, parameters: readonly unknown[]): string {
  let key = text;
  for (const p of parameters) key += p === null ? '\u0001n' : `\u0001${typeof p}:${String(p)}`;
  return key;
}

type RowBuilder = (values: unknown[]) => unknown;
const ROW_BUILDERS = new WeakMap<BetterSqlite3.Statement, RowBuilder>();

/**
 * Rows come from SQLite as arrays (`raw` mode) and become objects here, through a function made for
 * the statement's columns that returns one object literal: half the cost of letting better-sqlite3
 * build each object property by property (measured: 20 message rows, 107 µs → 63 µs). The column
 * names are quoted with JSON.stringify, so no name can inject code. A repeated name keeps the last
 * value, as better-sqlite3 does.
 */
function rowBuilder(names: string[]): RowBuilder {
  const fields = names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ');
  return new Function('v', `return { ${fields} };`) as RowBuilder;
}

function allRows<R>(stmt: BetterSqlite3.Statement, parameters: readonly unknown[]): R[] {
  const build = ROW_BUILDERS.get(stmt)!;
  const rows = stmt.all(parameters) as unknown[][];
  const out = new Array<R>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = build(rows[i]!) as R;
  return out;
}

class EngineConnection implements DatabaseConnection {
  constructor(private readonly engine: SqliteEngine) {}

  executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const { engine } = this;
    if (engine.inTransaction) return Promise.resolve(engine.run<R>(q.sql, q.parameters));
    return Promise.resolve(engine.runOutsideTransaction<R>(q.sql, q.parameters));
  }

  async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(q.query)) throw new Error('SQLite streams only select queries');
    if (!this.engine.inTransaction) this.engine.commitGroup();
    const stmt = this.engine.statement(q.sql);
    const build = ROW_BUILDERS.get(stmt)!;
    for (const row of stmt.iterate(q.parameters)) yield { rows: [build(row as unknown[]) as R] };
  }
}

class EngineDriver implements Driver {
  readonly #connection: EngineConnection;
  constructor(private readonly engine: SqliteEngine) {
    this.#connection = new EngineConnection(engine);
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    await this.engine.lock();
    return this.#connection;
  }
  async beginTransaction(): Promise<void> {
    this.engine.beginPlainTransaction();
  }
  async commitTransaction(): Promise<void> {
    this.engine.endPlainTransaction(true);
  }
  async rollbackTransaction(): Promise<void> {
    this.engine.endPlainTransaction(false);
  }
  async releaseConnection(): Promise<void> {
    this.engine.unlock();
  }
  async destroy(): Promise<void> {
    this.engine.commitGroup();
    this.engine.reader?.close();
    this.engine.raw.close();
  }
}

// Which engine stands behind a Kysely instance (found through its adapter, shared with transactions).
const ENGINES = new WeakMap<DialectAdapter, SqliteEngine>();
// Kysely instances bound to the connection while it is held (a transaction in progress).
const HOLDERS = new WeakSet<object>();

export function engineDialect(engine: SqliteEngine): Dialect {
  return {
    createAdapter: () => {
      const adapter = new SqliteAdapter();
      ENGINES.set(adapter, engine);
      return adapter;
    },
    createDriver: () => new EngineDriver(engine),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createIntrospector: (db: Kysely<unknown>) => new SqliteIntrospector(db),
  };
}

/**
 * Runs a prepared statement at once, without Kysely's promise chain, when that is safe: inside the
 * transaction that holds the connection, or when the connection is free (a write then commits at once,
 * or joins the open group and resolves after its commit); a read while a transaction holds the writer runs on the
 * reader connection (committed data, no waiting). Reads outside a transaction may be answered from
 * the committed-read cache. Undefined: not ours to run now, go through Kysely (which
 * waits for the connection).
 */
export function runNow<R>(
  db: Kysely<unknown>,
  text: string,
  parameters: readonly unknown[],
): QueryResult<R> | Promise<QueryResult<R>> | undefined {
  const engine = ENGINES.get(db.getExecutor().adapter);
  if (!engine) return undefined;
  if (HOLDERS.has(db)) return engine.run<R>(text, parameters);
  if (!engine.locked) return engine.runOutsideTransaction<R>(text, parameters);
  return engine.readCommitted<R>(text, parameters);
}

/**
 * A transaction on our engine: holds the writer for `fn` as a savepoint of the open group, with the
 * bound Kysely instance marked as the holder (so prepared statements inside run synchronously), then
 * resolves once the group has committed (or rejects if it could not).
 */
export async function engineTransaction<DB, T>(
  db: Kysely<DB>,
  engine: SqliteEngine,
  fn: (trx: Kysely<DB>) => Promise<T>,
): Promise<T> {
  let group: { committed: Promise<void> } | undefined;
  const result = await db.connection().execute(async (conn) => {
    HOLDERS.add(conn);
    group = engine.beginTransaction();
    try {
      const value = await fn(conn);
      engine.endTransaction(true);
      return value;
    } catch (err) {
      engine.endTransaction(false);
      throw err;
    } finally {
      HOLDERS.delete(conn);
    }
  });
  await group!.committed;
  return result;
}

/**
 * A read: returns rows and writes nothing. `reader` alone is not enough: an INSERT/UPDATE … RETURNING
 * returns rows too, and taken for a read it would be answered from the committed-read cache (the write
 * skipped) or sent to the read-only connection.
 */
function isRead(stmt: BetterSqlite3.Statement): boolean {
  return stmt.reader && stmt.readonly;
}
