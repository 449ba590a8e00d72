import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { AppError } from '../../domain/errors.js';
import { systemClock, type Clock } from '../../runtime/clock.js';
import type { DatabaseHandle } from '../database.js';
import type { MessageRow, TaskRow } from '../schema.js';
import { ReadTimeout } from '../sqlite-readers.js';
import { PendingMatcher, pgSearchVector, type TextClause } from './search-text.js';
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

/**
 * A message the index found, with what ranking needs: its text and time. On SQLite that is all (the
 * full rows of the best few are read afterwards with `messageRows`, a primary-key read on the main
 * connection, so that a common word does not carry the rendered HTML and the other columns of every
 * candidate from the reader worker: half the cost of the read and the hand-over). On PostgreSQL the
 * candidates come with their full row (`row`): a second query would be a second round trip, which
 * cost more than the wider rows (measured: +2.4 ms of CPU a search with results).
 */
export interface MessageCandidate {
  id: string;
  content: string;
  created_at: string;
  row?: MessageRow;
}

/** What ranking needs of a candidate, in `MessageCandidate`'s order. */
const CANDIDATE_COLUMNS = sql.raw('m.id, m.content, m.created_at');

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
 * Every index read here spends a search's time budget (`SearchBudget`, WORKROOM_SEARCH_TIMEOUT): it
 * runs on the storage's readers (SQLite: a reader worker, never the event loop's thread, abandoned when the budget
 * is spent; PostgreSQL: a connection of their own with that statement_timeout). Either way the caller
 * gets AppError `search_timeout` (503) saying so.
 */
export class SearchStore {
  /** SQLite: checks the messages not indexed yet (their words kept while they wait). */
  readonly #pending = new PendingMatcher();

  constructor(private readonly handle: DatabaseHandle) {}

  async messages(q: MessageQuery, budget: SearchBudget): Promise<MessageCandidate[]> {
    const { channelIds, topicIds, dmRoomIds } = q.reach;
    if (channelIds.length + topicIds.length + dmRoomIds.length === 0) return [];
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

    const lean = this.handle.dialect === 'sqlite';
    const columns = lean ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS;
    let query: RawBuilder<unknown>;
    if (q.clauses.length === 0) {
      query = sql`select ${columns} from messages m where ${cond}
        order by m.created_at desc, m.id desc limit ${q.candidates}`;
    } else if (this.handle.dialect === 'sqlite') {
      // FTS5 hands out matches in rowid order, newest first, so LIMIT stops the index walk early. The
      // messages not indexed yet (migration 0007: at most a few hundred, the newest) come in the same
      // statement, so from the same snapshot, with their rowid negated; they are checked in code.
      const rows = await this.#read<[string, string, string, number]>(
        sql`select * from (select ${columns}, m.rowid from messages_fts
          join messages m on m.rowid = messages_fts.rowid
          where messages_fts match ${ftsMatch(q.clauses)} and ${cond}
          order by messages_fts.rowid desc limit ${q.candidates})
          union all
          select ${columns}, -m.rowid from messages_fts_pending p cross join messages m on m.rowid = p.rowid
          where ${cond}`.compile(this.handle.db),
        budget,
        true,
      );
      return newestMatches(rows, q.clauses, q.candidates, this.#pending);
    } else {
      query = sql`select ${columns} from messages m
        where m.search_vector @@ to_tsquery('simple', ${tsQuery(q.clauses)}) and ${cond}
        order by m.id desc limit ${q.candidates}`;
    }
    const compiled = query.compile(this.handle.db);
    if (!lean)
      return (await this.#read<MessageRow>(compiled, budget)).map((row) => ({
        id: row.id,
        content: row.content,
        created_at: row.created_at,
        row,
      }));
    const rows = await this.#read<[string, string, string]>(compiled, budget, true);
    return rows.map(([id, content, created_at]) => ({ id, content, created_at }));
  }

  /**
   * The full rows of these messages (the best candidates), not deleted, in no particular order. A
   * primary-key lookup of at most a page of rows: read on the main connection (through the committed-
   * read cache on SQLite), no time budget needed.
   */
  async messageRows(ids: string[]): Promise<MessageRow[]> {
    if (ids.length === 0) return [];
    const query = sql<MessageRow>`select ${MESSAGE_COLUMNS} from messages m
      where m.id in (${sql.join(ids)}) and m.deleted_at is null`;
    return (await query.execute(this.handle.db)).rows;
  }

  users(
    orgId: string,
    clauses: TextClause[],
    candidates: number,
    budget: SearchBudget,
  ): Promise<UserWithDepartment[]> {
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
    return this.#read<UserWithDepartment>(query.compile(this.handle.db), budget);
  }

  tasks(
    topicIds: string[],
    clauses: TextClause[],
    candidates: number,
    budget: SearchBudget,
  ): Promise<TaskRow[]> {
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
    return this.#read<TaskRow>(query.compile(this.handle.db), budget);
  }

  /**
   * Runs a read on the readers within what is left of the budget (`raw`: rows as arrays of their
   * columns). An in-memory SQLite database has no readers (worker threads cannot share it): there it
   * runs on the main connection.
   */
  async #read<R>(compiled: CompiledQuery, budget: SearchBudget, raw = false): Promise<R[]> {
    const { readers, db } = this.handle;
    try {
      const left = budget.left();
      if (left <= 0) throw new ReadTimeout(budget.ms);
      if (readers)
        return await readers.all<R>(compiled.sql, compiled.parameters, left, {
          raw,
          statementTimeoutMs: budget.ms,
        });
      const rows = (await db.executeQuery<Record<string, unknown>>(compiled)).rows;
      return (raw ? rows.map((r) => Object.values(r)) : rows) as R[];
    } catch (err) {
      if (err instanceof ReadTimeout)
        throw new AppError(
          'search_timeout',
          `The search took longer than its time budget of ${budget.ms} ms and was stopped; ` +
            'narrow it with more words or filters (in:, from:, before:, after:)',
        );
      throw err;
    }
  }
}

/**
 * SQLite: the newest `limit` of the index's matches (positive rowids) and of the pending messages
 * (negated rowids) that match the clauses.
 */
function newestMatches(
  rows: [string, string, string, number][],
  clauses: readonly TextClause[],
  limit: number,
  pending: PendingMatcher,
): MessageCandidate[] {
  let matches = rows;
  if (rows.some((r) => r[3] < 0)) {
    matches = rows.filter((r) => r[3] > 0 || pending.matches(r[0], r[1], clauses));
    matches.sort((a, b) => Math.abs(b[3]) - Math.abs(a[3]));
    if (matches.length > limit) matches.length = limit;
  }
  return matches.map(([id, content, created_at]) => ({ id, content, created_at }));
}

/**
 * The time a search may spend reading the index (WORKROOM_SEARCH_TIMEOUT), counted from its start by
 * the server's clock (`Services.clock`, runtime/clock.ts): its reads (messages, users, tasks) share
 * it. A read in flight is also cut by its reader's own timer after what was left at its start.
 */
export class SearchBudget {
  readonly #deadline: number;

  constructor(
    readonly ms: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.#deadline = clock.now() + ms;
  }

  /** Milliseconds left (at least 1 while any is left; 0 when spent). */
  left(): number {
    const left = this.#deadline - this.clock.now();
    return left <= 0 ? 0 : Math.max(1, Math.round(left));
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
