import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * The time budget of search, and that a slow search does not hold the server up: on SQLite it runs
 * on a reader worker, on PostgreSQL in the database. The slow query is a filter-only search
 * (`has:file`) over a channel of 200,000 messages none of which links a file: it reads them all.
 */
const ROWS = 200_000;
let srv: TestServer;
let user: UserHandle;
let bot: BotHandle;
let chan: string;

/**
 * Fills a channel with filler messages through the server's own storage, in one statement (the API
 * would take minutes). The index triggers (SQLite) and the generated column (PostgreSQL) index them.
 */
async function seed(orgId: string, channelId: string, senderId: string): Promise<void> {
  const { storage } = srv.app.services;
  const numbers =
    storage.dialect === 'sqlite'
      ? sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS}) select i from n`
      : sql`select i from generate_series(1, ${ROWS}::int) as g(i)`;
  await storage.transaction(async (stores) => {
    await sql`insert into messages (id, org_id, channel_id, sender_type, sender_id, content, created_at)
      select 'seed-' || i, ${orgId}, ${channelId}, 'user', ${senderId},
             'filler number ' || i || ' of a long channel history', '2020-01-01T00:00:00.000Z'
      from (${numbers}) as s`.execute(stores.db);
  });
  if (storage.dialect === 'postgres') await sql`analyze messages`.execute(storage.stores.db);
}

beforeAll(async () => {
  srv = await startTestServer();
  const w = await World.create(srv.url);
  const org = await w.org();
  user = await w.user({ organization_id: org.id }, org.admin.api);
  chan = await w.channel(org.admin.api, { name: uniq('history') });
  bot = await w.bot(org.admin.api);
  expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { user_id: user.id }), 201);
  expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { bot_id: bot.id }), 201);
  await seed(org.id, chan, user.id);
  // The seed held the event loop for a while: let idle keep-alive sockets the server closed meanwhile go.
  await new Promise((r) => setTimeout(r, 300));
}, 300_000);
afterAll(() => srv?.close());

describe('search time budget', () => {
  it('the index answers word searches over the big channel at once', async () => {
    const res = await user.api.get('/api/search', { query: { query: 'filler 123457', type: 'messages' } });
    expect(expectStatus(res, 200).messages.map((m: { content: string }) => m.content)).toEqual([
      'filler number 123457 of a long channel history',
    ]);
  });

  it('a search over its budget is abandoned with 503 search_timeout (REST and MCP), and the next one works', async () => {
    srv.app.services.storage.search.timeoutMs = 5;
    try {
      const res = await user.api.get('/api/search', {
        query: { query: `has:file in:${chan}`, type: 'messages' },
      });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('unavailable');
      expect(res.body.error.message).toMatch(/^search_timeout: .*time budget of 5 ms/);
      const session = await rawSession(srv.url, bot.key);
      const mcp = await rawMcp(srv.url, {
        key: bot.key,
        session,
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'search', arguments: { query: 'has:file', type: 'messages' } },
        },
      });
      expect(JSON.stringify(mcp.body)).toContain('search_timeout');
    } finally {
      srv.app.services.storage.search.timeoutMs = 2000;
    }
    const ok = await user.api.get('/api/search', {
      query: { query: '"filler number 42 of"', type: 'messages' },
    });
    expect(expectStatus(ok, 200).messages).toHaveLength(1);
  });

  it('while a slow search runs, the server keeps answering other requests', async () => {
    srv.app.services.storage.search.timeoutMs = 30_000;
    try {
      const order: string[] = [];
      const started = performance.now();
      const slow = user.api
        .get('/api/search', { query: { query: `has:file in:${chan}`, type: 'messages' } })
        .then((r) => {
          order.push('search');
          return { r, ms: performance.now() - started };
        });
      await new Promise((r) => setTimeout(r, 5)); // let the search start
      for (let i = 0; i < 5; i++) {
        expectStatus(await user.api.get('/api/health'), 200);
        expectStatus(await user.api.get(`/api/channels/${chan}`), 200);
        order.push('other');
      }
      const { r, ms } = await slow;
      expect(expectStatus(r, 200).messages).toEqual([]);
      // SQLite: the scan runs on a reader worker and takes far longer than ten small requests, which
      // would all wait behind it if it ran on the event loop's thread. (PostgreSQL scans it in the
      // database's own process, often before the ten are done: nothing to wait for either way.)
      if (srv.dialect === 'sqlite') {
        expect(ms).toBeGreaterThan(100);
        expect(order.indexOf('search')).toBe(order.length - 1);
      }
    } finally {
      srv.app.services.storage.search.timeoutMs = 2000;
    }
  });
});
