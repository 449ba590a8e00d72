import { randomBytes } from 'node:crypto';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionSigner } from '../src/transports/mcp/session-token.js';
import { expectStatus } from './helpers/client.js';
import { parseSse, rawMcp, rawSession, sseChunk, textOf } from './helpers/mcp.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { World, type BotHandle } from './helpers/world.js';

/** The signed session id itself: what a forged, altered or expired one gets. */
describe('MCP session ids (signed tokens)', () => {
  const signer = new SessionSigner(randomBytes(32));
  const bot = '0192a3b4-c5d6-7e8f-9012-3456789abcde';
  const key = '0192a3b4-c5d6-7e8f-9012-3456789abcdf';
  const now = Date.UTC(2026, 10, 27);

  it('verifies what it issued until it expires; any change, another key or an expired one fails', () => {
    const t = signer.issue(bot, key, '2025-11-25', now + 60_000);
    expect(t).toMatch(/^wrms1\.[!-~]+$/);
    expect(t.length).toBeLessThan(200);
    expect(signer.verify(t, now)).toEqual({
      botId: bot,
      keyId: key,
      protocolVersion: '2025-11-25',
      expiresAt: now + 60_000,
    });
    expect(signer.verify(t, now + 60_000)).toBeNull();
    expect(new SessionSigner(randomBytes(32)).verify(t, now)).toBeNull();
    // Claiming another version or bot with the same signature.
    expect(signer.verify(t.replace('2025-11-25', '2025-03-26'), now)).toBeNull();
    expect(signer.verify(t.replace(bot, key), now)).toBeNull();
    const last = t.at(-2) === 'A' ? 'B' : 'A';
    expect(signer.verify(`${t.slice(0, -2)}${last}${t.at(-1)}`, now)).toBeNull();
    for (const junk of ['', 'wrms1.', crypto.randomUUID(), `${t}x`, 'wrms1.' + 'a'.repeat(300)])
      expect(signer.verify(junk, now)).toBeNull();
    // Two sessions of one key in the same second are two ids.
    expect(signer.issue(bot, key, '2025-11-25', now + 60_000)).not.toBe(t);
  });
});

/**
 * Two instances on one PostgreSQL database (the deployment behind a load balancer): a session opened
 * on one is served by the other, and a revoked key is refused by both at once. SQLite is one process's
 * file, so this runs on PostgreSQL only.
 */
describe.skipIf(!process.env.DATABASE_URL)('MCP sessions across two instances on one database', () => {
  let a: TestServer;
  let b: TestServer;
  let w: World;
  let bot: BotHandle;
  let channel: string;
  const encryptionKey = randomBytes(32).toString('base64');

  beforeAll(async () => {
    a = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey });
    b = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey, ...sameDatabaseAs(a) });
    w = await World.create(a.url);
    bot = await w.bot(w.admin.api);
    channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const call = (i: number, content: string) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: 'send_message', arguments: { channel_id: channel, content } },
  });

  it('a session initialized on one instance is served by the other for 20 calls', async () => {
    const init = await rawMcp(a.url, {
      key: bot.key,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'lb', version: '1' } },
      },
    });
    const sid = init.headers.get('mcp-session-id')!;
    expect(sid).toMatch(/^wrms1\./);
    const h = { 'mcp-protocol-version': '2025-06-18' };
    const tag = `lb-${Math.random().toString(36).slice(2)}`;
    for (let i = 1; i <= 20; i++) {
      const r = await rawMcp(b.url, { key: bot.key, session: sid, headers: h, body: call(i, `${tag} ${i}`) });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('mcp-session-id')).toBeNull();
      // The session's negotiated version travels with it: 2025-06-18 results are structured.
      expect(r.body.result.structuredContent.content).toBe(`${tag} ${i}`);
    }
    // Its version too: no batch in a 2025-06-18 session, on either instance.
    const batch = await rawMcp(b.url, {
      key: bot.key,
      session: sid,
      headers: h,
      body: [call(21, tag), call(22, tag)],
    });
    expect(batch.status).toBe(400);
    const list = expectStatus(
      await w.admin.api.get(`/api/channels/${channel}/messages`, { query: { limit: '100' } }),
      200,
    );
    expect((list.items as { content: string }[]).filter((m) => m.content.startsWith(tag))).toHaveLength(20);
    // Another bot cannot use it on either instance; nor can a forged id.
    const other = await w.bot(w.admin.api);
    for (const url of [a.url, b.url]) {
      const stolen = await rawMcp(url, {
        key: other.key,
        session: sid,
        headers: h,
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expect(stolen.status).toBe(404);
    }
    const forged = sid.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    expect(
      (
        await rawMcp(b.url, {
          key: bot.key,
          session: forged,
          headers: h,
          body: { jsonrpc: '2.0', id: 1, method: 'ping' },
        })
      ).status,
    ).toBe(404);
  });

  it('the SDK client alternating between the instances works throughout', async () => {
    let n = 0;
    const urls = [a.url, b.url];
    const client = new Client({ name: 'lb-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', a.url), {
      requestInit: { headers: { Authorization: `Bearer ${bot.key}` } },
      // Every request to the next instance, as a round-robin load balancer would send it.
      fetch: (input, init) => {
        const u = new URL(input instanceof Request ? input.url : String(input));
        const to = new URL(urls[n++ % 2]!);
        u.host = to.host;
        return fetch(u, init);
      },
    });
    await client.connect(transport);
    try {
      expect(transport.protocolVersion).toBe('2025-11-25');
      for (let i = 0; i < 6; i++) {
        const r = await client.callTool({ name: 'list_channels', arguments: {} });
        expect(textOf(r)).toContain(channel);
      }
      expect(n).toBeGreaterThanOrEqual(8);
    } finally {
      await client.close();
    }
  });

  it('a modern (2026-07-28) client alternating between the instances', async () => {
    let n = 0;
    const hits = [0, 0];
    const urls = [a.url, b.url];
    const client = new ModernClient(
      { name: 'lb-modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const transport = new ModernTransport(new URL('/api/mcp', a.url), {
      requestInit: { headers: { Authorization: `Bearer ${bot.key}` } },
      fetch: (input, init) => {
        const u = new URL(input instanceof Request ? input.url : String(input));
        const i = n++ % 2;
        hits[i]!++;
        u.host = new URL(urls[i]!).host;
        return fetch(u, init);
      },
    });
    await client.connect(transport);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      for (let i = 0; i < 6; i++) {
        const r = await client.callTool({
          name: 'send_message',
          arguments: { channel_id: channel, content: `modern lb ${i}` },
        });
        expect(r.isError ?? false).toBe(false);
      }
      expect(hits[0]).toBeGreaterThanOrEqual(3);
      expect(hits[1]).toBeGreaterThanOrEqual(3);
    } finally {
      await client.close();
    }
  });

  it('a session’s GET stream on one instance hears a change made through the other (the shared outbox)', async () => {
    const s = (await rawSession(a.url, bot.key))!;
    const ctl = new AbortController();
    const res = await fetch(new URL('/api/mcp', a.url), {
      headers: { authorization: `Bearer ${bot.key}`, accept: 'text/event-stream', 'mcp-session-id': s },
      signal: ctl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    try {
      // The bot joins a channel through the other instance.
      const ch = await w.channel(w.admin.api);
      const joined = await fetch(`${b.url}/api/channels/${ch}/members`, {
        method: 'POST',
        headers: { authorization: `Bearer ${w.admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ bot_id: bot.id }),
      });
      expect(joined.status).toBe(201);
      let text = '';
      const deadline = Date.now() + 10_000;
      while (parseSse(text).length < 1 && Date.now() < deadline) {
        text += await sseChunk(reader);
      }
      expect(JSON.parse(parseSse(text)[0]!.data)).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/resources/list_changed',
      });
    } finally {
      ctl.abort();
    }
  });

  it('a GET stream resumes on the other instance from its Last-Event-ID, missing nothing', async () => {
    const s = (await rawSession(a.url, bot.key))!;
    /** Opens the session's GET stream on `url`; `next()` reads its next SSE event. */
    const open = async (url: string, lastEventId?: string) => {
      const ctl = new AbortController();
      const res = await fetch(new URL('/api/mcp', url), {
        headers: {
          authorization: `Bearer ${bot.key}`,
          accept: 'text/event-stream',
          'mcp-session-id': s,
          ...(lastEventId && { 'last-event-id': lastEventId }),
        },
        signal: ctl.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let text = '';
      let taken = 0;
      const next = async () => {
        const deadline = Date.now() + 15_000;
        while (parseSse(text).length <= taken && Date.now() < deadline)
          text += await sseChunk(reader, Math.max(1, deadline - Date.now()));
        const ev = parseSse(text)[taken++];
        if (!ev) throw new Error('no event on the stream');
        return ev;
      };
      return { next, close: () => ctl.abort() };
    };
    const join = async (via: string) => {
      const ch = await w.channel(w.admin.api);
      const r = await fetch(`${via}/api/channels/${ch}/members`, {
        method: 'POST',
        headers: { authorization: `Bearer ${w.admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ bot_id: bot.id }),
      });
      expect(r.status).toBe(201);
    };
    const position = (id: string | undefined) => Number(/^o(\d+)$/.exec(id ?? '')?.[1]);

    // On A: a change arrives with the outbox position as its id.
    const first = await open(a.url);
    await join(b.url);
    const seen = await first.next();
    expect(JSON.parse(seen.data).method).toBe('notifications/resources/list_changed');
    expect(position(seen.id)).toBeGreaterThan(0);
    first.close();

    // Away: the bot joins another channel. Back on B (which never held the stream) from that id.
    await join(a.url);
    const second = await open(b.url, seen.id);
    const missed = await second.next();
    expect(JSON.parse(missed.data).method).toBe('notifications/resources/list_changed');
    expect(position(missed.id)).toBeGreaterThan(position(seen.id));
    second.close();

    // From the latest id nothing more is replayed: the first event on the stream is the next live
    // change, past everything in the outbox before it was made.
    const third = await open(a.url, missed.id);
    const db = a.app.services.config.database;
    if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const head = await sql<{ p: string }>`select max(position) as p from events`.execute(
      a.app.services.storage.stores.db,
    );
    await join(b.url);
    const live = await third.next();
    expect(position(live.id)).toBeGreaterThan(Number(head.rows[0]!.p));
    third.close();
  });

  it('a session ended with DELETE on one instance is ended on the other too', async () => {
    const s = (await rawSession(a.url, bot.key))!;
    const ping = (url: string) =>
      rawMcp(url, { key: bot.key, session: s, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    // B serves it (and holds it from now on), then A ends it.
    expect((await ping(b.url)).status).toBe(200);
    expect((await rawMcp(a.url, { key: bot.key, session: s, method: 'DELETE' })).status).toBe(204);
    expect((await ping(a.url)).status).toBe(404);
    // B learns it from the outbox (mcp.session_ended), as soon as it reads it.
    await expect.poll(async () => (await ping(b.url)).status, { timeout: 10_000, interval: 50 }).toBe(404);
    // A session of the same key on B is not affected.
    const other = (await rawSession(b.url, bot.key))!;
    expect(
      (await rawMcp(a.url, { key: bot.key, session: other, body: { jsonrpc: '2.0', id: 2, method: 'ping' } }))
        .status,
    ).toBe(200);
  });

  it('a key revoked on one instance is refused by both at once', async () => {
    const victim = await w.bot(w.admin.api);
    const init = await rawMcp(b.url, {
      key: victim.key,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'lb', version: '1' } },
      },
    });
    const sid = init.headers.get('mcp-session-id')!;
    const h = { 'mcp-protocol-version': '2025-11-25' };
    const ping = (url: string) =>
      rawMcp(url, {
        key: victim.key,
        session: sid,
        headers: h,
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
    expect((await ping(a.url)).status).toBe(200);
    expect((await ping(b.url)).status).toBe(200);
    expectStatus(await w.admin.api.delete(`/api/bots/${victim.id}/api-keys/${victim.keyId}`), 200);
    // The very next request, on either instance: no propagation delay to wait for.
    expect((await ping(b.url)).status).toBe(401);
    expect((await ping(a.url)).status).toBe(401);
    // A new key of the same bot cannot take the session over either.
    const k = expectStatus(await w.admin.api.post(`/api/bots/${victim.id}/api-keys`, {}), 201);
    const takeover = await rawMcp(a.url, {
      key: k.key,
      session: sid,
      headers: h,
      body: { jsonrpc: '2.0', id: 1, method: 'ping' },
    });
    expect(takeover.status).toBe(404);
  });
});
