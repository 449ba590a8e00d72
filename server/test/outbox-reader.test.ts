import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../src/events/bus.js';
import { OutboxReader, type OutboxEvent } from '../src/events/outbox-reader.js';
import { listenPostgres } from '../src/storage/pg-listen.js';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * The outbox reader hands every committed event to its consumers once, in one order, even when
 * PostgreSQL commits transactions in another order than the one their seq values were handed out in.
 */
describe('outbox reader', () => {
  let srv: TestServer;
  let reader: OutboxReader;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    srv = await startTestServer();
    reader = new OutboxReader(srv.app.services.storage, srv.app.services.bus, log, { pollMs: 200 });
    await reader.start();
  });
  afterAll(async () => {
    await reader.stop();
    await srv.close();
  });

  /** Everything readable after `from`, in pages, after numbering what has committed. */
  async function readAll(from: number): Promise<OutboxEvent[]> {
    await reader.sequence();
    const out: OutboxEvent[] = [];
    for (let p = from; ;) {
      const page = await reader.readAfter(p, 100);
      if (page.length === 0) return out;
      out.push(...page);
      p = page[page.length - 1]!.position;
    }
  }

  it('delivers concurrent writes once each, in strictly increasing consecutive positions', async () => {
    const w = await World.create(srv.url);
    const channel = await w.channel(w.admin.api);
    const start = await reader.head();
    const seen: OutboxEvent[] = [];
    const unsubscribe = reader.subscribe('test', start, (events) => {
      seen.push(...events);
      return Promise.resolve();
    });
    const ids = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        w.admin.api
          .post(`/api/channels/${channel}/messages`, { content: `m${i}` })
          .then((r) => expectStatus(r, 201).id as string),
      ),
    );
    // The messages' events (the channel's own channel.created may be numbered after `start` was read,
    // on PostgreSQL, and come first: counting every event stopped at 119 messages once under load).
    const created = () => seen.filter((e) => e.type === 'message.created');
    await expect.poll(() => created().length, { timeout: 30_000 }).toBeGreaterThanOrEqual(120);
    unsubscribe();
    const messageIds = created().map((e) => (JSON.parse(e.dataJson) as { message_id: string }).message_id);
    expect(new Set(messageIds)).toEqual(new Set(ids));
    expect(messageIds.length).toBe(ids.length); // once each
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.position).toBeGreaterThan(seen[i - 1]!.position);
    if (srv.dialect === 'postgres') {
      // The sequencer numbers without holes.
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.position).toBe(seen[i - 1]!.position + 1);
    }
  }, 90_000);

  it('consumers following the head share one read per wake, and each still gets every event once', async () => {
    const w = await World.create(srv.url);
    const channel = await w.channel(w.admin.api);
    // A reader woken by every numbering pass, as the server's own is: on PostgreSQL the server's reader
    // numbers the events first, and this one hears of them through its NOTIFY (without `listen`, only
    // its poll would wake it, several posts to a wake).
    const db = srv.app.services.config.database;
    const own = new OutboxReader(srv.app.services.storage, srv.app.services.bus, log, {
      pollMs: 60_000,
      ...(db.kind === 'postgres'
        ? { listen: (ch: string, on: (p: string) => void) => listenPostgres(db.url, ch, on) }
        : {}),
    });
    await own.start();
    const start = await own.head();
    const seen: OutboxEvent[][] = [[], [], []];
    const offs = seen.map((list, i) =>
      own.subscribe(`shared-${i}`, start, (events) => {
        list.push(...events);
        return Promise.resolve();
      }),
    );
    const shared0 = own.stats.sharedReads;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await w.admin.api.post(`/api/channels/${channel}/messages`, { content: `s${i}` });
      ids.push(expectStatus(r, 201).id as string);
    }
    const created = (list: OutboxEvent[]) =>
      list
        .filter((e) => e.type === 'message.created')
        .map((e) => (JSON.parse(e.dataJson) as { message_id: string }).message_id)
        .filter((id) => ids.includes(id));
    for (const list of seen) await expect.poll(() => created(list).length, { timeout: 30_000 }).toBe(30);
    for (const off of offs) off();
    await own.stop();
    for (const list of seen) {
      expect(created(list)).toEqual(ids); // once each, in order
      expect(list.map((e) => e.position)).toEqual(seen[0]!.map((e) => e.position));
    }
    // Three consumers at one cursor: the second and third share the first one's read.
    expect(own.stats.sharedReads - shared0).toBeGreaterThanOrEqual(30);
  }, 90_000);

  it('checks a row once however often it is read, and again once its text changed (then dead-letters it)', async () => {
    const storage = srv.app.services.storage;
    const org = await storage.stores.orgs.create(`checked-${randomUUID()}`);
    const before = await reader.head();
    const id = randomUUID();
    await storage.transaction((s) =>
      s.events.append([
        {
          id,
          org_id: org.id,
          type: 'resources.changed',
          data: JSON.stringify({ bot_ids: [randomUUID()] }),
          created_at: new Date().toISOString(),
        },
      ]),
    );
    const find = async () => (await readAll(before)).find((e) => e.id === id);
    const first = await find();
    expect(first?.type).toBe('resources.changed');
    const reused = reader.stats.checksReused;
    const second = await find();
    expect(second?.data).toEqual(first?.data);
    expect(reader.stats.checksReused).toBeGreaterThan(reused);
    // The same id with another text (changed in place): checked again, and it fails.
    const dead = reader.stats.deadLettered;
    await storage.transaction((s) =>
      s.db.updateTable('events').set({ data: '{"bot_ids": 5}' }).where('id', '=', id).execute(),
    );
    expect(await find()).toBeUndefined();
    expect(reader.stats.deadLettered).toBe(dead + 1);
  });

  it('keeps the newest checked rows when it has checked more than it keeps (the oldest go first)', async () => {
    const storage = srv.app.services.storage;
    const org = await storage.stores.orgs.create(`evict-${randomUUID()}`);
    const before = await reader.head();
    const rows = Array.from({ length: 4_300 }, () => ({
      id: randomUUID(),
      org_id: org.id,
      type: 'resources.changed',
      data: JSON.stringify({ bot_ids: [randomUUID()] }),
      created_at: new Date().toISOString(),
    }));
    await storage.transaction((s) => s.events.append(rows));
    const ours = (await readAll(before)).filter((e) => e.org_id === org.id);
    expect(ours.map((e) => e.id)).toEqual(rows.map((r) => r.id));
    // A consumer 4,090 events behind the head reads them again: every one was kept (it keeps 4,096).
    // Clearing the whole map whenever it was full kept only those checked since the last clear.
    let reused = reader.stats.checksReused;
    const newest = await reader.readAfter(ours[ours.length - 4_091]!.position, 4_090);
    expect(newest.map((e) => e.id)).toEqual(rows.slice(-4_090).map((r) => r.id));
    expect(reader.stats.checksReused - reused).toBe(4_090);
    // The oldest were let go: checked again.
    reused = reader.stats.checksReused;
    const oldest = await reader.readAfter(ours[0]!.position - 1, 50);
    expect(oldest.map((e) => e.id)).toEqual(rows.slice(0, 50).map((r) => r.id));
    expect(reader.stats.checksReused - reused).toBe(0);
  }, 60_000);

  describe.runIf(process.env.DATABASE_URL)('PostgreSQL: commits in reverse seq order', () => {
    let a: pg.Client;
    let b: pg.Client;
    beforeAll(async () => {
      const db = srv.app.services.config.database;
      if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
      const connect = async () => {
        const c = new pg.Client({ connectionString: db.url, options: `-c search_path="${db.schema}"` });
        await c.connect();
        return c;
      };
      a = await connect();
      b = await connect();
    });
    afterAll(async () => {
      await a.end();
      await b.end();
    });

    const insert = async (c: pg.Client, label: string): Promise<number> => {
      const r = await c.query<{ seq: string }>(
        `insert into events (id, org_id, type, data, created_at) values ($1, 'org-test', 'resources.changed', $2, $3) returning seq`,
        // A valid event of the catalogue (the reader dead-letters any other); `label` is extra.
        [randomUUID(), JSON.stringify({ bot_ids: [], label }), new Date().toISOString()],
      );
      return Number(r.rows[0]!.seq);
    };
    const labels = (events: OutboxEvent[]) =>
      events
        .filter((e) => e.org_id === 'org-test')
        .map((e) => (JSON.parse(e.dataJson) as { label: string }).label);

    it('does not skip the lower seq that commits after a higher one was read (older xid commits first)', async () => {
      const cursor = await reader.head();
      // B takes its transaction id first, so its row is not held back by A's running transaction.
      await b.query('begin');
      await b.query('select pg_current_xact_id()');
      await a.query('begin');
      const seqA = await insert(a, 'A'); // lower seq, commits last
      const seqB = await insert(b, 'B');
      expect(seqA).toBeLessThan(seqB);
      await b.query('commit');

      // B's transaction has finished: it is numbered as soon as no older transaction runs (other
      // transactions of the cluster, e.g. the server's own workers, may delay that for a moment).
      let first: OutboxEvent[] = [];
      await expect.poll(async () => labels((first = await readAll(cursor)))).toEqual(['B']);
      // What a reader with a seq cursor would do: it has seen seq B, so it asks for seq > B ...
      const afterSeqB = await srv.app.services.storage.stores.events.listAfter(seqB, 100);
      await a.query('commit');
      // ... and A, committed now with a lower seq, never comes: the bug the position prevents.
      const afterSeqBLater = await srv.app.services.storage.stores.events.listAfter(seqB, 100);
      expect(afterSeqB.concat(afterSeqBLater).some((e) => e.seq === seqA)).toBe(false);

      const cursorAfterB = first[first.length - 1]!.position;
      let second: OutboxEvent[] = [];
      await expect.poll(async () => labels((second = await readAll(cursorAfterB)))).toEqual(['A']);
      expect(second[0]!.seq).toBe(seqA);
      expect(second[0]!.position).toBeGreaterThan(cursorAfterB);
    });

    it('hands out an event at once while an older transaction runs, and the older one later, above it', async () => {
      const cursor = await reader.head();
      await a.query('begin');
      const seqA = await insert(a, 'A2');
      await b.query('begin');
      const seqB = await insert(b, 'B2');
      expect(seqA).toBeLessThan(seqB);
      await b.query('commit');
      // Not held back behind A's open transaction (the old sequencer waited for every older one).
      let first: OutboxEvent[] = [];
      await expect
        .poll(async () => labels((first = await readAll(cursor))), { timeout: 10_000 })
        .toEqual(['B2']);
      const cursorAfterB = first[first.length - 1]!.position;
      await a.query('commit');
      let second: OutboxEvent[] = [];
      await expect
        .poll(async () => labels((second = await readAll(cursorAfterB))), { timeout: 10_000 })
        .toEqual(['A2']);
      expect(second[0]!.seq).toBe(seqA);
      expect(second[0]!.position).toBeGreaterThan(cursorAfterB);
      // From the first cursor: both, each once, A after B (commit order), positions consecutive.
      const all = await readAll(cursor);
      expect(labels(all)).toEqual(['B2', 'A2']);
      expect(all.filter((e) => e.org_id === 'org-test').map((e) => e.seq)).toEqual([seqB, seqA]);
    });

    it('does not wait for an unrelated open transaction (another schema, holding a transaction id)', async () => {
      const db = srv.app.services.config.database;
      if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
      const other = new pg.Client({ connectionString: db.url });
      await other.connect();
      try {
        // A writing transaction elsewhere in the cluster: it has a transaction id older than what
        // follows, which held every event back under the old sequencer until it ended.
        await other.query('begin');
        await other.query('select pg_current_xact_id()');
        const cursor = await reader.head();
        await insert(b, 'while-unrelated-open'); // autocommit
        await expect
          .poll(async () => labels(await readAll(cursor)), { timeout: 10_000 })
          .toEqual(['while-unrelated-open']);
        await other.query('rollback');
      } finally {
        await other.end();
      }
    });

    it('reads every event of transactions committing in shuffled order exactly once, in increasing positions', async () => {
      const db = srv.app.services.config.database;
      if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
      const clients = await Promise.all(
        Array.from({ length: 12 }, async () => {
          const c = new pg.Client({ connectionString: db.url, options: `-c search_path="${db.schema}"` });
          await c.connect();
          return c;
        }),
      );
      const start = await reader.head();
      const seen: OutboxEvent[] = [];
      const unsubscribe = reader.subscribe('shuffle', start, (events) => {
        seen.push(...events);
        return Promise.resolve();
      });
      try {
        // Each client inserts (seq handed out in this order), then they commit in another order, with
        // the reader reading all along.
        for (const [i, c] of clients.entries()) {
          await c.query('begin');
          await insert(c, `s${i}`);
        }
        const order = clients.map((_, i) => i).sort(() => Math.random() - 0.5);
        for (const i of order) {
          await clients[i]!.query('commit');
          await reader.sequence();
          await new Promise((r) => setTimeout(r, Math.random() * 20));
        }
        await expect
          .poll(() => labels(seen).filter((l) => /^s\d+$/.test(l)).length, { timeout: 20_000 })
          .toBe(clients.length);
        const got = labels(seen).filter((l) => /^s\d+$/.test(l));
        expect(new Set(got).size).toBe(clients.length); // once each
        for (let i = 1; i < seen.length; i++)
          expect(seen[i]!.position).toBeGreaterThan(seen[i - 1]!.position);
      } finally {
        unsubscribe();
        await Promise.all(clients.map((c) => c.end()));
      }
    });

    it('wakes another instance through NOTIFY, without waiting for its poll', async () => {
      const db = srv.app.services.config.database;
      if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
      // A second reader as another instance would have: its own bus (it hears nothing of this server's
      // commits) and a poll far longer than the test.
      const remote = new OutboxReader(srv.app.services.storage, new EventBus(), log, {
        pollMs: 600_000,
        listen: (channel, onPayload) => listenPostgres(db.url, channel, onPayload),
      });
      await remote.start();
      const seen: OutboxEvent[] = [];
      // From just before the newest event: the subscription's first read finds that one, so its
      // handler's first call shows the first read is done (what comes next is woken, not read first).
      const head = await remote.head();
      expect(head).toBeGreaterThan(0);
      const unsubscribe = remote.subscribe('remote', head - 1, (events) => {
        seen.push(...events);
        return Promise.resolve();
      });
      try {
        await expect.poll(() => seen.length).toBe(1);
        await insert(b, 'notified'); // numbered by this server's reader, which sends the NOTIFY
        await reader.sequence();
        await expect.poll(() => labels(seen.slice(1)), { timeout: 10_000 }).toEqual(['notified']);
      } finally {
        unsubscribe();
        await remote.stop();
      }
    });

    it('a rolled-back transaction leaves no hole that blocks the reader', async () => {
      const cursor = await reader.head();
      await a.query('begin');
      await insert(a, 'rolled-back');
      await a.query('rollback');
      await insert(b, 'C'); // autocommit
      await expect.poll(async () => labels(await readAll(cursor))).toEqual(['C']);
    });
  });
});
