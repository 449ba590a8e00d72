import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle } from './helpers/world.js';

/**
 * The 2025-era versions side by side on one endpoint (raw HTTP): negotiation, the
 * MCP-Protocol-Version header after initialize, batches only where the version has them.
 */
const init = (v: string, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'v', version: '1' } },
});

describe('MCP 2025-era versions (raw HTTP)', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let channel: string;

  /** Opens a session asking `v`; returns its id and the negotiated version. */
  async function session(v: string): Promise<{ sid: string; version: string }> {
    const r = await rawMcp(srv.url, { key: bot.key, body: init(v) });
    expect(r.status).toBe(200);
    return { sid: r.headers.get('mcp-session-id')!, version: r.body.result.protocolVersion };
  }

  const send = (i: number, content: string) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: 'send_message', arguments: { channel_id: channel, content } },
  });

  async function messagesContaining(text: string): Promise<number> {
    const r = expectStatus(await w.admin.api.get(`/api/channels/${channel}/messages`), 200);
    return (r.items as { content: string }[]).filter((m) => m.content.includes(text)).length;
  }

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    bot = await w.bot(w.admin.api);
    channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
  });
  afterAll(() => srv.close());

  it.each(['2025-03-26', '2025-06-18', '2025-11-25', '2024-11-05'])(
    'initialize asking %s echoes it',
    async (v) => {
      expect((await session(v)).version).toBe(v);
    },
  );

  it.each(['2026-07-28', '2099-12-31', 'latest', ''])(
    'initialize asking %j gets our latest 2025-era version, 2025-11-25, never an error',
    async (v) => {
      const r = await rawMcp(srv.url, { key: bot.key, body: init(v) });
      expect(r.status).toBe(200);
      expect(r.body.result.protocolVersion).toBe('2025-11-25');
      expect(r.headers.get('mcp-session-id')).toBeTruthy();
    },
  );

  it('after initialize: a missing header means the session version, a matching one passes', async () => {
    for (const v of ['2025-06-18', '2025-11-25']) {
      const { sid } = await session(v);
      const bare = await rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        body: { jsonrpc: '2.0', id: 2, method: 'ping' },
      });
      expect(bare.status).toBe(200);
      const ok = await rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        headers: { 'mcp-protocol-version': v },
        body: { jsonrpc: '2.0', id: 3, method: 'ping' },
      });
      expect(ok.body).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    }
  });

  it.each([
    ['invalid', 'not-a-version'],
    ['unknown', '2099-01-01'],
    ['the modern version, on a legacy session', '2026-07-28'],
  ])('an MCP-Protocol-Version header that is %s answers 400, and nothing runs', async (_what, h) => {
    const { sid } = await session('2025-11-25');
    const marker = `hdr-${Math.random().toString(36).slice(2)}`;
    const r = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: { 'mcp-protocol-version': h },
      body: send(1, marker),
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    expect(r.body.error.message).toContain('MCP-Protocol-Version');
    expect(await messagesContaining(marker)).toBe(0);
    // The same check on GET and DELETE; the session is still there afterwards.
    for (const method of ['GET', 'DELETE']) {
      const other = await rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        method,
        headers: { 'mcp-protocol-version': h, accept: 'text/event-stream' },
      });
      expect(other.status).toBe(400);
    }
    const still = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: { jsonrpc: '2.0', id: 4, method: 'ping' },
    });
    expect(still.status).toBe(200);
  });

  it('another supported version than the session negotiated is accepted; the session’s version governs', async () => {
    // As the SDK's reference server does; the official conformance suite sends 2025-03-26 on a
    // 2025-11-25 session. Only an invalid or unsupported version is refused (400, above).
    const { sid } = await session('2025-11-25');
    const ok = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: { 'mcp-protocol-version': '2025-03-26' },
      body: { jsonrpc: '2.0', id: 5, method: 'ping' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ jsonrpc: '2.0', id: 5, result: {} });
    // Still a 2025-11-25 session: a batch is refused although the header names 2025-03-26.
    const marker = `governs-${Math.random().toString(36).slice(2)}`;
    const batch = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: { 'mcp-protocol-version': '2025-03-26' },
      body: [send(1, marker), send(2, marker)],
    });
    expect(batch.status).toBe(400);
    expect(batch.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(await messagesContaining(marker)).toBe(0);
  });

  it.each(['2025-06-18', '2025-11-25'])(
    'a batch in a %s session is answered with ONE error; none of its calls run',
    async (v) => {
      const { sid } = await session(v);
      const marker = `batch-${v}-${Math.random().toString(36).slice(2)}`;
      const r = await rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        headers: { 'mcp-protocol-version': v },
        body: [send(1, marker), send(2, marker), { jsonrpc: '2.0', id: 3, method: 'ping' }],
      });
      expect(r.status).toBe(400);
      expect(Array.isArray(r.body)).toBe(false);
      expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(r.body.error.message).toContain(v);
      expect(await messagesContaining(marker)).toBe(0);
    },
  );

  it('a batch in a 2025-03-26 session still answers every call, in order', async () => {
    const { sid } = await session('2025-03-26');
    const marker = `ok-batch-${Math.random().toString(36).slice(2)}`;
    const r = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: [send(1, marker), { jsonrpc: '2.0', id: 2, method: 'ping' }],
    });
    expect(r.status).toBe(200);
    expect((r.body as any[]).map((m) => m.id)).toEqual([1, 2]);
    expect(await messagesContaining(marker)).toBe(1);
  });

  it('a 2025-11-25 session: a foreign Origin is 403, an allowed or absent one passes', async () => {
    const { sid } = await session('2025-11-25');
    const ping = (origin?: string) =>
      rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        headers: { 'mcp-protocol-version': '2025-11-25', ...(origin ? { origin } : {}) },
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
    const bad = await ping('https://evil.example');
    expect(bad.status).toBe(403);
    expect(bad.body.error.code).toBe(-32000);
    // The request's own Host is not trusted for this: DNS rebinding makes it the attacker's name.
    const host = new URL(srv.url).host;
    expect((await ping(`http://rebound.example:${host.split(':')[1]}`)).status).toBe(403);
    expect((await ping(new URL(srv.url).origin)).status).toBe(200);
    expect((await ping()).status).toBe(200);
  });

  it('tool names follow the 2025-11-25 rules: 1–128 of [A-Za-z0-9_.-], unique', async () => {
    const { sid } = await session('2025-11-25');
    const r = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: { 'mcp-protocol-version': '2025-11-25' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    const names = (r.body.result.tools as { name: string }[]).map((t) => t.name);
    expect(names).toHaveLength(9);
    expect(new Set(names).size).toBe(9);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
  });
});

describe('MCP 2025-era versions with sessions off', () => {
  let srv: TestServer;
  let bot: BotHandle;
  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_MCP_SESSIONS: 'false' });
    bot = await World.create(srv.url).then((w) => w.bot(w.admin.api));
  });
  afterAll(() => srv.close());

  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
  ];

  it('no header means 2025-03-26 (batches allowed); a 2025-06-18+ header forbids them; a bad one is 400', async () => {
    const plain = await rawMcp(srv.url, { key: bot.key, body: batch });
    expect(plain.status).toBe(200);
    expect(plain.body).toHaveLength(2);
    const old = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': '2025-03-26' },
      body: batch,
    });
    expect(old.body).toHaveLength(2);
    for (const v of ['2025-06-18', '2025-11-25']) {
      const r = await rawMcp(srv.url, { key: bot.key, headers: { 'mcp-protocol-version': v }, body: batch });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(-32600);
    }
    const single = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': '2025-11-25' },
      body: { jsonrpc: '2.0', id: 9, method: 'ping' },
    });
    expect(single.body).toEqual({ jsonrpc: '2.0', id: 9, result: {} });
    const bad = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': 'bogus' },
      body: { jsonrpc: '2.0', id: 9, method: 'ping' },
    });
    expect(bad.status).toBe(400);
  });
});
