import type BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
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
 * Our SQLite driver for Kysely. Like Kysely's own, it has one connection guarded by a mutex (SQLite
 * has one writer, and a transaction owns the connection until it ends). Unlike it, the lock state is
 * visible, so that `prepared` statements on the request path can run synchronously — without Kysely's
 * promise chain — whenever that is safe: the connection is free, or the caller is the transaction that
 * holds it. Statements are prepared once per SQL text and reused.
 */
export class SqliteEngine {
  readonly #statements = new Map<string, BetterSqlite3.Statement>();
  readonly #readStatements = new Map<string, BetterSqlite3.Statement>();
  #locked = false;
  /** Waiters in arrival order; unlock hands the connection to the first (no wake-everyone herd). */
  readonly #waiters: (() => void)[] = [];

  /**
   * @param raw the one writer connection
   * @param reader a read-only connection to the same file: in WAL mode it reads the last committed
   *   state while the writer is inside a transaction, so a read need not wait for it (see runNow).
   */
  constructor(
    readonly raw: BetterSqlite3.Database,
    readonly reader?: BetterSqlite3.Database,
  ) {}

  statement(text: string): BetterSqlite3.Statement {
    return cached(this.#statements, this.raw, text);
  }

  /** Runs a read-only statement on the reader connection (committed data only); undefined if it is not one. */
  readCommitted<R>(text: string, parameters: readonly unknown[]): QueryResult<R> | undefined {
    if (!this.reader || !this.statement(text).reader) return undefined;
    return { rows: cached(this.#readStatements, this.reader, text).all(parameters) as R[] };
  }

  /** Runs one statement synchronously. The caller must own the connection (see `runNow`). */
  run<R>(text: string, parameters: readonly unknown[]): QueryResult<R> {
    const stmt = this.statement(text);
    if (stmt.reader) return { rows: stmt.all(parameters) as R[] };
    const { changes, lastInsertRowid } = stmt.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  get locked(): boolean {
    return this.#locked;
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

function cached(cache: Map<string, BetterSqlite3.Statement>, db: BetterSqlite3.Database, text: string) {
  let stmt = cache.get(text);
  if (!stmt) {
    if (cache.size >= 1000) cache.clear();
    stmt = db.prepare(text);
    cache.set(text, stmt);
  }
  return stmt;
}

class EngineConnection implements DatabaseConnection {
  constructor(private readonly engine: SqliteEngine) {}

  executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    return Promise.resolve(this.engine.run<R>(q.sql, q.parameters));
  }

  async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(q.query)) throw new Error('SQLite streams only select queries');
    for (const row of this.engine.statement(q.sql).iterate(q.parameters)) yield { rows: [row as R] };
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
  async beginTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('begin'));
  }
  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection(): Promise<void> {
    this.engine.unlock();
  }
  async destroy(): Promise<void> {
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
 * transaction that holds the connection, or when the connection is free; a read while another
 * transaction holds it runs on the reader connection (committed data, no waiting). Undefined: not
 * ours to run now, go through Kysely (which waits for the connection).
 */
export function runNow<R>(
  db: Kysely<unknown>,
  text: string,
  parameters: readonly unknown[],
): QueryResult<R> | undefined {
  const engine = ENGINES.get(db.getExecutor().adapter);
  if (!engine) return undefined;
  if (HOLDERS.has(db) || !engine.locked) return engine.run<R>(text, parameters);
  // The writer is inside someone's transaction: a read goes to the reader instead of waiting. (Not
  // first choice: the reader's page cache is dropped whenever the writer commits.)
  return engine.readCommitted<R>(text, parameters);
}

/**
 * A transaction on our engine: holds the connection for `fn`, with begin/commit/rollback run directly
 * and the bound Kysely instance marked as the holder (so prepared statements inside run synchronously).
 */
export function engineTransaction<DB, T>(
  db: Kysely<DB>,
  engine: SqliteEngine,
  fn: (trx: Kysely<DB>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (conn) => {
    HOLDERS.add(conn);
    engine.run('begin', []);
    try {
      const result = await fn(conn);
      engine.run('commit', []);
      return result;
    } catch (err) {
      if (engine.raw.inTransaction) engine.run('rollback', []);
      throw err;
    } finally {
      HOLDERS.delete(conn);
    }
  });
}
