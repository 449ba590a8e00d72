import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../src/domain/ids.js';
import { openSqlite, type DatabaseHandle } from '../src/storage/database.js';
import type { SqliteEngine } from '../src/storage/sqlite-engine.js';
import { Storage } from '../src/storage/storage.js';

/**
 * The SQLite engine's group commit (see storage/sqlite-engine.ts): transactions that finish in the same
 * event-loop turn share one COMMIT, nobody is answered before it, and the uncommitted group is never
 * visible outside it.
 */
describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite group commit', () => {
  let dir: string;
  let file: string;
  let handle: DatabaseHandle;
  let engine: SqliteEngine;
  let storage: Storage;
  let orgId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workroom-group-'));
    file = join(dir, 'test.db');
    handle = openSqlite(file);
    engine = handle.sqlite!;
    storage = new Storage(handle);
    await storage.migrate();
    orgId = (await storage.stores.orgs.create('Acme')).id;
    // A table whose foreign key is checked only at COMMIT: the one way to make a commit fail on demand.
    engine.raw.exec(`create table gc_parent (id text primary key);
      create table gc_child (id text primary key, parent_id text references gc_parent (id) deferrable initially deferred)`);
  });
  afterAll(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What another process would see: a fresh connection to the file. */
  const outsider = (sqlText: string, ...params: unknown[]) => {
    const db = new BetterSqlite3(file, { readonly: true });
    try {
      return db.prepare(sqlText).all(...params);
    } finally {
      db.close();
    }
  };

  const appendEvent = (name: string) =>
    storage.transaction(async (s) => {
      const now = nowIso();
      await s.events.append([
        { id: newId(), org_id: orgId, type: 'message.created', data: name, created_at: now },
      ]);
      return name;
    });

  it('transactions finishing in one turn share a commit; each resolves only once it is durable', async () => {
    const before = engine.groupCommits;
    const names = Array.from({ length: 20 }, (_, i) => `group-${i}-${newId()}`);
    let resolved = 0;
    await Promise.all(
      names.map((n) =>
        appendEvent(n).then(() => {
          // At the moment it resolves, another connection already sees it.
          expect(outsider('select seq from events where data = ?', n)).toHaveLength(1);
          resolved++;
        }),
      ),
    );
    expect(resolved).toBe(20);
    const commits = engine.groupCommits - before;
    expect(commits).toBeGreaterThanOrEqual(1);
    expect(commits).toBeLessThan(20);
  });

  it('a failing transaction in a group undoes only its own changes', async () => {
    const ok = `kept-${newId()}`;
    const results = await Promise.allSettled([
      appendEvent(ok),
      storage.transaction(async (s) => {
        await s.events.append([
          { id: newId(), org_id: orgId, type: 'message.created', data: 'undone', created_at: nowIso() },
        ]);
        throw new Error('boom');
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(outsider('select seq from events where data = ?', ok)).toHaveLength(1);
    expect(outsider("select seq from events where data = 'undone'")).toHaveLength(0);
  });

  it('the open group is invisible to reads outside it and to other connections until it commits', () => {
    const id = newId();
    engine.beginTransaction();
    engine.run('insert into gc_parent (id) values (?)', [id]);
    engine.endTransaction(true);
    // Released into the group, not committed yet.
    expect(engine.runOutsideTransaction('select id from gc_parent where id = ?', [id])).toEqual({ rows: [] });
    expect(outsider('select id from gc_parent where id = ?', id)).toEqual([]);
    engine.commitGroup();
    expect(outsider('select id from gc_parent where id = ?', id)).toEqual([{ id }]);
  });

  it('when the commit fails, every transaction of the group fails and none of it is kept', async () => {
    const good = newId();
    const orphan = newId();
    const results = await Promise.allSettled([
      storage.transaction(async () => {
        engine.run('insert into gc_parent (id) values (?)', [good]);
      }),
      storage.transaction(async () => {
        engine.run('insert into gc_child (id, parent_id) values (?, ?)', [orphan, 'missing']);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(outsider('select id from gc_parent where id = ?', good)).toEqual([]);
    expect(outsider('select id from gc_child where id = ?', orphan)).toEqual([]);
    // The engine goes on: the next transaction commits.
    const next = `after-${newId()}`;
    await appendEvent(next);
    expect(outsider('select seq from events where data = ?', next)).toHaveLength(1);
  });

  it('a write outside a transaction resolves after its commit', async () => {
    const name = `standalone-${newId()}`;
    const org = await storage.stores.orgs.create(name);
    expect(outsider('select id from organizations where id = ?', org.id)).toEqual([{ id: org.id }]);
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite WAL under sustained writes', () => {
  it('stays bounded: the writer checkpoints between commits once the WAL outgrows its limit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workroom-wal-'));
    const file = join(dir, 'test.db');
    const limitBytes = 256 * 1024;
    const storage = new Storage(openSqlite(file, { limitBytes, checkpointIntervalMs: 20 }));
    try {
      await storage.migrate();
      const orgId = (await storage.stores.orgs.create('Acme')).id;
      const data = 'x'.repeat(2000);
      // Write without a pause, 8 transactions per turn, until the WAL has started over three times (its
      // file shrinks back to the limit), or 80 MB have been written, whichever comes first: however
      // slow the machine, the worker's request gets through long before that.
      let size = 0;
      let restarts = 0;
      let written = 0;
      while (restarts < 3 && written < 80 * 1024 * 1024) {
        await Promise.all(
          Array.from({ length: 8 }, () =>
            storage.transaction((s) =>
              s.events.append([
                { id: newId(), org_id: orgId, type: 'message.created', data, created_at: nowIso() },
              ]),
            ),
          ),
        );
        written += 8 * data.length;
        const now = statSync(`${file}-wal`).size;
        if (now < size) restarts++;
        size = now;
      }
      expect(await storage.stores.events.listAfter(0, 10)).toHaveLength(10);
      // Without the writer's checkpoint the WAL never starts over: the worker's own checkpoints never
      // catch up with a writer that does not pause, and the file holds every frame written.
      expect(restarts).toBe(3);
    } finally {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite rows', () => {
  it('become objects keyed by column name (any name; a repeated one keeps the last); megabyte results are not cached', async () => {
    const handle = openSqlite(':memory:');
    try {
      const engine = handle.sqlite!;
      const row = engine.run(`select 1 as "a""b", 'x' as "}; throw 1; //", null as n, 2 as d, 3 as d`, [])
        .rows[0];
      expect(row).toEqual({ 'a"b': 1, '}; throw 1; //': 'x', n: null, d: 3 });
      expect(engine.run('select ? as v union all select ?', ['p', 'q']).rows).toEqual([
        { v: 'p' },
        { v: 'q' },
      ]);
      // The committed-read cache keeps small results, and never one that would take megabytes.
      const read = (v: string) =>
        (engine.runOutsideTransaction('select ? as v', [v]) as { rows: unknown[] }).rows;
      // Each read answers a fresh array (callers may sort it) holding the shared cached rows.
      expect(read('small')[0]).toBe(read('small')[0]);
      const huge = 'x'.repeat(5_000_000);
      expect(read(huge)[0]).not.toBe(read(huge)[0]);
    } finally {
      await handle.close();
    }
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite committed-read cache', () => {
  it('shares frozen rows, and a rolled-back transaction leaves cached results as they were', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workroom-cache-'));
    const handle = openSqlite(join(dir, 'test.db'));
    const storage = new Storage(handle);
    try {
      await storage.migrate();
      const org = await storage.stores.orgs.create('Acme');
      const read = () =>
        handle.sqlite!.runOutsideTransaction('select id, name from organizations where id = ?', [org.id]) as {
          rows: { name: string }[];
        };
      const cached = read();
      expect(read().rows[0]).toBe(cached.rows[0]); // the same rows, shared (in a fresh array)
      expect(Object.isFrozen(cached.rows[0])).toBe(true);
      expect(() => {
        cached.rows[0]!.name = 'changed';
      }).toThrow(TypeError);
      // Each caller has an array of its own: emptying or reordering it leaves the cached result whole.
      read().rows.length = 0;
      cached.rows.reverse().push({ name: 'added' });
      expect(read().rows).toEqual([{ id: org.id, name: 'Acme' }]);
      const now = nowIso();
      const channelId = newId();
      await storage.stores.containers.createChannel({
        id: channelId,
        org_id: org.id,
        name: 'general',
        description: '',
        is_private: 0,
        created_by: null,
        created_at: now,
        updated_at: now,
      });
      const who = { type: 'user' as const, id: newId() };
      const first = await storage.stores.containers.getChannelFor(channelId, who);
      expect(first?.is_member).toBe(false);
      await storage
        .transaction(async (s) => {
          await s.containers.addMember('channel', channelId, who, now);
          throw new Error('undo');
        })
        .catch(() => undefined);
      expect((await storage.stores.containers.getChannelFor(channelId, who))?.is_member).toBe(false);
      await storage.transaction((s) => s.containers.addMember('channel', channelId, who, now));
      expect((await storage.stores.containers.getChannelFor(channelId, who))?.is_member).toBe(true);
    } finally {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite committed-read cache: keys', () => {
  it('parameters holding the separator make keys of their own; statements beyond the names kept still answer right', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workroom-cache-'));
    const handle = openSqlite(join(dir, 'test.db'));
    try {
      const read = (text: string, parameters: unknown[]) =>
        (handle.sqlite!.runOutsideTransaction(text, parameters) as { rows: { v: string }[] }).rows[0]!.v;
      const both = "select ? || '|' || ? as v";
      // Without lengths in the key these two lists read as one key: the second got the first's answer.
      expect(read(both, ['x\u0001string:y', 'z'])).toBe('x\u0001string:y|z');
      expect(read(both, ['x', 'y\u0001string:z'])).toBe('x|y\u0001string:z');
      expect(read(both, ['x\u0001string:1:y', 'z'])).toBe('x\u0001string:1:y|z');
      expect(read(both, ['x', 'y\u0001string:1:z'])).toBe('x|y\u0001string:1:z');
      // More distinct statement texts than the cache names (4,096): each still reads its own result.
      for (let i = 0; i < 4200; i++) expect(read(`select ? || '${i}' as v`, ['n'])).toBe(`n${i}`);
      expect(read(both, ['x', 'y\u0001string:z'])).toBe('x|y\u0001string:z');
      for (let i = 0; i < 5; i++) expect(read(`select ? || '${i}' as v`, ['m'])).toBe(`m${i}`);
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite committed-read cache and other processes', () => {
  it('a write by another connection to the file is seen within milliseconds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workroom-other-'));
    const file = join(dir, 'test.db');
    const storage = new Storage(openSqlite(file));
    try {
      await storage.migrate();
      const org = await storage.stores.orgs.create('Before');
      const name = async () => (await storage.stores.orgs.get(org.id))?.name;
      expect(await name()).toBe('Before');
      expect(await name()).toBe('Before'); // cached
      // An operator fixes a name with the sqlite3 shell while the server runs.
      const other = new BetterSqlite3(file);
      other.prepare('update organizations set name = ? where id = ?').run('After', org.id);
      other.close();
      await new Promise((r) => setTimeout(r, 5));
      expect(await name()).toBe('After');
    } finally {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The committed-read cache keeps results across commits that did not write what they read, and drops
 * every result whose tables a commit wrote: directly, through a trigger, a foreign-key action or a
 * view, in a group, on its own or joining an open group. Each case reads, writes, then reads again:
 * a stale row served from the cache fails it.
 */
describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite committed-read cache: what a commit wrote', () => {
  let dir: string;
  let handle: DatabaseHandle;
  let engine: SqliteEngine;
  let storage: Storage;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workroom-footprint-'));
    handle = openSqlite(join(dir, 'test.db'));
    engine = handle.sqlite!;
    storage = new Storage(handle);
    await storage.migrate();
    // Through the engine: a schema change is a write it does not understand (the cache starts afresh).
    for (const ddl of [
      'create table fp_a (id text primary key, v text)',
      'create table fp_b (id text primary key, v text)',
      'create table fp_log (v text)',
      'create trigger fp_a_log after insert on fp_a begin insert into fp_log (v) values (new.v); end',
      'create table fp_parent (id text primary key)',
      'create table fp_child (id text primary key, parent_id text references fp_parent (id) on delete cascade)',
      'create view fp_joined as select p.id as pid, c.id as cid from fp_parent p join fp_child c on c.parent_id = p.id',
      'create virtual table fp_fts using fts5(v)',
    ])
      await engine.runOutsideTransaction(ddl, []);
  });
  afterAll(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const read = <R = Record<string, unknown>>(text: string, ...params: unknown[]) =>
    (engine.runOutsideTransaction(text, params) as { rows: R[] }).rows;
  const inTransaction = (text: string, ...params: unknown[]) =>
    storage.transaction(async () => {
      engine.run(text, params);
    });

  it('keeps a result across commits of other tables, drops it with a commit of its own', async () => {
    await inTransaction('insert into fp_a (id, v) values (?, ?)', 'a1', 'one');
    const first = read('select v from fp_a where id = ?', 'a1');
    expect(first).toEqual([{ v: 'one' }]);
    await inTransaction('insert into fp_b (id, v) values (?, ?)', 'b1', 'x');
    expect(read('select v from fp_a where id = ?', 'a1')[0]).toBe(first[0]); // kept: the same frozen row
    await inTransaction('update fp_a set v = ? where id = ?', 'two', 'a1');
    expect(read('select v from fp_a where id = ?', 'a1')).toEqual([{ v: 'two' }]);
  });

  it('drops what a trigger wrote', async () => {
    const count = () => read<{ n: number }>('select count(*) as n from fp_log')[0]!.n;
    const before = count();
    await inTransaction('insert into fp_a (id, v) values (?, ?)', newId(), 'logged');
    expect(count()).toBe(before + 1);
  });

  it('multi-row inserts of any row count write what their one-row form writes (trigger included)', async () => {
    const count = () => read<{ n: number }>('select count(*) as n from fp_log')[0]!.n;
    for (const rows of [2, 3, 5]) {
      const before = count();
      const params = Array.from({ length: rows }, (_, i) => [newId(), `multi-${i}`]).flat();
      const tuples = Array.from({ length: rows }, () => '(?, ?)').join(', ');
      await storage.transaction(async () => {
        engine.run(`insert into fp_a (id, v) values ${tuples}`, params);
      });
      expect(count()).toBe(before + rows);
    }
  });

  it('drops what a foreign-key action wrote, and what a view reads', async () => {
    await inTransaction('insert into fp_parent (id) values (?)', 'p1');
    await inTransaction('insert into fp_child (id, parent_id) values (?, ?)', 'c1', 'p1');
    expect(read('select id from fp_child where parent_id = ?', 'p1')).toEqual([{ id: 'c1' }]);
    expect(read('select cid from fp_joined where pid = ?', 'p1')).toEqual([{ cid: 'c1' }]);
    await inTransaction('delete from fp_parent where id = ?', 'p1'); // cascades to fp_child
    expect(read('select id from fp_child where parent_id = ?', 'p1')).toEqual([]);
    expect(read('select cid from fp_joined where pid = ?', 'p1')).toEqual([]);
  });

  it('drops what a write outside a transaction wrote, committed on its own or in the open group', async () => {
    expect(read('select v from fp_b where id = ?', 'b2')).toEqual([]);
    await engine.runOutsideTransaction('insert into fp_b (id, v) values (?, ?)', ['b2', 'alone']);
    expect(read('select v from fp_b where id = ?', 'b2')).toEqual([{ v: 'alone' }]);
    // A group is open (a transaction released into it): the write joins it, and resolves after its commit.
    engine.beginTransaction();
    engine.run('insert into fp_a (id, v) values (?, ?)', [newId(), 'grouped']);
    engine.endTransaction(true);
    expect(read('select v from fp_b where id = ?', 'b3')).toEqual([]); // from the reader, cached
    await engine.runOutsideTransaction('insert into fp_b (id, v) values (?, ?)', ['b3', 'joined']);
    expect(read('select v from fp_b where id = ?', 'b3')).toEqual([{ v: 'joined' }]);
  });

  it('a result read while the group was open is dropped by the group commit that wrote its table', () => {
    engine.beginTransaction();
    engine.run('insert into fp_b (id, v) values (?, ?)', ['b4', 'pending']);
    engine.endTransaction(true);
    expect(read('select v from fp_b where id = ?', 'b4')).toEqual([]); // the last commit, cached
    engine.commitGroup();
    expect(read('select v from fp_b where id = ?', 'b4')).toEqual([{ v: 'pending' }]);
  });

  it('a read of no table, or of a virtual table, is dropped by any commit that wrote', async () => {
    const fts = () => read<{ n: number }>('select count(*) as n from fp_fts')[0]!.n;
    const before = fts();
    const noTable = read('select ? as v', 'x');
    await inTransaction('insert into fp_b (id, v) values (?, ?)', newId(), 'any');
    expect(read('select ? as v', 'x')[0]).not.toBe(noTable[0]);
    await inTransaction('insert into fp_fts (v) values (?)', 'hello');
    expect(fts()).toBe(before + 1);
  });

  it('a write to a virtual table empties the cache', async () => {
    const kept = read('select v from fp_a where id = ?', 'a1');
    await inTransaction('insert into fp_fts (v) values (?)', 'again');
    expect(read('select v from fp_a where id = ?', 'a1')[0]).not.toBe(kept[0]);
  });

  it('stores: a membership added or removed, and a message posted, are seen at once', async () => {
    const org = await storage.stores.orgs.create('Footprint');
    const now = nowIso();
    const channelId = newId();
    await storage.stores.containers.createChannel({
      id: channelId,
      org_id: org.id,
      name: 'general',
      description: '',
      is_private: 0,
      created_by: null,
      created_at: now,
      updated_at: now,
    });
    const who = { type: 'user' as const, id: newId() };
    expect((await storage.stores.containers.getChannelFor(channelId, who))?.is_member).toBe(false);
    await storage.transaction((s) => s.containers.addMember('channel', channelId, who, now));
    expect((await storage.stores.containers.getChannelFor(channelId, who))?.is_member).toBe(true);
    await storage.transaction((s) => s.containers.removeMember('channel', channelId, who));
    expect((await storage.stores.containers.getChannelFor(channelId, who))?.is_member).toBe(false);
    // Cached across the commits of messages (and their events and search rows) that do not touch it.
    const org1 = await storage.stores.orgs.get(org.id);
    await storage.transaction(async (s) => {
      await s.messages.insert({
        id: newId(),
        org_id: org.id,
        channel_id: channelId,
        topic_id: null,
        dm_room_id: null,
        sender_type: 'user',
        sender_id: who.id,
        bot_id: null,
        content: 'hello',
        content_html: null,
        actions: null,
        created_at: now,
        edited_at: null,
        deleted_at: null,
      });
      await s.events.append([{ id: newId(), org_id: org.id, type: 'x', data: '{}', created_at: now }]);
    });
    expect(await storage.stores.orgs.get(org.id)).toBe(org1);
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))(
  'SQLite committed-read cache: writes that open no table',
  () => {
    it('a pragma that sets something empties the cache (its effect is not a table)', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'workroom-pragma-'));
      const handle = openSqlite(join(dir, 'test.db'));
      try {
        const engine = handle.sqlite!;
        const version = () =>
          (engine.runOutsideTransaction('pragma user_version', []) as { rows: { user_version: number }[] })
            .rows[0]!.user_version;
        expect(version()).toBe(0);
        await engine.runOutsideTransaction('pragma user_version = 7', []);
        expect(version()).toBe(7);
      } finally {
        await handle.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
