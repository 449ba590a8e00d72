import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxReader, type OutboxEvent } from '../src/events/outbox-reader.js';
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
    reader.start();
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
    // On PostgreSQL an event is numbered once every older transaction of the cluster has ended: other
    // test files' long transactions (seeding 200k rows) can hold it back for a while, never lose it.
    await expect.poll(() => seen.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(120);
    unsubscribe();
    const created = seen.filter((e) => e.type === 'message.created');
    const messageIds = created.map((e) => (JSON.parse(e.data) as { message_id: string }).message_id);
    expect(new Set(messageIds)).toEqual(new Set(ids));
    expect(messageIds.length).toBe(ids.length); // once each
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.position).toBeGreaterThan(seen[i - 1]!.position);
    if (srv.dialect === 'postgres') {
      // The sequencer numbers without holes.
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.position).toBe(seen[i - 1]!.position + 1);
    }
  }, 90_000);

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
        `insert into events (id, org_id, type, data, created_at) values ($1, 'org-test', 'test.event', $2, $3) returning seq`,
        [randomUUID(), JSON.stringify({ label }), new Date().toISOString()],
      );
      return Number(r.rows[0]!.seq);
    };
    const labels = (events: OutboxEvent[]) =>
      events
        .filter((e) => e.type === 'test.event')
        .map((e) => (JSON.parse(e.data) as { label: string }).label);

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

    it('holds a committed event back while an older transaction runs, then hands out both in seq order', async () => {
      const cursor = await reader.head();
      await a.query('begin');
      const seqA = await insert(a, 'A2');
      await b.query('begin');
      const seqB = await insert(b, 'B2');
      await b.query('commit');
      expect(labels(await readAll(cursor))).toEqual([]); // B2 waits behind A's open transaction
      await a.query('commit');
      let all: OutboxEvent[] = [];
      await expect.poll(async () => labels((all = await readAll(cursor)))).toEqual(['A2', 'B2']);
      expect(all.map((e) => e.seq)).toEqual([seqA, seqB]);
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
