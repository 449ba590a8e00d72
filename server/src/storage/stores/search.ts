import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { AppError } from '../../domain/errors.js';
import type { DatabaseHandle } from '../database.js';
import type { MessageRow, TaskRow } from '../schema.js';
import { ReadTimeout } from '../sqlite-readers.js';
import { pgSearchVector, type TextClause } from './search-text.js';
import type { UserWithDepartment } from './users.js';

/** What a message search may look at, and its filters (already resolved to ids and timestamps). */
export interface MessageQuery {
  orgId: string;
  reach: { channelIds: string[]; topicIds: string[]; dmRoomIds: string[] };
  /** AND of these; none: the filters alone choose (newest first). */
  clauses: TextClause[];
  senders?: { type: 'user' | 'bot'; id: string }[] | undefined;
  /** created_at < before, created_at >= after (ISO timestamps). */
  before?: string | undefined;
  after?: string | undefined;
  hasFile?: boolean | undefined;
  /** How many of the newest matches to return (the caller ranks them). */
  candidates: number;
}

const MESSAGE_COLUMNS = sql.raw(
  'm.id, m.org_id, m.channel_id, m.topic_id, m.dm_room_id, m.sender_type, m.sender_id, m.bot_id, ' +
    'm.content, m.content_html, m.actions, m.created_at, m.edited_at, m.deleted_at',
);

/** A message that links a file of ours (see files: download_url). */
export const FILE_LINK = '/api/files/';

/**
 * Candidate rows for search, found through the full-text indexes of migration 0002: the newest
 * `candidates` rows that match every clause and that the caller may see. The caller (operations/search)
 * checks, ranks and cuts them; ranking in code means the same query gives the same order on both
 * databases.
 *
 * Every read here has a time budget (`timeoutMs`): on SQLite it runs on a reader worker (never on the
 * event loop's thread) and is abandoned when the budget is spent; on PostgreSQL it runs with
 * `SET LOCAL statement_timeout`. Either way the caller gets AppError `unavailable` (503) saying so.
 */
export class SearchStore {
  /** Time budget of one search read, in milliseconds. */
  timeoutMs = 2000;

  constructor(private readonly handle: DatabaseHandle) {}

  messages(q: MessageQuery): Promise<MessageRow[]> {
    const { channelIds, topicIds, dmRoomIds } = q.reach;
    if (channelIds.length + topicIds.length + dmRoomIds.length === 0) return Promise.resolve([]);
    const inList = (col: string, ids: string[]) =>
      sql`${sql.raw(col)} in (${sql.join(ids)})` as RawBuilder<unknown>;
    const reach = [];
    if (channelIds.length) reach.push(inList('m.channel_id', channelIds));
    if (topicIds.length) reach.push(inList('m.topic_id', topicIds));
    if (dmRoomIds.length) reach.push(inList('m.dm_room_id', dmRoomIds));
    const where: RawBuilder<unknown>[] = [
      sql`m.org_id = ${q.orgId}`,
      sql`m.deleted_at is null`,
      sql`(${sql.join(reach, sql` or `)})`,
    ];
    if (q.senders?.length)
      where.push(
        sql`(${sql.join(
          q.senders.map((s) => sql`(m.sender_type = ${s.type} and m.sender_id = ${s.id})`),
          sql` or `,
        )})`,
      );
    if (q.before) where.push(sql`m.created_at < ${q.before}`);
    if (q.after) where.push(sql`m.created_at >= ${q.after}`);
    if (q.hasFile) where.push(sql`m.content like ${`%${FILE_LINK}%`}`);
    const cond = sql.join(where, sql` and `);

    let query: RawBuilder<MessageRow>;
    if (q.clauses.length === 0) {
      query = sql`select ${MESSAGE_COLUMNS} from messages m where ${cond}
        order by m.created_at desc, m.id desc limit ${q.candidates}`;
    } else if (this.handle.dialect === 'sqlite') {
      // FTS5 hands out matches in rowid order, newest first, so LIMIT stops the index walk early.
      query = sql`select ${MESSAGE_COLUMNS} from messages_fts join messages m on m.rowid = messages_fts.rowid
        where messages_fts match ${ftsMatch(q.clauses)} and ${cond}
        order by messages_fts.rowid desc limit ${q.candidates}`;
    } else {
      query = sql`select ${MESSAGE_COLUMNS} from messages m
        where m.search_vector @@ to_tsquery('simple', ${tsQuery(q.clauses)}) and ${cond}
        order by m.id desc limit ${q.candidates}`;
    }
    return this.#read<MessageRow>(query.compile(this.handle.db));
  }

  users(orgId: string, clauses: TextClause[], candidates: number): Promise<UserWithDepartment[]> {
    if (clauses.length === 0) return Promise.resolve([]);
    const query =
      this.handle.dialect === 'sqlite'
        ? sql`select u.*, d.name as department from users_fts join users u on u.rowid = users_fts.rowid
            left join departments d on d.id = u.department_id
            where users_fts match ${ftsMatch(clauses)} and u.org_id = ${orgId}
            order by users_fts.rowid desc limit ${candidates}`
        : sql`select u.*, d.name as department from users u left join departments d on d.id = u.department_id
            where ${sql.raw(pgSearchVector('users', 'u'))} @@ to_tsquery('simple', ${tsQuery(clauses)})
            and u.org_id = ${orgId} order by u.id desc limit ${candidates}`;
    return this.#read<UserWithDepartment>(query.compile(this.handle.db));
  }

  tasks(topicIds: string[], clauses: TextClause[], candidates: number): Promise<TaskRow[]> {
    if (clauses.length === 0 || topicIds.length === 0) return Promise.resolve([]);
    const inTopics = sql`t.topic_id in (${sql.join(topicIds)})`;
    const query =
      this.handle.dialect === 'sqlite'
        ? sql`select t.* from tasks_fts join tasks t on t.rowid = tasks_fts.rowid
            where tasks_fts match ${ftsMatch(clauses)} and ${inTopics}
            order by tasks_fts.rowid desc limit ${candidates}`
        : sql`select t.* from tasks t
            where ${sql.raw(pgSearchVector('tasks', 't'))} @@ to_tsquery('simple', ${tsQuery(clauses)})
            and ${inTopics} order by t.id desc limit ${candidates}`;
    return this.#read<TaskRow>(query.compile(this.handle.db));
  }

  /** Runs a read within the time budget: SQLite on a reader worker, PostgreSQL with statement_timeout. */
  async #read<R>(compiled: CompiledQuery): Promise<R[]> {
    const budget = Math.max(1, Math.round(this.timeoutMs));
    const { readers, db } = this.handle;
    try {
      if (readers) return await readers.all<R>(compiled.sql, compiled.parameters, budget);
      if (this.handle.dialect === 'sqlite') return (await db.executeQuery<R>(compiled)).rows; // in-memory
      return await db.transaction().execute(async (trx) => {
        await sql.raw(`set local statement_timeout = ${budget}`).execute(trx);
        return (await trx.executeQuery<R>(compiled)).rows;
      });
    } catch (err) {
      const canceled = (err as { code?: string } | null)?.code === '57014'; // PostgreSQL query_canceled
      if (err instanceof ReadTimeout || canceled)
        throw new AppError(
          'unavailable',
          `search_timeout: the search took longer than its time budget of ${budget} ms and was stopped; ` +
            'narrow it with more words or filters (in:, from:, before:, after:)',
        );
      throw err;
    }
  }
}

/** FTS5 query: each clause a quoted phrase (words are letters and digits only), `*` for a prefix. */
export function ftsMatch(clauses: TextClause[]): string {
  return clauses.map((c) => `"${c.words.join(' ')}"${c.prefix ? ' *' : ''}`).join(' AND ');
}

/** tsquery: words of a clause follow each other (`<->`), `:*` for a prefix; clauses ANDed. */
export function tsQuery(clauses: TextClause[]): string {
  return clauses
    .map((c) => {
      const last = c.words.length - 1;
      return `(${c.words.map((w, i) => `'${w}'${c.prefix && i === last ? ':*' : ''}`).join(' <-> ')})`;
    })
    .join(' & ');
}
