import type BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * SQLite: new messages enter the full-text index in batches, right before a commit, instead of one by
 * one in the writing statement (see docs/SEARCH.md, "Write throughput").
 *
 * Why: FTS5 keeps what it is told in an in-memory hash and writes it out as a new segment at every
 * savepoint — the savepoint of each transaction of a group commit, and the statement journal of each
 * INSERT into `messages` inside a transaction — and at every commit; each segment written costs merge
 * work later (automerge counts it by pages, and even a segment of one message is a page). Measured
 * (bench/fts-insert.ts): ~690 µs of FTS5 work a segment against ~14 µs a message, so with 0002's
 * triggers (a segment a message) an insert cost 7–8× one without the index.
 *
 * How: the insert trigger only notes the message's rowid in `messages_fts_pending` (a plain b-tree
 * insert), and the storage engine, right before a COMMIT, indexes the pending rows with one INSERT …
 * SELECT in the transaction being committed, once `INDEX_PENDING_AT.rows` are pending or the first has
 * waited `INDEX_PENDING_AT.ms` (`indexPendingMessages`). Search stays exact: on SQLite it reads the
 * index *and* the pending messages, in one statement (one snapshot), and checks the pending ones in
 * code (`SearchStore.messages`, `PendingMatcher`). Edits and deletes still take a message out of the index at once,
 * unless it is still pending (then there is nothing to take out); an edited message goes back to
 * pending with its new text.
 *
 * Another process writing messages (an operator's sqlite3 session, a bulk load) leaves its rows
 * pending: search sees them all the same, and the server indexes them when it opens the database. By
 * hand, in one transaction: `insert into messages_fts(rowid, content) select m.rowid, m.content from
 * messages_fts_pending p join messages m on m.rowid = p.rowid; delete from messages_fts_pending;`.
 *
 * PostgreSQL: nothing (its GIN index has a pending list of its own, `fastupdate`).
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') return;
  // Each statement is idempotent: SQLite migrations run outside a transaction, and one interrupted
  // half-way runs again from the start.
  await sql.raw('create table if not exists messages_fts_pending (rowid integer primary key)').execute(db);
  for (const t of ['insert', 'update', 'delete'])
    await sql.raw(`drop trigger if exists messages_fts_${t}`).execute(db);
  const notPending = 'not exists (select 1 from messages_fts_pending where rowid = old.rowid)';
  await sql
    .raw(
      'create trigger messages_fts_insert after insert on messages begin ' +
        'insert into messages_fts_pending(rowid) select new.rowid where new.deleted_at is null; end',
    )
    .execute(db);
  await sql
    .raw(
      'create trigger messages_fts_update after update of content, deleted_at on messages begin ' +
        `insert into messages_fts(messages_fts, rowid, content) select 'delete', old.rowid, old.content ` +
        `where old.deleted_at is null and ${notPending}; ` +
        'delete from messages_fts_pending where rowid = old.rowid; ' +
        'insert into messages_fts_pending(rowid) select new.rowid where new.deleted_at is null; end',
    )
    .execute(db);
  await sql
    .raw(
      'create trigger messages_fts_delete after delete on messages begin ' +
        `insert into messages_fts(messages_fts, rowid, content) select 'delete', old.rowid, old.content ` +
        `where old.deleted_at is null and ${notPending}; ` +
        'delete from messages_fts_pending where rowid = old.rowid; end',
    )
    .execute(db);
}

/** Indexes the pending messages (in rowid order, the order FTS5 appends best). */
const INDEX_PENDING =
  'insert into messages_fts(rowid, content) select m.rowid, m.content from messages_fts_pending p ' +
  'cross join messages m on m.rowid = p.rowid where m.deleted_at is null';

/** When pending messages are indexed: this many of them, or the first of them waiting this long. */
export const INDEX_PENDING_AT = { rows: 128, ms: 250 };

/**
 * What the SQLite engine runs right before each COMMIT (`SqliteEngine.beforeCommit`): once
 * `at.rows` messages are pending, or the first has waited `at.ms` (or when forced), the pending
 * messages go into the index and the list is emptied, in the transaction being committed. Outside a
 * transaction (a statement committed on its own) it opens one, so that both happen together or not at
 * all. Undefined when the database has no pending list (migration 0007 not applied yet). The hook
 * answers whether it wrote (the engine's committed-read cache then starts afresh: sqlite-engine.ts).
 */
export function indexPendingMessages(
  raw: BetterSqlite3.Database,
  at: { rows: number; ms: number } = INDEX_PENDING_AT,
): ((force?: boolean) => boolean) | undefined {
  const table = raw
    .prepare(`select 1 from sqlite_master where type = 'table' and name = 'messages_fts_pending'`)
    .get();
  if (!table) return undefined;
  const count = raw.prepare(`select count(*) from messages_fts_pending`).pluck();
  const index = raw.prepare(INDEX_PENDING);
  const clear = raw.prepare('delete from messages_fts_pending');
  const both = () => {
    index.run();
    clear.run();
  };
  const inTransaction = raw.transaction(both);
  /** When the hook first saw messages pending (since they were last indexed). */
  let waitingSince: number | undefined;
  return (force = false) => {
    const n = count.get() as number;
    if (n === 0) {
      waitingSince = undefined;
      return false;
    }
    const now = performance.now();
    waitingSince ??= now;
    if (!force && n < at.rows && now - waitingSince < at.ms) return false;
    if (raw.inTransaction) both();
    else inTransaction();
    waitingSince = undefined;
    return true;
  };
}
