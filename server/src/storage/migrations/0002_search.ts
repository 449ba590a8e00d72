import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';
import { pgSearchVector, SEARCHED_COLUMNS } from '../stores/search-text.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/** Reports how far a long migration got (the server logs it). */
export type Progress = (message: string, data?: Record<string, unknown>) => void;

/**
 * Full-text indexes for search (see docs/SEARCH.md).
 *
 * SQLite: FTS5 tables with external content (they store the index only, the text stays in the
 * table), kept in step by triggers, so an insert, an edit or a soft delete changes the index in the
 * same transaction. Only messages that are not deleted are indexed. `columnsize=0`: no per-row
 * length record (one b-tree write less per insert; ranking is done in code, not with bm25()). unicode61 with remove_diacritics 2
 * folds case and accents; a prefix index on 2 and 3 characters keeps "search while typing" cheap.
 *
 * PostgreSQL: a GIN index over a `tsvector`: for messages a stored generated column (`search_vector`,
 * so that a scan in id order can test a row without computing its vector), for users and tasks (small
 * tables, never scanned that way) an index on the expression `pgSearchVector` (no extra column). The text is folded by built-in
 * IMMUTABLE functions (accents of Latin letters off, ASCII punctuation to spaces, lower case: the same
 * steps as the code's `fold`, see `pgFold`): the `unaccent` extension would need CREATE privileges on the
 * database, lives in one schema for every tenant of the database, and is only STABLE (a generated
 * column needs IMMUTABLE). The 'simple' configuration: no stemming, no stop words, like FTS5.
 */
const SEARCHED: readonly {
  table: keyof typeof SEARCHED_COLUMNS;
  columns: readonly string[];
  partial?: string;
}[] = [
  { table: 'messages', columns: SEARCHED_COLUMNS.messages, partial: 'deleted_at is null' },
  { table: 'users', columns: SEARCHED_COLUMNS.users },
  { table: 'tasks', columns: SEARCHED_COLUMNS.tasks },
];

export async function up(db: Db, dialect: Dialect, progress: Progress = () => {}): Promise<void> {
  if (dialect === 'postgres') await upPostgres(db, progress);
  else await upSqlite(db, progress);
}

async function upSqlite(db: Db, progress: Progress): Promise<void> {
  for (const { table, columns, partial } of SEARCHED) {
    const fts = `${table}_fts`;
    const cols = columns.join(', ');
    const newCols = columns.map((c) => `new.${c}`).join(', ');
    const oldCols = columns.map((c) => `old.${c}`).join(', ');
    const whenNew = partial ? ` where ${partial.replaceAll('deleted_at', 'new.deleted_at')}` : '';
    const whenOld = partial ? ` where ${partial.replaceAll('deleted_at', 'old.deleted_at')}` : '';
    await sql
      .raw(
        `create virtual table ${fts} using fts5(${cols}, content='${table}', content_rowid='rowid', ` +
          `tokenize='unicode61 remove_diacritics 2', prefix='2 3', columnsize=0)`,
      )
      .execute(db);
    await sql
      .raw(
        `create trigger ${fts}_insert after insert on ${table} begin ` +
          `insert into ${fts}(rowid, ${cols}) select new.rowid, ${newCols}${whenNew}; end`,
      )
      .execute(db);
    await sql
      .raw(
        `create trigger ${fts}_update after update of ${cols}${partial ? ', deleted_at' : ''} on ${table} begin ` +
          `insert into ${fts}(${fts}, rowid, ${cols}) select 'delete', old.rowid, ${oldCols}${whenOld}; ` +
          `insert into ${fts}(rowid, ${cols}) select new.rowid, ${newCols}${whenNew}; end`,
      )
      .execute(db);
    await sql
      .raw(
        `create trigger ${fts}_delete after delete on ${table} begin ` +
          `insert into ${fts}(${fts}, rowid, ${cols}) select 'delete', old.rowid, ${oldCols}${whenOld}; end`,
      )
      .execute(db);
    await indexExisting(db, table, fts, cols, partial, progress);
  }
}

/** Indexes the rows already there, in slices of rowids, reporting progress. */
async function indexExisting(
  db: Db,
  table: string,
  fts: string,
  cols: string,
  partial: string | undefined,
  progress: Progress,
): Promise<void> {
  const bounds = await sql<{ lo: number | null; hi: number | null; n: number }>`
    select min(rowid) as lo, max(rowid) as hi, count(*) as n from ${sql.table(table)}`.execute(db);
  const { lo, hi, n } = bounds.rows[0]!;
  if (lo === null || hi === null || n === 0) return;
  const started = performance.now();
  progress(`search index: indexing ${n} ${table}`, { table, rows: n });
  const SLICE = 50_000;
  for (let from = lo; from <= hi; from += SLICE) {
    await sql
      .raw(
        `insert into ${fts}(rowid, ${cols}) select rowid, ${cols} from ${table} ` +
          `where rowid >= ${from} and rowid < ${from + SLICE}${partial ? ` and ${partial}` : ''}`,
      )
      .execute(db);
    const done = Math.min(hi, from + SLICE - 1) - lo + 1;
    if (hi - lo >= SLICE)
      progress(`search index: ${table} ${Math.round((100 * done) / (hi - lo + 1))}%`, { table });
  }
  progress(`search index: ${table} done`, { table, ms: Math.round(performance.now() - started) });
}

async function upPostgres(db: Db, progress: Progress): Promise<void> {
  for (const { table, partial } of SEARCHED) {
    const started = performance.now();
    const count = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db);
    const n = count.rows[0]?.n ?? 0;
    if (n > 0) progress(`search index: indexing ${n} ${table}`, { table, rows: n });
    let indexed = pgSearchVector(table);
    if (table === 'messages') {
      // Adding a stored generated column rewrites the table once, computing every row's vector.
      await sql
        .raw(`alter table ${table} add column search_vector tsvector generated always as (${indexed}) stored`)
        .execute(db);
      indexed = 'search_vector';
    }
    await sql
      .raw(
        `create index ${table}_search on ${table} using gin ((${indexed}))${partial ? ` where ${partial}` : ''}`,
      )
      .execute(db);
    if (n > 0)
      progress(`search index: ${table} done`, { table, ms: Math.round(performance.now() - started) });
  }
}
