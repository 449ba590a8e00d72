import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namePgStatement, useNamedStatements, type PgTypes } from '../src/storage/pg-statements.js';
import { dropSchema } from './helpers/server.js';

/**
 * Registered SQL runs as a named statement through our own pg "submittable" (pg-statements.ts):
 * its answers must be the ones pg's own Query gives for the same SQL, on a real PostgreSQL, and a
 * connection describes each statement once.
 */
describe.skipIf(!process.env.DATABASE_URL)('named statements on PostgreSQL', () => {
  const url = process.env.DATABASE_URL!;
  const schema = `wr_named_${randomBytes(6).toString('hex')}`;
  const types: PgTypes = {
    getTypeParser: (oid, format) =>
      oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, (format ?? 'text') as 'text'),
  };
  const open = (named: boolean) => {
    const pool = new pg.Pool({ connectionString: url, max: 1, types, options: `-c search_path="${schema}"` });
    if (named) useNamedStatements(pool, types);
    return pool;
  };
  let named: pg.Pool;
  let plain: pg.Pool;

  const SQL = {
    select: `select id, n, doc, note, made, 'x' as id from ${'t'} where n >= $1 order by n`,
    insert: 'insert into t (id, n, doc, note, made) values ($1, $2, $3, $4, $5)',
    returning: 'insert into t (id, n, doc, note, made) values ($1, $2, $3, $4, $5) returning n, id',
    update: 'update t set note = $1 where n >= $2',
    remove: 'delete from t where n = $1',
    broken: 'select * from no_such_table where a = $1',
  };

  beforeAll(async () => {
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    await setup.query(
      `create schema "${schema}"; create table "${schema}".t (id text primary key, n int8 not null, doc jsonb, note text, made timestamptz)`,
    );
    await setup.end();
    for (const sql of Object.values(SQL)) namePgStatement(sql);
    named = open(true);
    plain = open(false);
  });
  afterAll(async () => {
    await named?.end();
    await plain?.end();
    await dropSchema(url, schema);
  });

  const row = (i: number) => [
    `id-${i}`,
    i,
    { k: [i, 'v'] },
    i % 2 ? null : `note ${i}`,
    new Date(Date.UTC(2026, 0, i + 1)),
  ];

  it('answers as pg does: rows, parsed columns, nulls, a repeated column name, command and count', async () => {
    for (let i = 0; i < 4; i++) await named.query(SQL.insert, row(i));
    const returned = await named.query(SQL.returning, row(4));
    expect(returned.rows).toEqual([{ n: 4, id: 'id-4' }]);
    expect(returned.command).toBe('INSERT');
    expect(returned.rowCount).toBe(1);

    for (let round = 0; round < 3; round++) {
      const a = await named.query(SQL.select, [1]);
      const b = await plain.query(SQL.select, [1]);
      expect(a.rows).toEqual(b.rows);
      expect(a.rows).toHaveLength(4);
      expect(a.rows[0]).toEqual({
        id: 'x',
        n: 1,
        doc: { k: [1, 'v'] },
        note: null,
        made: new Date(Date.UTC(2026, 0, 2)),
      });
      expect(Object.getPrototypeOf(a.rows[0])).toBe(Object.prototype);
      expect([a.command, a.rowCount]).toEqual([b.command, b.rowCount]);
    }
    const updated = await named.query(SQL.update, ['changed', 3]);
    expect([updated.command, updated.rowCount, updated.rows]).toEqual(['UPDATE', 2, []]);
    const removed = await named.query(SQL.remove, [0]);
    expect([removed.command, removed.rowCount]).toEqual(['DELETE', 1]);
    expect((await named.query(SQL.select, [100])).rows).toEqual([]);
  });

  it('describes a statement once per connection', async () => {
    const count = async (pool: pg.Pool) => {
      const client = await pool.connect();
      let described = 0;
      const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
      const onDescription = () => described++;
      connection.on('rowDescription', onDescription);
      try {
        for (let i = 0; i < 5; i++)
          expect((await client.query(SQL.select, [0])).rows.length).toBeGreaterThan(0);
      } finally {
        connection.off('rowDescription', onDescription);
        client.release();
      }
      return described;
    };
    expect(await count(plain)).toBe(5);
    // The first test already ran this statement on the named pool's one connection.
    expect(await count(named)).toBe(0);
  });

  it("fails as pg does and leaves the connection usable: PostgreSQL's error, a value pg cannot send, bad SQL", async () => {
    const duplicate = await named.query(SQL.insert, row(1)).catch((e: unknown) => e);
    expect(duplicate).toBeInstanceOf(pg.DatabaseError);
    expect((duplicate as pg.DatabaseError).code).toBe('23505');

    // On one connection (pg-pool drops a client whose pool.query failed): a value pg cannot send fails
    // that call only; the statement stays prepared and the same insert works at once.
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const client = await named.connect();
    try {
      const unsendable = await client
        .query(SQL.insert, ['id-c', 7, circular, null, null])
        .catch((e: unknown) => e);
      expect(unsendable).toBeInstanceOf(Error);
      const fine = await client.query(SQL.insert, ['id-c2', 7, { ok: true }, null, null]);
      expect([fine.command, fine.rowCount]).toEqual(['INSERT', 1]);
      await client.query(SQL.remove, [7]);
    } finally {
      client.release();
    }

    const broken = await named.query(SQL.broken, [1]).catch((e: unknown) => e);
    expect((broken as pg.DatabaseError).code).toBe('42P01');

    // Still one working connection, its statements still prepared: nothing of the failures was written.
    expect((await named.query(SQL.select, [0])).rows.map((r: { n: number }) => r.n)).toEqual([1, 2, 3, 4]);
    expect((await named.query('select count(*)::int as c from t where id = $1', ['id-c'])).rows).toEqual([
      { c: 0 },
    ]);
    expect(named.totalCount).toBe(1);
  });

  it("takes the callback form too (pg-pool's pool.query) and leaves SQL that is not registered to pg", async () => {
    const viaCallback = await new Promise<pg.QueryResult>((resolve, reject) => {
      void named.connect().then((client) =>
        client.query(SQL.select, [0], (err: Error | undefined, res: pg.QueryResult) => {
          client.release();
          return err ? reject(err) : resolve(res);
        }),
      );
    });
    expect(viaCallback.rows).toHaveLength(4);
    expect((await named.query('select $1::text as a', ['b'])).rows).toEqual([{ a: 'b' }]);
  });
});
