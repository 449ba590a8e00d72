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
 * Reads outside a transaction are also answered from a committed-read cache; a commit drops the results
 * that read a table it wrote (see `#results`).
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
  #beforeCommit: ((force?: boolean) => boolean | void) | undefined;

  /**
   * Runs on the writer right before every COMMIT, in the transaction being committed (and after a write
   * committed on its own): the search index's pending messages (migration 0007). May throw: the
   * transaction then rolls back. `force`: whatever there is to do, now. Answers whether it wrote
   * (anything but `false` counts as a write of any table: the committed-read cache starts afresh).
   */
  get beforeCommit(): ((force?: boolean) => boolean | void) | undefined {
    return this.#beforeCommit;
  }

  set beforeCommit(hook: ((force?: boolean) => boolean | void) | undefined) {
    this.#beforeCommit =
      hook &&
      ((force) => {
        const wrote = hook(force);
        if (wrote !== false) this.#wroteUnknown();
        return wrote;
      });
  }

  /**
   * @param raw the one writer connection. Every write on it goes through this engine (`run`,
   *   `runOutsideTransaction`, transactions) or `beforeCommit`: the committed-read cache learns from
   *   them which tables changed (a write straight on `raw` would leave stale results behind).
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
    if (isRead(stmt)) return { rows: allRows<R>(stmt, parameters) };
    this.#noteWrite(stmt, text, parameters);
    try {
      if (stmt.reader) return { rows: allRows<R>(stmt, parameters) }; // … RETURNING
      const { changes, lastInsertRowid } = stmt.run(parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    } finally {
      // Outside any transaction, the statement committed on its own.
      if (!this.#group && !this.#inTransaction) this.#committed();
    }
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
        this.#committed();
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
   * all), keyed by SQL and parameters. Each result remembers the tables its statement reads, and a
   * commit drops the results that read a table it wrote: the tables every write statement writes are
   * known from its program (`footprint`: EXPLAIN, triggers and foreign-key actions included), gathered
   * until the commit (`#written`). What is not understood counts as every table: a result whose
   * statement reads a virtual table, or no table at all, is dropped by any commit that wrote; a commit
   * that wrote a virtual table, changed the schema or ran `beforeCommit`'s indexing drops every result.
   * So the sign-in, channel and membership reads every request makes outlive the commits of messages
   * and events (measured: bench/notes/post-sqlite-profile.md). Another process writing to the file is
   * noticed within a millisecond (`#noticeOtherWriters`) and empties the cache. No query of ours asks
   * SQLite for the time or a random value. So an entry is what the query would return now. Rows are
   * frozen: they are shared by every caller; each caller gets its own copy of the array (the cached
   * array is not frozen: V8 copies a frozen array ~15× slower, 700 against 40 ns, 1.5 % of a POST).
   * (A read whose arguments change on every call, a timestamp say, would only churn it: compare times
   * in code instead, as `findByToken` does.)
   */
  readonly #results = new Map<string, CachedResult>();
  /** Keys of the cached results by table read (`ANY_TABLE`: results whose tables are not known). */
  readonly #byTable = new Map<string, Set<string>>();
  #cachedRows = 0;
  #cachedBytes = 0;
  /** Tables written since the last commit; `#writtenAll`: a write whose tables are not known. */
  readonly #written = new Set<string>();
  #writtenAll = false;
  /** A statement whose writes are not known ran (a schema change, say): footprints are worked out again. */
  #schemaMayChange = false;
  /** Footprints of statements by SQL text (dropped when the schema may have changed). */
  readonly #footprints = new Map<string, Footprint>();
  /** Table of each root page of the main schema (dropped with the footprints). */
  #tableOf: Map<number, string> | undefined;

  #dataVersion: BetterSqlite3.Statement | undefined;
  #lastDataVersion: unknown;
  #checkedAt = 0;

  /**
   * Another process writing to the file (an operator's sqlite3 session, a second server started by
   * mistake) bypasses our commits: the writer's `data_version` tells (it moves with every other
   * connection's commit, never with its own), checked at most once a millisecond, and the cache starts
   * afresh when it moved (the schema may have changed too: footprints are worked out again).
   */
  #noticeOtherWriters(): void {
    if (!this.reader) return; // in-memory: no other connection can exist
    const now = performance.now();
    if (now - this.#checkedAt < 1) return;
    this.#checkedAt = now;
    this.#dataVersion ??= this.raw.prepare('pragma data_version').pluck();
    const v = this.#dataVersion.get();
    if (v !== this.#lastDataVersion) {
      this.#lastDataVersion = v;
      this.#clearResults();
      this.#footprints.clear();
      this.#tableOf = undefined;
    }
  }

  /**
   * A short name for each statement text, for the cache's keys: a statement's text is long (several
   * hundred characters) and the same string object on every call of a prepared statement, so its hash is
   * kept with it and finding its name costs nothing, where a key made of the whole text was hashed (and
   * compared) on every read: ~1.4 µs for a text of 800 characters. Names are never reused: when the
   * map is full it starts afresh with the results (no key of a forgotten name stays in the cache).
   */
  readonly #textIds = new Map<string, string>();
  #nextTextId = 0;

  #textId(text: string): string {
    let id = this.#textIds.get(text);
    if (id === undefined) {
      if (this.#textIds.size >= TEXT_IDS_MAX) {
        this.#textIds.clear();
        this.#clearResults();
      }
      this.#textIds.set(text, (id = `#${(this.#nextTextId++).toString(36)}`));
    }
    return id;
  }

  #clearResults(): void {
    if (this.#results.size === 0) return;
    this.#results.clear();
    this.#byTable.clear();
    this.#cachedRows = 0;
    this.#cachedBytes = 0;
  }

  #footprint(stmt: BetterSqlite3.Statement, text: string, parameters: readonly unknown[]): Footprint {
    let f = this.#footprints.get(text);
    if (!f) {
      if (this.#footprints.size >= 2000) this.#footprints.clear();
      this.#tableOf ??= tablesByRootPage(this.raw);
      // A multi-row insert writes what its one-row form writes: worked out once for every row count
      // (EXPLAIN of a 71-row insert took ~4 ms; each row count is a new text).
      const one = isRead(stmt) ? undefined : oneRowForm(text, parameters);
      f = one && this.#footprints.get(one.text);
      if (!f && one) {
        f = footprint(this.raw, this.#tableOf, stmt, one.text, one.parameters);
        if (f.writes === null)
          f = undefined; // not understood in that form: the statement itself
        else this.#footprints.set(one.text, f);
      }
      f ??= footprint(this.raw, this.#tableOf, stmt, text, parameters);
      this.#footprints.set(text, f);
    }
    return f;
  }

  /** Notes the tables a write statement (about to run on the writer) writes, for the next commit. */
  #noteWrite(stmt: BetterSqlite3.Statement, text: string, parameters: readonly unknown[]): void {
    const { writes } = this.#footprint(stmt, text, parameters);
    if (writes === null) {
      this.#schemaMayChange = true;
      this.#wroteUnknown();
    } else for (const t of writes) this.#written.add(t);
  }

  /** A write whose tables are not known: the next commit empties the cache (now, if none is open). */
  #wroteUnknown(): void {
    if (this.#writtenAll && (this.#group || this.#inTransaction)) return;
    this.#writtenAll = true;
    if (!this.#group && !this.#inTransaction) this.#committed();
  }

  /** After a commit (or what may have been one): drops the results that read what it wrote. */
  #committed(): void {
    if (this.#writtenAll) {
      this.#writtenAll = false;
      this.#written.clear();
      this.#clearResults();
      if (this.#schemaMayChange) {
        this.#schemaMayChange = false;
        this.#footprints.clear();
        this.#tableOf = undefined;
      }
      return;
    }
    if (this.#written.size === 0) return;
    if (this.#results.size > 0) {
      for (const t of this.#written) this.#dropReadersOf(t);
      this.#dropReadersOf(ANY_TABLE);
    }
    this.#written.clear();
  }

  #dropReadersOf(table: string): void {
    const keys = this.#byTable.get(table);
    if (!keys) return;
    this.#byTable.delete(table);
    for (const key of keys) {
      const entry = this.#results.get(key);
      if (!entry) continue;
      this.#results.delete(key);
      this.#cachedRows -= entry.rows.length;
      this.#cachedBytes -= entry.bytes;
      for (const t of entry.tables) if (t !== table) this.#byTable.get(t)?.delete(key);
    }
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
    const key = cacheKey(this.#textId(text), parameters);
    const hit = this.#results.get(key);
    if (hit) return { rows: hit.rows.slice() as R[] };
    const rows = allRows<R>(source, parameters);
    const bytes = rows.length <= CACHED_ROWS_MAX ? approximateSize(rows) : Infinity;
    if (bytes <= CACHED_BYTES_TOTAL / 8) {
      const reads = this.#footprint(stmt, text, parameters).reads;
      // A bound on what the cache holds (results, rows, bytes), whatever the queries: start afresh.
      if (
        this.#results.size >= CACHED_RESULTS_MAX ||
        this.#cachedRows + rows.length > CACHED_ROWS_TOTAL ||
        this.#cachedBytes + bytes > CACHED_BYTES_TOTAL
      )
        this.#clearResults();
      for (const r of rows) Object.freeze(r);
      const tables = reads === null || reads.length === 0 ? [ANY_TABLE] : reads;
      this.#results.set(key, { rows, bytes, tables });
      for (const t of tables) {
        let keys = this.#byTable.get(t);
        if (!keys) this.#byTable.set(t, (keys = new Set()));
        keys.add(key);
      }
      this.#cachedRows += rows.length;
      this.#cachedBytes += bytes;
      // A fresh array each time: callers may reorder what they get (Kysely's migrator sorts its rows
      // in place, which threw on a restart with two migrations or more); the rows themselves stay frozen.
      return { rows: rows.slice() };
    }
    return { rows };
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
    // Kysely's own transactions are migrations: whatever they did, the cache starts afresh.
    this.#writtenAll = true;
    this.#schemaMayChange = true;
    this.#committed();
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
      this.#beforeCommit?.();
      this.statement('commit').run();
      this.#committed();
      this.groupCommits++;
      group.resolve();
      if (this.#checkpointDue) this.#checkpoint();
    } catch (err) {
      try {
        if (this.raw.inTransaction) this.statement('rollback').run();
      } catch {
        // the connection is broken: the members still hear of the failure below
      }
      // Nothing of the group was kept; the cache starts afresh all the same (a cheap certainty).
      this.#writtenAll = true;
      this.#committed();
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

interface CachedResult {
  rows: readonly unknown[];
  bytes: number;
  /** The tables its statement reads (`ANY_TABLE` when not known). */
  tables: readonly string[];
}

/** What a statement reads and writes: table names (an index counts as its table); null: not known. */
interface Footprint {
  reads: readonly string[] | null;
  writes: readonly string[] | null;
}

/** The cache's name for "the tables of this result are not known": dropped by any commit that wrote. */
const ANY_TABLE = '\u0000any';
/** Statement texts named at most (`#textId`): more distinct texts than the stores have, far fewer than memory allows. */
const TEXT_IDS_MAX = 4096;

/**
 * Opcodes of a statement's program (EXPLAIN lists the programs of its triggers and foreign-key actions
 * after its own) that reach b-trees by root page: cursors opened for reading or writing, a table
 * emptied at once. P5's OPFLAG_P2ISREG (0x10): the root page is in a register (a table being created).
 */
const OPENS_FOR_READ = new Set(['OpenRead', 'ReopenIdx']);
/** Opcodes whose effect on tables the program does not show: virtual tables, schema changes and the like. */
const UNKNOWN_EFFECT = new Set([
  'VOpen',
  'VFilter',
  'VUpdate',
  'VCreate',
  'VDestroy',
  'VBegin',
  'VRename',
  'VCheck',
  'VInitIn',
  'Destroy',
  'CreateBtree',
  'ParseSchema',
  'DropTable',
  'DropIndex',
  'DropTrigger',
  'SqlExec',
  'Vacuum',
  'IncrVacuum',
  'LoadAnalysis',
  'Expire',
  'SetCookie',
]);
const OPFLAG_P2ISREG = 0x10;

interface ExplainRow {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
  p5: number;
}

/**
 * The tables `text` reads and writes, from its program (EXPLAIN, on the writer, with the parameters of
 * its first run: they are bound, never executed). A root page that is not a table's or an index's of
 * the main schema (a temporary table, sqlite_schema itself), or an opcode in `UNKNOWN_EFFECT`, makes
 * the side it is on unknown; so does any failure.
 */
/** `values (?, …), (?, …), …`: the value tuples of a multi-row insert, all parameters. */
const VALUE_TUPLES = /\bvalues\s*(\((?:\s*\?\s*,)*\s*\?\s*\))(?:\s*,\s*\((?:\s*\?\s*,)*\s*\?\s*\))+/i;

const placeholders = (s: string): number => {
  let n = 0;
  for (let i = s.indexOf('?'); i >= 0; i = s.indexOf('?', i + 1)) n++;
  return n;
};

/**
 * The one-row form of a multi-row insert whose tuples are all parameters, with its parameters (those
 * before the tuples, the first tuple's, those after); undefined for any other statement, or when the
 * placeholders do not add up (a `?` in a literal, say).
 */
function oneRowForm(
  text: string,
  parameters: readonly unknown[],
): { text: string; parameters: readonly unknown[] } | undefined {
  const m = VALUE_TUPLES.exec(text);
  if (!m) return undefined;
  const tuple = m[1]!;
  const before = placeholders(text.slice(0, m.index));
  const after = placeholders(text.slice(m.index + m[0].length));
  const all = placeholders(m[0]);
  const perTuple = placeholders(tuple);
  if (before + all + after !== parameters.length || all % perTuple !== 0) return undefined;
  return {
    text: `${text.slice(0, m.index)}values ${tuple}${text.slice(m.index + m[0].length)}`,
    parameters: [...parameters.slice(0, before + perTuple), ...parameters.slice(before + all)],
  };
}

function tablesByRootPage(db: BetterSqlite3.Database): Map<number, string> {
  const tableOf = new Map<number, string>();
  for (const r of db.prepare('select rootpage, tbl_name from sqlite_schema where rootpage > 0').raw().all())
    tableOf.set((r as [number, string])[0], (r as [number, string])[1]);
  return tableOf;
}

function footprint(
  db: BetterSqlite3.Database,
  tableOf: ReadonlyMap<number, string>,
  stmt: BetterSqlite3.Statement,
  text: string,
  parameters: readonly unknown[],
): Footprint {
  try {
    const program = db.prepare(`explain ${text}`).all(parameters) as ExplainRow[];
    let reads: Set<string> | null = new Set();
    let writes: Set<string> | null = new Set();
    const add = (side: Set<string> | null, root: number, schema: number, p5: number) => {
      if (side === null) return null;
      const table = schema === 0 && (p5 & OPFLAG_P2ISREG) === 0 ? tableOf.get(root) : undefined;
      if (table === undefined) return null;
      side.add(table);
      return side;
    };
    for (const op of program) {
      if (OPENS_FOR_READ.has(op.opcode)) reads = add(reads, op.p2, op.p3, op.p5);
      else if (op.opcode === 'OpenWrite') writes = add(writes, op.p2, op.p3, op.p5);
      else if (op.opcode === 'Clear') writes = add(writes, op.p1, op.p2, 0);
      else if (UNKNOWN_EFFECT.has(op.opcode)) {
        reads = null;
        writes = null;
      }
    }
    // A read writes nothing. A write that opens no table (a pragma that sets something, say) may
    // change anything: not known.
    return {
      reads: reads && [...reads],
      writes: isRead(stmt) ? [] : writes && writes.size > 0 ? [...writes] : null,
    };
  } catch {
    return { reads: null, writes: null };
  }
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

/**
 * The cache's key of a read: its statement's name (`#textId`) and its parameters (strings, numbers,
 * bigints or null), each with its type, so that 1, '1' and null differ, and its length, so that no two
 * lists of parameters make one key (a value may hold the separator: a path segment can be any text).
 */
function cacheKey(textId: string, parameters: readonly unknown[]): string {
  let key = textId;
  for (const p of parameters) {
    if (p === null) key += '\u0001n';
    else {
      const v = String(p);
      key += `\u0001${typeof p}:${v.length}:${v}`;
    }
  }
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
 * The Kysely instance bound to the engine's one connection, by the database's Kysely instance: made
 * once (Kysely's `connection()` builds a new instance, executor and connection provider for each
 * transaction, several microseconds on every write), then used by one transaction at a time, which
 * holds the writer lock meanwhile.
 */
const BOUND = new WeakMap<object, object>();

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
  let trx = BOUND.get(db) as Kysely<DB> | undefined;
  if (!trx) {
    // Kysely's own way to a bound instance (it takes and gives back the lock once).
    trx = await db.connection().execute((conn) => Promise.resolve(conn));
    BOUND.set(db, trx);
  }
  await engine.lock();
  let group: { committed: Promise<void> };
  let value: T;
  HOLDERS.add(trx);
  try {
    group = engine.beginTransaction();
    try {
      value = await fn(trx);
      engine.endTransaction(true);
    } catch (err) {
      engine.endTransaction(false);
      throw err;
    }
  } finally {
    HOLDERS.delete(trx);
    engine.unlock();
  }
  await group.committed;
  return value;
}

/**
 * A read: returns rows and writes nothing. `reader` alone is not enough: an INSERT/UPDATE … RETURNING
 * returns rows too, and taken for a read it would be answered from the committed-read cache (the write
 * skipped) or sent to the read-only connection.
 */
function isRead(stmt: BetterSqlite3.Statement): boolean {
  return stmt.reader && stmt.readonly;
}
