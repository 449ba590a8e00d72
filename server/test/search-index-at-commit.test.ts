import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../src/domain/ids.js';
import { openSqlite, type DatabaseHandle } from '../src/storage/database.js';
import type { SqliteEngine } from '../src/storage/sqlite-engine.js';
import { indexPendingMessages } from '../src/storage/migrations/0007_search_index_at_commit.js';
import { Storage } from '../src/storage/storage.js';
import { SearchBudget } from '../src/storage/stores/search.js';

/**
 * SQLite: new messages enter the full-text index in batches right before a commit (migration 0007,
 * docs/SEARCH.md "Write throughput"), and search reads the index and the messages still pending. What
 * matters is that search stays exact, and that the index, once the pending messages are in, is exactly
 * what the triggers of 0002 made of it: checked after group commits mixing inserts, edits, soft and
 * hard deletes of pending and of indexed messages, a transaction rolled back, a commit that fails, a
 * write outside any transaction, and rows written by another process.
 */
describe.skipIf(Boolean(process.env.DATABASE_URL))('SQLite: messages indexed at commit', () => {
  let dir: string;
  let file: string;
  let handle: DatabaseHandle;
  let engine: SqliteEngine;
  let storage: Storage;
  const W = `w${newId().replaceAll('-', '').slice(-10)}`;
  let n = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workroom-fts-commit-'));
    file = join(dir, 'test.db');
    handle = openSqlite(file);
    engine = handle.sqlite!;
    storage = new Storage(handle);
    expect(await storage.migrate()).toContain('0007_search_index_at_commit');
    const now = nowIso();
    engine.raw.exec(`insert into organizations (id, name, created_at) values ('o1', 'o', '${now}');
      insert into channels (id, org_id, name, description, is_private, created_at, updated_at)
        values ('c1', 'o1', 'c', '', 0, '${now}', '${now}');
      create table gc_parent (id text primary key);
      create table gc_child (id text primary key,
        parent_id text references gc_parent (id) deferrable initially deferred)`);
  });
  afterAll(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What another connection (a search reader) sees. */
  const outsider = <T>(sqlText: string, ...params: unknown[]): T[] => {
    const db = new BetterSqlite3(file, { readonly: true });
    try {
      return db.prepare(sqlText).all(...params) as T[];
    } finally {
      db.close();
    }
  };
  /** Ids of the messages the index finds for a word (or a prefix `"ab" *`), sorted. */
  const found = (match: string) =>
    outsider<{ id: string }>(
      `select m.id from messages_fts f join messages m on m.rowid = f.rowid
       where messages_fts match ? order by m.id`,
      match,
    ).map((r) => r.id);
  /** Ids of the newest `limit` messages search finds for these words (the last one a prefix if `*`). */
  const search = async (query: string, limit = 100) => {
    const prefix = query.endsWith('*');
    const words = query.replace('*', '').trim().split(/\s+/);
    const found = await storage.search.messages(
      {
        orgId: 'o1',
        reach: { channelIds: ['c1'], topicIds: [], dmRoomIds: [] },
        clauses: [{ words, prefix }],
        candidates: limit,
      },
      new SearchBudget(10_000),
    );
    return found.map((m) => m.id);
  };
  const sorted = (ids: string[]) => [...ids].sort();
  /** Indexes whatever is pending now (as a commit does once enough is pending). */
  const indexNow = () => engine.beforeCommit!(true);
  const pending = () => outsider<{ n: number }>('select count(*) as n from messages_fts_pending')[0]!.n;
  const intact = () =>
    // FTS5's own check of the index structure (against the content table it would count soft-deleted
    // messages, which are left out on purpose).
    engine.raw.prepare(`insert into messages_fts(messages_fts, rank) values ('integrity-check', 0)`).run();

  const insert = (content: string, id = `m${String(n++).padStart(6, '0')}`) => {
    engine.run(
      `insert into messages (id, org_id, channel_id, sender_type, sender_id, content, created_at)
       values (?, 'o1', 'c1', 'user', 'u1', ?, ?)`,
      [id, content, nowIso()],
    );
    return id;
  };
  const tx = <T>(fn: () => T) => storage.transaction(async () => fn());

  it('new messages wait in the pending list, search finds them, and a batch enters the index whole', async () => {
    const commits = engine.groupCommits;
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => tx(() => insert(`${W}grp item${i}`))));
    expect(engine.groupCommits - commits).toBeLessThan(20);
    expect(pending()).toBe(20); // fewer than a batch, none waited long enough
    expect(found(`${W}grp`)).toEqual([]);
    expect(sorted(await search(`${W}grp`))).toEqual(sorted(ids));
    expect(sorted(await search(`${W.slice(0, 4)} *`))).toEqual(sorted(ids)); // a prefix too
    expect(await search(`${W}grp item1`)).toEqual([ids[1]]); // words next to each other
    expect(await search(`item1 ${W}grp`)).toEqual([]);
    expect(await search(`${W}grp`, 5)).toEqual(ids.slice(-5).reverse()); // the newest first
    indexNow();
    expect(pending()).toBe(0);
    expect(found(`${W}grp`)).toEqual(sorted(ids));
    expect(await search(`${W}grp`, 5)).toEqual(ids.slice(-5).reverse());
    intact();
  });

  it('indexed and pending matches come newest first, together', async () => {
    const older = await tx(() => insert(`${W}mix one`));
    const old2 = await tx(() => insert(`${W}mix two`));
    indexNow();
    const newer = await tx(() => insert(`${W}mix three`));
    expect(pending()).toBe(1);
    expect(await search(`${W}mix`)).toEqual([newer, old2, older]);
    expect(await search(`${W}mix`, 2)).toEqual([newer, old2]);
    // An indexed message edited goes back to pending, where it is found by its new text only.
    await tx(() => engine.run('update messages set content = ? where id = ?', [`${W}mix edited`, older]));
    expect(await search(`${W}mix`)).toEqual([newer, old2, older]);
    expect(await search('edited')).toEqual([older]);
    expect(await search('one')).toEqual([]);
  });

  it('a commit indexes the pending messages once a batch is full, or once the first waited long enough', async () => {
    indexNow();
    engine.beforeCommit = indexPendingMessages(engine.raw, { rows: 5, ms: 60_000 });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await tx(() => insert(`${W}batch`)));
    expect(pending()).toBe(4);
    ids.push(await tx(() => insert(`${W}batch`)));
    expect(pending()).toBe(0);
    expect(found(`${W}batch`)).toEqual(sorted(ids));
    engine.beforeCommit = indexPendingMessages(engine.raw, { rows: 1000, ms: 30 });
    const late = await tx(() => insert(`${W}late`));
    expect(pending()).toBe(1);
    await new Promise((r) => setTimeout(r, 40));
    await tx(() => insert(`${W}later`));
    expect(pending()).toBe(0);
    expect(found(`${W}late OR ${W}later`)).toHaveLength(2);
    expect(found(`${W}late`)).toEqual([late]);
    engine.beforeCommit = indexPendingMessages(engine.raw);
  });

  it('edits and deletes of pending and of indexed messages in one group leave search and index exact', async () => {
    const [edited, softDeleted, hardDeleted] = await Promise.all([
      tx(() => insert(`${W}old1 kept`)),
      tx(() => insert(`${W}old2 kept`)),
      tx(() => insert(`${W}old3 kept`)),
    ]);
    indexNow();
    expect(found(`${W}old1 OR ${W}old2 OR ${W}old3`)).toHaveLength(3);
    // One group: everything below commits together.
    const results = await Promise.allSettled([
      tx(() => {
        const a = insert(`${W}new1 first`);
        engine.run(`update messages set content = ?, edited_at = ? where id = ?`, [
          `${W}new1 second`,
          nowIso(),
          a,
        ]);
        return a;
      }),
      tx(() => {
        const b = insert(`${W}new2 gone`);
        engine.run(`update messages set deleted_at = ? where id = ?`, [nowIso(), b]);
        return b;
      }),
      tx(() => {
        const c = insert(`${W}new3 gone`);
        engine.run(`delete from messages where id = ?`, [c]);
        return c;
      }),
      tx(() => {
        engine.run(`update messages set content = ? where id = ?`, [`${W}old1 changed`, edited]);
        engine.run(`update messages set deleted_at = ? where id = ?`, [nowIso(), softDeleted]);
        engine.run(`delete from messages where id = ?`, [hardDeleted]);
      }),
      tx(() => {
        insert(`${W}new4 undone`);
        throw new Error('rolled back');
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    const a = (results[0] as PromiseFulfilledResult<string>).value;
    const expectExact = async (query: (w: string) => Promise<string[]> | string[]) => {
      expect(await query(`${W}new1`)).toEqual([a]);
      expect(await query('second')).toEqual([a]);
      expect(await query('first')).toEqual([]);
      expect(await query('gone')).toEqual([]);
      expect(await query('undone')).toEqual([]);
      expect(await query(`${W}old1`)).toEqual([edited]);
      expect(await query('changed')).toEqual([edited]);
      expect(await query(`${W}old2`)).toEqual([]);
      expect(await query(`${W}old3`)).toEqual([]);
      expect(await query('kept')).toEqual([]);
    };
    await expectExact(search);
    indexNow();
    expect(pending()).toBe(0);
    await expectExact(found);
    await expectExact(search);
    intact();
    // Un-deleting a message puts it back.
    await tx(() => engine.run(`update messages set deleted_at = null where id = ?`, [softDeleted]));
    expect(await search(`${W}old2`)).toEqual([softDeleted]);
    indexNow();
    expect(found(`${W}old2`)).toEqual([softDeleted]);
    intact();
  });

  it('a commit that fails indexes nothing and leaves nothing pending', async () => {
    engine.beforeCommit = indexPendingMessages(engine.raw, { rows: 1, ms: 0 });
    const results = await Promise.allSettled([
      tx(() => insert(`${W}fail1`)),
      tx(() => engine.run('insert into gc_child (id, parent_id) values (?, ?)', [newId(), 'missing'])),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(pending()).toBe(0);
    expect(found(`${W}fail1`)).toEqual([]);
    expect(await search(`${W}fail1`)).toEqual([]);
    const after = await tx(() => insert(`${W}fail1 again`));
    expect(pending()).toBe(0);
    expect(found(`${W}fail1`)).toEqual([after]);
    engine.beforeCommit = indexPendingMessages(engine.raw);
  });

  it('a write outside any transaction is found at once', async () => {
    const id = `solo-${newId()}`;
    engine.runOutsideTransaction(
      `insert into messages (id, org_id, channel_id, sender_type, sender_id, content, created_at)
       values (?, 'o1', 'c1', 'user', 'u1', ?, ?)`,
      [id, `${W}solo`, nowIso()],
    );
    expect(await search(`${W}solo`)).toEqual([id]);
  });

  it("another process's messages are found, and indexed when the database is opened", async () => {
    indexNow();
    const other = new BetterSqlite3(file);
    other
      .prepare(
        `insert into messages (id, org_id, channel_id, sender_type, sender_id, content, created_at)
         values (?, 'o1', 'c1', 'user', 'u1', ?, ?)`,
      )
      .run('outside1', `${W}outside`, nowIso());
    other.close();
    expect(pending()).toBe(1);
    expect(await search(`${W}outside`)).toEqual(['outside1']);
    await storage.close();
    handle = openSqlite(file);
    engine = handle.sqlite!;
    storage = new Storage(handle);
    expect(pending()).toBe(0);
    expect(found(`${W}outside`)).toEqual(['outside1']);
    expect(await search(`${W}outside`)).toEqual(['outside1']);
    intact();
  });
});
