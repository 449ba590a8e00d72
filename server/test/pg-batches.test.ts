import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { combineStatements } from '../src/storage/pg-deferred-transaction.js';
import {
  PgLookupBatches,
  PgWriteBatches,
  batchedInsertSql,
  batchedLookupSql,
  type WritePart,
} from '../src/storage/pg-batches.js';
import { useNamedStatements, type PgTypes } from '../src/storage/pg-statements.js';
import { dropSchema } from './helpers/server.js';

const INSERT_A = 'insert into a (id, parent_id, n, note) values ($1, $2, $3, $4)';
const INSERT_B = 'insert into b (a_id, made) values ($1, $2)';
const write = (id: string, parent: string, n: number): WritePart[] => [
  { sql: INSERT_A, parameters: [id, parent, n, `note ${id}`] },
  { sql: INSERT_B, parameters: [id, `made ${id}`] },
];

describe('batch statements (text)', () => {
  it('one write is the statement a deferred transaction combines, so both share one named statement', () => {
    const parts = write('a1', 'p1', 1);
    expect(
      batchedInsertSql(
        parts.map((p) => p.sql),
        [4, 2],
        1,
      ),
    ).toBe(combineStatements(parts).sql);
  });

  it('several writes: each INSERT with a row per write, parameters part by part and row by row', () => {
    expect(batchedInsertSql([INSERT_A, INSERT_B], [4, 2], 2)).toBe(
      'with w0 as (insert into a (id, parent_id, n, note) values ($1, $2, $3, $4), ($5, $6, $7, $8)) ' +
        'insert into b (a_id, made) values ($9, $10), ($11, $12)',
    );
    expect(batchedInsertSql(['insert into a (id, n) values ($1, coalesce($2, 0))'], [2], 2)).toBe(
      'insert into a (id, n) values ($1, coalesce($2, 0)), ($3, coalesce($4, 0))',
    );
  });

  it('only plain single-row INSERTs can be batched', () => {
    const bad = [
      'insert into a (id) values ($1) returning id',
      'insert into a (id) values ($1) on conflict do nothing',
      'insert into a (id) select $1',
      'update a set n = $1',
    ];
    for (const sql of bad) {
      expect(PgWriteBatches.batchable([{ sql, parameters: ['x'] }])).toBe(false);
      expect(batchedInsertSql([sql], [1], 2)).toBeUndefined();
    }
    expect(PgWriteBatches.batchable(write('a', 'p', 1))).toBe(true);
    expect(PgWriteBatches.batchable([])).toBe(false);
  });

  it('a lookup: its parameters as arrays, each row with the number of its call', () => {
    expect(batchedLookupSql('select id from a where id = $1 and parent_id = $2', 2)).toBe(
      'select wr_calls.wr_call::int as wr_call, wr_row.* from unnest($1::text[], $2::text[]) with ordinality ' +
        'as wr_calls(p1, p2, wr_call) cross join lateral ' +
        '(select id from a where id = wr_calls.p1 and parent_id = wr_calls.p2) as wr_row',
    );
    expect(PgLookupBatches.batchable(['a', 'b'])).toBe(true);
    expect(PgLookupBatches.batchable(['a', 1])).toBe(false);
    expect(PgLookupBatches.batchable([])).toBe(false);
  });
});

/**
 * Group commit and lookup batching on a real PostgreSQL: calls made while one statement is in flight
 * go together as one statement, each call still gets its own answer, and a call PostgreSQL refuses
 * fails alone.
 */
describe.skipIf(!process.env.DATABASE_URL)('batches on PostgreSQL', () => {
  const url = process.env.DATABASE_URL!;
  const schema = `wr_batches_${randomBytes(6).toString('hex')}`;
  const types: PgTypes = {
    getTypeParser: (oid, format) =>
      oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, (format ?? 'text') as 'text'),
  };
  let pool: pg.Pool;

  beforeAll(async () => {
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    await setup.query(`create schema "${schema}"; set search_path = "${schema}";
      create table parent (id text primary key);
      create table a (id text primary key, parent_id text not null references parent (id), n int8 not null, note text);
      create table b (seq bigserial primary key, a_id text not null references a (id), made text not null);
      insert into parent (id) values ('p1'), ('p2');`);
    await setup.end();
    pool = new pg.Pool({ connectionString: url, max: 4, types, options: `-c search_path="${schema}"` });
    useNamedStatements(pool, types);
  });
  afterAll(async () => {
    await pool?.end();
    await dropSchema(url, schema);
  });

  const rowsOf = async (ids: string[]) =>
    (
      await pool.query(
        'select a.id, a.parent_id, a.n, a.note, b.made from a join b on b.a_id = a.id where a.id = any($1) order by a.n',
        [ids],
      )
    ).rows;

  const endOfTurn = () => new Promise((r) => setImmediate(r));

  it('writes made in one turn of the event loop go as one statement; every row as its own write made it', async () => {
    const batches = new PgWriteBatches(pool, 1);
    const ids = Array.from({ length: 30 }, (_, i) => `w1-${i}`);
    await Promise.all(ids.map((id, i) => batches.run(write(id, i % 2 ? 'p1' : 'p2', i))));
    expect(batches.counts).toEqual({ calls: 30, statements: 1 });
    const rows = await rowsOf(ids);
    expect(rows).toHaveLength(30);
    rows.forEach((r, i) =>
      expect(r).toEqual({
        id: `w1-${i}`,
        parent_id: i % 2 ? 'p1' : 'p2',
        n: i,
        note: `note w1-${i}`,
        made: `made w1-${i}`,
      }),
    );
  });

  it('a batch holds at most maxRows writes; the rest go in the next', async () => {
    const batches = new PgWriteBatches(pool, 1, 8);
    const ids = Array.from({ length: 21 }, (_, i) => `w2-${i}`);
    await Promise.all(ids.map((id, i) => batches.run(write(id, 'p1', i))));
    expect(batches.counts).toEqual({ calls: 21, statements: 3 }); // 8 + 8 + 5
    expect(await rowsOf(ids)).toHaveLength(21);
  });

  it('a write PostgreSQL refuses fails alone: the others of its batch are written, none of its parts is', async () => {
    const batches = new PgWriteBatches(pool, 1);
    const ids = Array.from({ length: 10 }, (_, i) => `w3-${i}`);
    const outcomes = await Promise.allSettled(
      ids.map((id, i) => batches.run(write(id, i === 5 ? 'no-such-parent' : 'p1', i))),
    );
    outcomes.forEach((o, i) => expect(o.status).toBe(i === 5 ? 'rejected' : 'fulfilled'));
    const refused = outcomes[5] as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(pg.DatabaseError);
    expect((refused.reason as pg.DatabaseError).code).toBe('23503'); // foreign key
    expect((await rowsOf(ids)).map((r) => r.id)).toEqual(ids.filter((_, i) => i !== 5));
    const { rows } = await pool.query("select count(*)::int as n from b where a_id = 'w3-5'");
    expect(rows[0].n).toBe(0);
    // The batch of 10 refused, then its 10 writes alone.
    expect(batches.counts).toEqual({ calls: 10, statements: 1 + 10 });
  });

  it('writes made while one is in flight wait for it, then go together', async () => {
    const batches = new PgWriteBatches(pool, 1);
    const first = batches.run(write('w6-0', 'p1', 0));
    await endOfTurn(); // sent
    const ids = Array.from({ length: 12 }, (_, i) => `w6-${i + 1}`);
    const rest = ids.map((id, i) => batches.run(write(id, 'p2', i + 1)));
    await Promise.all([first, ...rest]);
    expect(batches.counts).toEqual({ calls: 13, statements: 2 });
    expect(await rowsOf(['w6-0', ...ids])).toHaveLength(13);
  });

  it('a write made while nothing is in flight goes at the end of its turn, alone', async () => {
    const batches = new PgWriteBatches(pool, 2);
    await batches.run(write('w4-0', 'p1', 0));
    await batches.run(write('w4-1', 'p1', 1));
    expect(batches.counts).toEqual({ calls: 2, statements: 2 });
    expect(await rowsOf(['w4-0', 'w4-1'])).toHaveLength(2);
  });

  const LOOKUP =
    'select a.id, a.n, p.id as parent from a join parent p on p.id = a.parent_id where a.id = $1 and p.id = $2';

  it('lookups made in one turn go as one statement; each call gets its own row, or none', async () => {
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => new PgWriteBatches(pool).run(write(`l1-${i}`, 'p2', 100 + i))),
    );
    const lookups = new PgLookupBatches(pool, 1);
    const calls = Array.from({ length: 12 }, (_, i) =>
      // Even calls find their row; odd ones ask for a row that does not exist or for another parent.
      i % 2 === 0
        ? [`l1-${i / 2}`, 'p2']
        : i % 4 === 1
          ? [`l1-missing-${i}`, 'p2']
          : [`l1-${(i - 1) / 2}`, 'p1'],
    );
    const answers = await Promise.all(calls.map((params) => lookups.run(LOOKUP, params)));
    expect(lookups.counts).toEqual({ calls: 12, statements: 1 });
    // Rows of a batch also carry the number of their call.
    answers.forEach((rows, i) =>
      expect(rows).toEqual(
        i % 2 === 0 ? [{ id: `l1-${i / 2}`, n: 100 + i / 2, parent: 'p2', wr_call: i + 1 }] : [],
      ),
    );
  });

  it('a lookup PostgreSQL refuses fails alone; the others of its batch are answered', async () => {
    const lookups = new PgLookupBatches(pool, 1);
    const sql = 'select a.id from a where a.id = $1 and a.n = $2::int8';
    const params = [
      ['l1-0', '100'],
      ['l1-1', '101'],
      ['l1-2', 'not a number'],
      ['l1-3', '103'],
    ];
    const outcomes = await Promise.allSettled(params.map((p) => lookups.run(sql, p)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(((outcomes[2] as PromiseRejectedResult).reason as pg.DatabaseError).code).toBe('22P02');
    expect((outcomes[3] as PromiseFulfilledResult<unknown>).value).toEqual([{ id: 'l1-3' }]); // sent again alone
  });

  it('a lookup sees what committed before it was made, even when it waited for a batch', async () => {
    const lookups = new PgLookupBatches(pool, 1);
    // A slow lookup holds the one slot; the insert commits meanwhile; the lookup made after it waits.
    const slow = lookups.run('select $1::text as slept from pg_sleep(0.3)', ['yes']);
    await pool.query("insert into a (id, parent_id, n) values ('l2-0', 'p1', 7)");
    const after = lookups.run(LOOKUP, ['l2-0', 'p1']);
    expect(await slow).toEqual([{ slept: 'yes' }]);
    expect(await after).toEqual([{ id: 'l2-0', n: 7, parent: 'p1' }]);
    expect(lookups.counts).toEqual({ calls: 2, statements: 2 });
  });

  it('a statement stalled in flight does not hold back the calls made after it', async () => {
    const lookups = new PgLookupBatches(pool, 1);
    const slow = lookups.run('select $1::text as slept from pg_sleep(1)', ['slow']).then(() => 'slow');
    await new Promise((r) => setTimeout(r, 100));
    const fast = lookups.run(LOOKUP, ['l1-0', 'p2']).then(() => 'fast');
    expect(await Promise.race([slow, fast])).toBe('fast');
    await slow;
  });

  it('a write stalled on a lock does not hold back writes to other rows', async () => {
    const batches = new PgWriteBatches(pool, 1);
    const locker = await pool.connect();
    try {
      // A transaction holds parent p2 as a delete would: an insert that references it waits.
      await locker.query('begin');
      await locker.query("select id from parent where id = 'p2' for update");
      const stalled = batches.run(write('w5-0', 'p2', 0)).then(() => 'stalled');
      await new Promise((r) => setTimeout(r, 100));
      const free = batches.run(write('w5-1', 'p1', 1)).then(() => 'free');
      expect(await Promise.race([stalled, free])).toBe('free');
      await locker.query('commit');
      expect(await stalled).toBe('stalled');
    } finally {
      locker.release();
    }
    expect(await rowsOf(['w5-0', 'w5-1'])).toHaveLength(2);
  });
});
