import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: the search indexes (GIN, migration 0002) keep a pending list of 64 kB instead of the
 * server's default 4 MB. A GIN index with `fastupdate` adds new entries to its pending list, and the
 * insert that finds the list full moves all of it into the index before it finishes: with 4 MB of
 * messages' words that took one POST (and, under group commit, every message of its statement) 100–
 * 190 ms, every few seconds under load. With 64 kB the same work comes in pieces of a few
 * milliseconds. POST a message on PostgreSQL (wrk, 32 connections, unique messages, same run): p99
 * 70–125 ms → 14 ms, throughput the same or higher (3,593 → 4,334 req/s); `fastupdate = off`
 * instead: p99 19 ms at 3,676 req/s. Searches read the pending list whole, so a short one also
 * keeps them fast. (An operator's own `gin_pending_list_limit` no longer applies to these indexes.)
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  for (const index of ['messages_search', 'users_search', 'tasks_search'])
    await sql.raw(`alter index ${index} set (gin_pending_list_limit = 64)`).execute(db);
}
