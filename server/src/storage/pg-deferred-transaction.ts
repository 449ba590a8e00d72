import {
  Transaction,
  type CompiledQuery,
  type DatabaseConnection,
  type Kysely,
  type KyselyProps,
  type QueryResult,
} from 'kysely';
import type pg from 'pg';
import { namePgStatement } from './pg-statements.js';
import {
  asOneStatement,
  PgWriteBatches,
  releaseClient,
  renumberParameters,
  runPooled,
} from './pg-batches.js';

/**
 * PostgreSQL write transactions that cost one round trip when all they do is insert (issue 18, point
 * 7: "one statement for the message, its outbox row and its search row").
 *
 * A message is a transaction of BEGIN, the message's INSERT, its outbox event's INSERT and COMMIT: four
 * round trips, each a switch between the server and its PostgreSQL backend on the same cores. Here the
 * statements registered as deferrable (`prepared(…, { deferrable: true })`: plain INSERTs whose result
 * nobody reads and whose errors nobody catches where they are made) are held back instead of sent;
 * the transaction opens (BEGIN) only when another statement comes, and the held ones are sent before
 * it, so every statement still sees what came before it. A transaction that ends having held only
 * deferrable statements of distinct SQL sends them as **one** statement without BEGIN and COMMIT —
 * data-modifying CTEs, `with w0 as (insert …), w1 as (insert …) insert …` — which PostgreSQL runs
 * atomically, like the transaction it replaces. (Two into one table, such as two outbox events whose
 * order matters, go in successive statements in a transaction: see `chunks`.) (The message's search vector is a generated column: no statement of its own.)
 *
 * What changes for code in a transaction: nothing it can observe, except that a deferrable statement's
 * error (a constraint, say) is thrown by the next statement or by the commit instead of by the call
 * that made it, and in both cases the whole transaction fails, as before.
 */

const DEFERRABLE = new Set<string>();

/** Registers SQL (a plain INSERT with numbered parameters `$1…`) as deferrable (see above). */
export function markDeferrable(sql: string): void {
  DEFERRABLE.add(sql);
}

interface Held {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * The held statements in runs that may each be one statement: a run ends before a statement whose SQL
 * it already holds. PostgreSQL runs the parts of one statement in no promised order, so two inserts
 * into one table (two outbox events of one change, whose `seq` must follow the order they were made
 * in) go in successive statements, and the order of statements is the order they were made in.
 */
export function chunks(held: readonly Held[]): Held[][] {
  const out: Held[][] = [];
  let run: Held[] = [];
  let texts = new Set<string>();
  for (const h of held) {
    if (texts.has(h.sql)) {
      out.push(run);
      run = [];
      texts = new Set();
    }
    run.push(h);
    texts.add(h.sql);
  }
  if (run.length > 0) out.push(run);
  return out;
}

/** Held statements of distinct SQL as one: data-modifying CTEs, parameters renumbered in order. */
export function combineStatements(held: readonly Held[]): Held {
  if (held.length === 1) return held[0]!;
  const parameters: unknown[] = [];
  for (const h of held) for (const p of h.parameters) parameters.push(p);
  return { sql: combinedSql(held), parameters };
}

/**
 * The combined text of a run of held statements, made once per sequence of texts (a message's is the
 * same for every message): renumbering with a regular expression, then hashing the new long text to
 * find its statement name, cost ~1 % of a POST's profile on PostgreSQL when done for every commit. The
 * texts are our own statements' (a handful of sequences); past `COMBINED_MAX` they are made each time.
 */
interface Combined {
  sql?: string;
  next: Map<string, Combined>;
}
const COMBINED: Combined = { next: new Map() };
const COMBINED_MAX = 256;
let combinedCount = 0;

function combinedSql(held: readonly Held[]): string {
  let node = COMBINED;
  for (const h of held) {
    let next = node.next.get(h.sql);
    if (!next) {
      if (combinedCount >= COMBINED_MAX) return renumbered(held);
      node.next.set(h.sql, (next = { next: new Map() }));
      combinedCount++;
    }
    node = next;
  }
  return (node.sql ??= renumbered(held));
}

function renumbered(held: readonly Held[]): string {
  let offset = 0;
  return asOneStatement(
    held.map((h) => {
      const at = offset;
      offset += h.parameters.length;
      return renumberParameters(h.sql, at);
    }),
  );
}

async function run<R>(
  client: pg.ClientBase,
  sql: string,
  parameters: readonly unknown[],
): Promise<QueryResult<R>> {
  const r = await client.query(sql, [...parameters]);
  const counted =
    r.command === 'INSERT' || r.command === 'UPDATE' || r.command === 'DELETE' || r.command === 'MERGE';
  return { rows: (r.rows ?? []) as R[], ...(counted ? { numAffectedRows: BigInt(r.rowCount ?? 0) } : {}) };
}

/** The one connection of a deferred transaction (Kysely's `DatabaseConnection`, see above). */
class DeferringConnection implements DatabaseConnection {
  #held: Held[] = [];
  #client: pg.PoolClient | undefined;
  #opening: Promise<pg.PoolClient> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly batches: PgWriteBatches | undefined,
  ) {}

  /** Whether BEGIN was sent (or is on its way). */
  get #opened(): boolean {
    return this.#opening !== undefined;
  }

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (DEFERRABLE.has(q.sql)) {
      this.#held.push({ sql: q.sql, parameters: q.parameters });
      return { rows: [] };
    }
    const client = await this.#open();
    await this.#flush(client);
    return run<R>(client, q.sql, q.parameters);
  }

  // eslint-disable-next-line require-yield -- Kysely's interface; no store streams inside a write
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported in a write transaction');
  }

  /**
   * Commits: the held statements as one statement if the transaction never opened and they combine into
   * one (see `chunks`); otherwise BEGIN, the held chunks, COMMIT.
   */
  async commit(): Promise<void> {
    if (!this.#opened) {
      if (this.#held.length === 0) return;
      const parts = chunks(this.#held);
      if (parts.length === 1) {
        this.#held = [];
        const part = parts[0]!;
        // Plain INSERTs may share a statement with other transactions' (group commit).
        if (this.batches && PgWriteBatches.batchable(part)) await this.batches.run(part);
        else {
          // One statement outside any transaction (atomic by itself), on a client of its own.
          const { sql, parameters } = combineStatements(part);
          await runPooled(this.pool, sql, parameters);
        }
        return;
      }
    }
    const client = await this.#open();
    try {
      await this.#flush(client);
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      this.#release(err);
      throw err;
    }
    this.#release();
  }

  async rollback(): Promise<void> {
    this.#held = [];
    if (!this.#opened) return;
    const client = await this.#open().catch(() => undefined);
    if (!client) return;
    try {
      await client.query('rollback');
      this.#release();
    } catch (err) {
      this.#release(err);
    }
  }

  #open(): Promise<pg.PoolClient> {
    this.#opening ??= (async () => {
      const client = await this.pool.connect();
      try {
        await client.query('begin');
      } catch (err) {
        releaseClient(client, err);
        throw err;
      }
      this.#client = client;
      return client;
    })();
    return this.#opening;
  }

  async #flush(client: pg.PoolClient): Promise<void> {
    if (this.#held.length === 0) return;
    const parts = chunks(this.#held);
    this.#held = [];
    for (const part of parts) {
      const { sql, parameters } = combineStatements(part);
      namePgStatement(sql);
      await client.query(sql, [...parameters]);
    }
  }

  #release(err?: unknown): void {
    const client = this.#client;
    this.#client = undefined;
    if (client) releaseClient(client, err);
  }
}

/**
 * Runs `fn` in a deferred transaction on `db` (whose pool is `pool`): commits when `fn` resolves,
 * rolls back when it throws. With `batches`, a transaction that comes down to one statement of plain
 * INSERTs is sent through them (group commit, pg-batches.ts).
 */
export async function deferredTransaction<DB, T>(
  db: Kysely<DB>,
  pool: pg.Pool,
  batches: PgWriteBatches | undefined,
  fn: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  const conn = new DeferringConnection(pool, batches);
  const executor = db.getExecutor().withConnectionProvider({
    provideConnection: (consume) => consume(conn),
  });
  // The props Kysely gives its own transactions; only the executor is used by queries.
  const trx = new Transaction<DB>({
    executor,
    config: {},
    driver: {},
    dialect: {},
  } as unknown as KyselyProps);
  let value: T;
  try {
    value = await fn(trx);
  } catch (err) {
    await conn.rollback();
    throw err;
  }
  await conn.commit();
  return value;
}
