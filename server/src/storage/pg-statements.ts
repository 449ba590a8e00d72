import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Named (server-side prepared) statements on PostgreSQL for the hot SQL of `stores/prepared.ts`: each
 * pooled connection parses and plans such a statement once, then only binds and executes it. Kysely
 * sends every query unnamed, which PostgreSQL parses and plans again on every call.
 */
const NAMES = new Map<string, string>();

/** Registers SQL to run as a named statement (idempotent; the name is derived from the text). */
export function namePgStatement(sql: string): void {
  if (!NAMES.has(sql)) NAMES.set(sql, `wr_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`);
}

type Query = (...args: unknown[]) => unknown;

/** Makes the pool's clients run registered SQL as named statements. */
export function useNamedStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown, cb?: unknown) => {
      const name = typeof text === 'string' ? NAMES.get(text) : undefined;
      if (name !== undefined && cb === undefined) return query({ name, text, values });
      return query(text, values, cb);
    };
  });
}
