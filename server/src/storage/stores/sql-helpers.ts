import { sql, type RawBuilder } from 'kysely';

/** Escapes LIKE wildcards so user text matches literally. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * `lower(column) LIKE %q%` with an explicit ESCAPE, which behaves the same on SQLite and PostgreSQL.
 * `column` must be a trusted identifier (never user input).
 */
export function containsInsensitive(column: string, q: string): RawBuilder<boolean> {
  return sql<boolean>`lower(${sql.ref(column)}) like ${`%${escapeLike(q.toLowerCase())}%`} escape '\\'`;
}
