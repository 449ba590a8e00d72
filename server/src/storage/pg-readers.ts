import type pg from 'pg';
import { ReadTimeout, type Readers } from './sqlite-readers.js';

/** PostgreSQL's `query_canceled`: the statement ran past its statement_timeout. */
const QUERY_CANCELED = '57014';

/**
 * PostgreSQL's reads that can take long (search) run on a small pool of connections of their own
 * (`pool`, two connections: searches never hold more of PostgreSQL's backends, and so of its CPU, than
 * that, as on SQLite two reader workers). Each connection carries the time budget as its own
 * `statement_timeout` (set when a connection is first used, and again when the configured budget
 * changes: `statementTimeoutMs`, the whole budget, not what is left of it), so a read is one round trip: no BEGIN / SET LOCAL / COMMIT around it, as a read in a transaction of the
 * main pool needed (four round trips, each a wait for the CPU on a busy machine).
 *
 * The budget covers waiting for a connection too: once it has passed, the read is abandoned at once
 * with `ReadTimeout`; a statement already running is canceled by PostgreSQL at its statement_timeout
 * (then its connection goes back to the pool).
 */
export class PgReaders implements Readers {
  readonly #timeouts = new WeakMap<pg.PoolClient, number>();
  #closed = false;
  abandoned = 0;

  constructor(private readonly pool: pg.Pool) {
    // An idle connection that breaks (PostgreSQL restarted) is dropped by the pool; nothing to do.
    pool.on('error', () => undefined);
  }

  all<R>(
    sql: string,
    params: readonly unknown[],
    budgetMs: number,
    opts?: { raw?: boolean; statementTimeoutMs?: number },
  ): Promise<R[]> {
    if (this.#closed) return Promise.reject(new Error('the storage is closed'));
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.abandoned++;
        reject(new ReadTimeout(budgetMs));
      }, budgetMs);
    });
    const work = this.#run<R>(sql, params, opts?.statementTimeoutMs ?? budgetMs, opts?.raw === true);
    work.catch(() => undefined); // abandoned: its outcome no longer matters
    return Promise.race([work, expired]).finally(() => clearTimeout(timer));
  }

  async #run<R>(sql: string, params: readonly unknown[], timeoutMs: number, raw: boolean): Promise<R[]> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      const timeout = Math.max(1, Math.round(timeoutMs));
      if (this.#timeouts.get(client) !== timeout) {
        await client.query(`set statement_timeout = ${timeout}`);
        this.#timeouts.set(client, timeout);
      }
      const res = await client.query({
        text: sql,
        values: params as unknown[],
        ...(raw && { rowMode: 'array' as const }),
      });
      return res.rows as R[];
    } catch (err) {
      if ((err as { code?: string } | null)?.code === QUERY_CANCELED) throw new ReadTimeout(timeoutMs);
      broken = !(err as { code?: string } | null)?.code; // not an SQL error: the connection may be unusable
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.pool.end();
  }
}
