import { CompiledQuery, type Compilable, type Kysely, type QueryResult } from 'kysely';
import { markDeferrable } from '../pg-deferred-transaction.js';
import { namePgStatement } from '../pg-statements.js';
import { PgLookupBatches } from '../pg-batches.js';
import { runNow } from '../sqlite-engine.js';
import type { Executor } from './executor.js';

/**
 * A query built and compiled once per database, then executed with new parameters: for the few
 * statements on every request's path (authentication, membership, message and event inserts), where
 * building and compiling with Kysely each time costs more than running the SQL.
 *
 * `build` is called once with sentinel strings in place of the arguments; the compiled parameters that
 * equal a sentinel are replaced by the real arguments on each call. Arguments are strings, numbers
 * (passed to the builder as sentinel strings: use them only where they become parameters, e.g. limit)
 * or null.
 *
 * `deferrable`: a plain INSERT whose result nobody reads and whose error nobody catches at the call;
 * inside a PostgreSQL write transaction it may be sent later, together with others, as one statement
 * (storage/pg-deferred-transaction.ts).
 */
export function prepared<A extends (string | number | null)[], R>(
  build: (db: Executor, ...args: A) => Compilable<R>,
  opts: { deferrable?: boolean } = {},
) {
  // Keyed by the dialect adapter, shared by a Kysely instance and its transactions.
  const cache = new WeakMap<object, { sql: string; slots: (number | { fixed: unknown })[] }>();
  const compiled = (db: Executor, args: A) => {
    const key = db.getExecutor().adapter as object;
    let entry = cache.get(key);
    if (!entry) {
      const sentinels = args.map((_, i) => `\u0000wr:${i}\u0000`) as A;
      const c = build(db, ...sentinels).compile();
      const slots = c.parameters.map((p) => {
        const i = typeof p === 'string' ? sentinels.indexOf(p) : -1;
        return i >= 0 ? i : { fixed: p };
      });
      entry = { sql: c.sql, slots };
      cache.set(key, entry);
      namePgStatement(c.sql); // on PostgreSQL: parsed and planned once per connection
      if (opts.deferrable) markDeferrable(c.sql);
    }
    const params = entry.slots.map((s) => (typeof s === 'number' ? args[s] : s.fixed));
    return { sql: entry.sql, params };
  };
  // On SQLite, run it right here when that is safe (see runNow; reads outside transactions may be
  // answered from the committed-read cache); otherwise through Kysely.
  const execute = async (db: Executor, sql: string, params: unknown[]): Promise<QueryResult<R>> =>
    runNow<R>(db as Kysely<unknown>, sql, params) ??
    db.executeQuery<R>(CompiledQuery.raw(sql, params) as CompiledQuery<R>);
  const run = async (db: Executor, ...args: A): Promise<QueryResult<R>> => {
    const { sql, params } = compiled(db, args);
    return execute(db, sql, params);
  };
  /**
   * For a read of at most one row: with `lookups` (the database's, PostgreSQL, outside any
   * transaction) it may go with other calls of the same statement as one (storage/pg-batches.ts).
   */
  const lookup = async (db: Executor, lookups: PgLookupBatches | undefined, ...args: A): Promise<R[]> => {
    const { sql, params } = compiled(db, args);
    if (lookups && PgLookupBatches.batchable(params)) return lookups.run<R>(sql, params);
    return (await execute(db, sql, params)).rows;
  };
  return Object.assign(run, { lookup });
}
