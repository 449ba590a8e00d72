import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { openPostgres, type DatabaseHandle } from '../src/storage/database.js';
import { ReadTimeout, type Readers } from '../src/storage/sqlite-readers.js';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * The time budget of search (WORKROOM_SEARCH_TIMEOUT), and that a slow search does not hold the
 * server up: on SQLite it runs on a reader worker, on PostgreSQL in the database on a connection of
 * the readers' own. The slow query is a filter-only search (`has:file`) over a channel of filler
 * messages none of which links a file: it reads them all.
 */
const ROWS = 200_000;

interface Setup {
  srv: TestServer;
  user: UserHandle;
  bot: BotHandle;
  chan: string;
}

/**
 * Fills a channel with filler messages through the server's own storage, a statement per chunk (the
 * API would take minutes). The index triggers (SQLite) and the generated column (PostgreSQL) index them.
 * On SQLite a statement holds the event loop; in chunks, with a turn of the loop between them, it never
 * holds it for long, so timers keep their order: the client's keep-alive sockets are not closed by the
 * server under it (in one statement of several seconds, the server's keep-alive time-out fired before
 * the client's, and the next request could go out on a socket the server had just closed).
 */
async function seed(srv: TestServer, orgId: string, channelId: string, senderId: string, rows: number) {
  const { storage } = srv.app.services;
  const CHUNK = 10_000;
  for (let from = 1; from <= rows; from += CHUNK) {
    const to = Math.min(rows, from + CHUNK - 1);
    const numbers =
      storage.dialect === 'sqlite'
        ? sql`with recursive n(i) as (select cast(${from} as integer) union all select i + 1 from n where i < ${to}) select i from n`
        : sql`select i from generate_series(${from}::int, ${to}::int) as g(i)`;
    await storage.transaction(async (stores) => {
      await sql`insert into messages (id, org_id, channel_id, sender_type, sender_id, content, created_at)
        select 'seed-' || i, ${orgId}, ${channelId}, 'user', ${senderId},
               'filler number ' || i || ' of a long channel history', '2020-01-01T00:00:00.000Z'
        from (${numbers}) as s`.execute(stores.db);
    });
    await new Promise((r) => setImmediate(r)); // a turn of the event loop: timers, sockets
  }
  if (storage.dialect === 'postgres') await sql`analyze messages`.execute(storage.stores.db);
}

async function setUp(env: Record<string, string>, rows: number): Promise<Setup> {
  const srv = await startTestServer(env);
  const w = await World.create(srv.url);
  const org = await w.org();
  const user = await w.user({ organization_id: org.id }, org.admin.api);
  const chan = await w.channel(org.admin.api, { name: uniq('history') });
  const bot = await w.bot(org.admin.api);
  expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { user_id: user.id }), 201);
  expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { bot_id: bot.id }), 201);
  await seed(srv, org.id, chan, user.id, rows);
  return { srv, user, bot, chan };
}

/**
 * Resolves when the server hands its next read to its readers (a search's scan has started there, off
 * the event loop): the readers' `all` is wrapped for that one call, which goes through unchanged.
 */
function nextRead(srv: TestServer): Promise<void> {
  const readers = (srv.app.services.storage.search as unknown as { handle: DatabaseHandle }).handle.readers!;
  const all = readers.all;
  return new Promise((resolve) => {
    readers.all = function (this: Readers, ...args: Parameters<Readers['all']>) {
      readers.all = all;
      resolve();
      return all.apply(this, args);
    } as Readers['all'];
  });
}

/** The MCP `search` tool's answer to `query` (messages only), as the bot. */
async function mcpSearch(s: Setup, query: string) {
  const session = await rawSession(s.srv.url, s.bot.key);
  const res = await rawMcp(s.srv.url, {
    key: s.bot.key,
    session,
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search', arguments: { query, type: 'messages' } },
    },
  });
  expect(res.status).toBe(200);
  return res.body.result as { isError?: boolean; content: { type: string; text: string }[] };
}

/** Checks a timed-out search's answer on REST and MCP: 503 search_timeout naming the budget. */
async function expectTimeout(s: Setup, query: string, budgetMs: number) {
  const res = await s.user.api.get('/api/search', { query: { query, type: 'messages' } });
  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe('search_timeout');
  expect(res.body.error.message).toBe(
    `The search took longer than its time budget of ${budgetMs} ms and was stopped; ` +
      'narrow it with more words or filters (in:, from:, before:, after:)',
  );
  expect(res.headers.get('retry-after')).toBeNull(); // the same search would time out again
  const mcp = await mcpSearch(s, query);
  expect(mcp.isError).toBe(true);
  expect(mcp.content[0]!.text).toBe(`Error (search_timeout): ${res.body.error.message}`);
}

describe('search time budget', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp({}, ROWS);
  }, 300_000);
  afterAll(() => s?.srv.close());
  const config = () => s.srv.app.services.config.search;

  it('is 2 s unless configured', () => {
    expect(config().timeoutMs).toBe(2000);
  });

  it('the index answers word searches over the big channel at once', async () => {
    const res = await s.user.api.get('/api/search', { query: { query: 'filler 123457', type: 'messages' } });
    expect(expectStatus(res, 200).messages.map((m: { content: string }) => m.content)).toEqual([
      'filler number 123457 of a long channel history',
    ]);
  });

  it('a search over its budget is abandoned with 503 search_timeout (REST and MCP), and the next one works', async () => {
    config().timeoutMs = 5;
    try {
      await expectTimeout(s, `has:file in:${s.chan}`, 5);
    } finally {
      config().timeoutMs = 2000;
    }
    const ok = await s.user.api.get('/api/search', {
      query: { query: '"filler number 42 of"', type: 'messages' },
    });
    expect(expectStatus(ok, 200).messages).toHaveLength(1);
    const mcp = await mcpSearch(s, '"filler number 42 of"');
    expect(mcp.isError).toBeFalsy();
    expect(mcp.content[0]!.text).toContain('filler number 42 of a long channel history');
  });

  it('while a slow search runs, the server keeps answering other requests', async () => {
    config().timeoutMs = 30_000;
    try {
      const order: string[] = [];
      const started = performance.now();
      const scanning = nextRead(s.srv);
      const slow = s.user.api
        .get('/api/search', { query: { query: `has:file in:${s.chan}`, type: 'messages' } })
        .then((r) => {
          order.push('search');
          return { r, ms: performance.now() - started };
        });
      await scanning; // the search's scan runs on the readers
      for (let i = 0; i < 5; i++) {
        expectStatus(await s.user.api.get('/api/health'), 200);
        expectStatus(await s.user.api.get(`/api/channels/${s.chan}`), 200);
        order.push('other');
      }
      const { r, ms } = await slow;
      expect(expectStatus(r, 200).messages).toEqual([]);
      // SQLite: the scan runs on a reader worker and takes longer than ten small requests, which would
      // all wait behind it if it ran on the event loop's thread: they finish first. (How long the scan
      // takes depends on the machine, ~100 ms here, so it is printed, not bounded.) PostgreSQL scans it
      // in the database's own process, often before the ten are done: nothing to wait for either way.
      console.log(`search-budget: the slow scan took ${ms.toFixed(0)} ms on ${s.srv.dialect}`);
      if (s.srv.dialect === 'sqlite') expect(order.indexOf('search')).toBe(order.length - 1);
    } finally {
      config().timeoutMs = 2000;
    }
  });
});

describe('WORKROOM_SEARCH_TIMEOUT', () => {
  it('is a duration between 1 ms and 60 s (default 2 s); anything else does not start', () => {
    expect(loadConfig({}).search.timeoutMs).toBe(2000);
    expect(loadConfig({ WORKROOM_SEARCH_TIMEOUT: '250ms' }).search.timeoutMs).toBe(250);
    expect(loadConfig({ WORKROOM_SEARCH_TIMEOUT: '1m' }).search.timeoutMs).toBe(60_000);
    for (const bad of ['0', '0ms', '61s', '5 minutes', '-1s']) {
      let err: unknown;
      try {
        loadConfig({ WORKROOM_SEARCH_TIMEOUT: bad });
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems.join('\n'), bad).toMatch(/^WORKROOM_SEARCH_TIMEOUT: /);
    }
  });

  describe('set on a server', () => {
    let s: Setup;
    beforeAll(async () => {
      // 1 ms: the 30,000-message scan of a has:file search takes several, an indexed word far less.
      s = await setUp({ WORKROOM_SEARCH_TIMEOUT: '1ms' }, 30_000);
    }, 300_000);
    afterAll(() => s?.srv.close());

    it('is the budget of every search, on REST and MCP', async () => {
      expect(s.srv.app.services.config.search.timeoutMs).toBe(1);
      await expectTimeout(s, `has:file in:${s.chan}`, 1);
    });
  });
});

describe.runIf(process.env.DATABASE_URL)('PostgreSQL readers', () => {
  it('run each read with the whole budget as statement_timeout, set once per connection, not what is left of it', async () => {
    const handle = await openPostgres(process.env.DATABASE_URL!, undefined, 1);
    try {
      const readers = handle.readers!;
      const show = async (leftMs: number, statementTimeoutMs: number) =>
        (
          await readers.all<[string]>('show statement_timeout', [], leftMs, { raw: true, statementTimeoutMs })
        )[0]![0];
      // What is left of a search's budget shrinks from read to read; the statement_timeout stays.
      expect(await show(2000, 2000)).toBe('2s');
      expect(await show(1500, 2000)).toBe('2s');
      expect(await show(200, 2000)).toBe('2s');
      expect(await show(2500, 2500)).toBe('2500ms');
      // A statement past it is canceled by PostgreSQL: ReadTimeout, as when the budget runs out first.
      await expect(readers.all('select pg_sleep(1)', [], 5000, { statementTimeoutMs: 50 })).rejects.toThrow(
        ReadTimeout,
      );
      await expect(readers.all('select pg_sleep(1)', [], 50, { statementTimeoutMs: 5000 })).rejects.toThrow(
        ReadTimeout,
      );
      expect(readers.abandoned).toBe(1);
    } finally {
      await handle.close();
    }
  });
});
