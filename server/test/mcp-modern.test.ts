import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { parseSse, rawMcp, sseChunk, textOf, withSdkClient } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle } from './helpers/world.js';

const MODERN = '2026-07-28';
const ALL = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
};

/**
 * MCP 2026-07-28 (stateless) on the same endpoint: the official v2 client in each negotiation mode,
 * and raw requests for every error the revision defines.
 */
describe('MCP 2026-07-28 (modern, stateless)', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let channel: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    bot = await w.bot(w.admin.api);
    channel = await w.channel(w.admin.api, { name: uniq('modern') });
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
  });
  afterAll(() => srv.close());

  /** The v2 client in a negotiation mode; records every HTTP exchange it makes. */
  async function v2(mode: 'auto' | 'legacy' | { pin: string }) {
    const seen: { method: string; headers: Headers; body: any; status: number; sessionId: string | null }[] =
      [];
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode } as any });
    const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', srv.url), {
      requestInit: { headers: { Authorization: `Bearer ${bot.key}` } },
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        seen.push({
          method: init?.method ?? 'GET',
          headers: new Headers(init?.headers),
          body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
          status: r.status,
          sessionId: r.headers.get('mcp-session-id'),
        });
        return r;
      },
    });
    await client.connect(transport);
    return { client, seen };
  }

  it('the v2 client pinned to 2026-07-28: discover, nine tools in a fixed order, structured calls, no session', async () => {
    const { client, seen } = await v2({ pin: MODERN });
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect(client.getServerVersion()).toMatchObject({ name: 'workroom' });
      expect(client.getDiscoverResult()).toMatchObject({ supportedVersions: ALL });
      expect(client.getInstructions()).toContain('list_channels');
      const first = (await client.listTools()).tools.map((t) => t.name);
      expect(first).toEqual([
        'send_message',
        'read_messages',
        'list_channels',
        'create_task',
        'update_task',
        'list_tasks',
        'search',
        'get_user_info',
        'list_users',
      ]);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(first);
      const sent = await client.callTool({
        name: 'send_message',
        arguments: { channel_id: channel, content: 'modern hello' },
      });
      expect(sent.isError ?? false).toBe(false);
      expect(sent.structuredContent).toMatchObject({
        channel_id: channel,
        content: 'modern hello',
        bot_id: bot.id,
      });
      const read = await client.callTool({ name: 'read_messages', arguments: { channel_id: channel } });
      expect(textOf(read)).toContain('modern hello');
      const failed = await client.callTool({
        name: 'read_messages',
        arguments: { channel_id: crypto.randomUUID() },
      });
      expect(failed.isError).toBe(true);
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`workroom://channels/${channel}`);
      const contents = await client.readResource({ uri: `workroom://channels/${channel}` });
      expect(JSON.stringify(contents)).toContain('modern hello');
      // Every exchange was a stateless POST: the standard headers sent, no session id minted.
      // (The second tools/list may be answered from the client's cache: its ttlMs allows it.)
      expect(seen.length).toBeGreaterThanOrEqual(7);
      for (const x of seen) {
        expect(x.method).toBe('POST');
        expect(x.status).toBe(200);
        expect(x.sessionId).toBeNull();
        expect(x.headers.get('mcp-protocol-version')).toBe(MODERN);
        expect(x.headers.get('mcp-method')).toBe(x.body.method);
      }
      expect(seen[0]!.body.method).toBe('server/discover');
    } finally {
      await client.close();
    }
  });

  it('subscriptions/listen: acknowledged with the honoured filter, then resources/list_changed when the bot joins a channel', async () => {
    const { client } = await v2({ pin: MODERN });
    let changes = 0;
    client.setNotificationHandler('notifications/resources/list_changed', () => {
      changes++;
    });
    try {
      const sub = await client.listen({ resourcesListChanged: true, toolsListChanged: true });
      // The tool list never changes while a server runs: only the resources' changes are honoured.
      expect(sub.honoredFilter).toEqual({ resourcesListChanged: true });
      const other = await w.channel(w.admin.api, { name: uniq('listen') });
      expectStatus(await w.admin.api.post(`/api/channels/${other}/members`, { bot_id: bot.id }), 201);
      await expect.poll(() => changes, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`workroom://channels/${other}`);
      await sub.close();
    } finally {
      await client.close();
    }
  });

  it('subscriptions/listen (raw): every event names the subscription; a bad filter is -32602', async () => {
    const ctl = new AbortController();
    const res = await fetch(new URL('/api/mcp', srv.url), {
      method: 'POST',
      signal: ctl.signal,
      headers: {
        authorization: `Bearer ${bot.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'sub-1',
        method: 'subscriptions/listen',
        params: { notifications: { resourcesListChanged: true }, _meta: META },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const reader = res.body!.getReader();
    let text = '';
    const events = () => parseSse(text).map((e) => JSON.parse(e.data));
    const readUntil = async (n: number) => {
      while (events().length < n) text += await sseChunk(reader);
    };
    await readUntil(1);
    expect(events()[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        notifications: { resourcesListChanged: true },
        _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' },
      },
    });
    const other = await w.channel(w.admin.api, { name: uniq('listen-raw') });
    expectStatus(await w.admin.api.post(`/api/channels/${other}/members`, { bot_id: bot.id }), 201);
    await readUntil(2);
    expect(events()[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/list_changed',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
    });
    ctl.abort();
    const bad = await modern('subscriptions/listen', { notifications: 'all' });
    expect(bad.status).toBe(200);
    expect(bad.body.error.code).toBe(-32602);
  });

  it('the v2 client in auto mode picks 2026-07-28', async () => {
    const { client, seen } = await v2('auto');
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect(
        (await client.callTool({ name: 'list_channels', arguments: {} })).structuredContent,
      ).toBeDefined();
      expect(seen.some((x) => x.body?.method === 'initialize')).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('the v2 client in legacy mode gets 2025-11-25 with a session', async () => {
    const { client, seen } = await v2('legacy');
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      const r = await client.callTool({ name: 'list_channels', arguments: {} });
      expect(textOf(r)).toContain(channel);
      expect(r.structuredContent).toBeDefined();
      expect(seen[0]!.body.method).toBe('initialize');
      expect(seen[0]!.sessionId).toMatch(/^wrms1\./);
    } finally {
      await client.close();
    }
  });

  it('the v1 SDK 1.32 gets 2025-11-25', async () => {
    await withSdkClient(srv.url, bot.key, async (_client, transport) => {
      expect(transport.protocolVersion).toBe('2025-11-25');
    });
  });

  /** A raw modern request; `headers` replace the standard ones (undefined removes one). */
  function modern(
    method: string,
    params: Record<string, unknown> = {},
    headers: Record<string, string | undefined> = {},
    meta: Record<string, unknown> = META,
  ) {
    const name =
      typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
    const h: Record<string, string | undefined> = {
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
      ...headers,
    };
    return rawMcp(srv.url, {
      key: bot.key,
      headers: Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<
        string,
        string
      >,
      body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: meta } },
    });
  }

  it('server/discover: every version we serve, capabilities, server info; resultType and cache hints', async () => {
    const r = await modern('server/discover');
    expect(r.status).toBe(200);
    expect(r.headers.get('mcp-session-id')).toBeNull();
    expect(r.body.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: ALL,
      capabilities: { tools: {}, resources: { listChanged: true } },
      ttlMs: expect.any(Number),
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'workroom' } },
    });
  });

  it('resultType on every result; ttlMs and cacheScope on list and read results', async () => {
    const cases: [string, Record<string, unknown>, boolean][] = [
      ['tools/list', {}, true],
      ['tools/call', { name: 'list_channels', arguments: {} }, false],
      ['tools/call', { name: 'read_messages', arguments: { channel_id: crypto.randomUUID() } }, false],
      ['resources/list', {}, true],
      ['resources/templates/list', {}, true],
      ['resources/read', { uri: `workroom://channels/${channel}` }, true],
    ];
    for (const [method, params, cached] of cases) {
      const r = await modern(method, params);
      expect(r.status, `${method} ${r.text}`).toBe(200);
      expect(r.body.result.resultType, method).toBe('complete');
      if (cached) {
        expect(Number.isInteger(r.body.result.ttlMs), method).toBe(true);
        expect(['public', 'private'], method).toContain(r.body.result.cacheScope);
      }
    }
    const tools = await modern('tools/list');
    expect(tools.body.result.tools.every((t: any) => t.outputSchema?.type === 'object')).toBe(true);
  });

  it('no session id is minted or echoed, even when a request carries one', async () => {
    const r = await modern('tools/list', {}, { 'mcp-session-id': 'wrms1.whatever' });
    expect(r.status).toBe(200);
    expect(r.headers.get('mcp-session-id')).toBeNull();
  });

  it('-32602 (HTTP 400) for a missing protocol version or client capabilities in _meta', async () => {
    const noVersion = await modern(
      'tools/list',
      {},
      {},
      { 'io.modelcontextprotocol/clientCapabilities': {} },
    );
    expect(noVersion.status).toBe(400);
    expect(noVersion.body).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(noVersion.body.error.message).toContain('io.modelcontextprotocol/protocolVersion');
    const noCaps = await modern('tools/list', {}, {}, { 'io.modelcontextprotocol/protocolVersion': MODERN });
    expect(noCaps.status).toBe(400);
    expect(noCaps.body.error.code).toBe(-32602);
    expect(noCaps.body.error.message).toContain('io.modelcontextprotocol/clientCapabilities');
  });

  it('-32022 (HTTP 400) for an unsupported version, with supported and requested', async () => {
    for (const v of ['2099-01-01', '2025-11-25']) {
      const r = await modern(
        'tools/list',
        {},
        { 'mcp-protocol-version': v },
        { ...META, 'io.modelcontextprotocol/protocolVersion': v },
      );
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32022, data: { supported: ALL, requested: v } },
      });
    }
    // A header naming an unknown version without any _meta is also answered as modern.
    const bare = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      body: { jsonrpc: '2.0', id: 8, method: 'tools/list' },
    });
    expect(bare.status).toBe(400);
    expect(bare.body.error.code).toBe(-32602);
  });

  it.each([
    ['MCP-Protocol-Version missing', { 'mcp-protocol-version': undefined }],
    ['MCP-Protocol-Version different from _meta', { 'mcp-protocol-version': '2025-11-25' }],
    ['Mcp-Method missing', { 'mcp-method': undefined }],
    ['Mcp-Method different from the body', { 'mcp-method': 'tools/list' }],
    ['Mcp-Name missing', { 'mcp-name': undefined }],
    ['Mcp-Name different from the body', { 'mcp-name': 'read_messages' }],
  ])('-32020 (HTTP 400) when %s; the call does not run', async (_what, headers) => {
    const marker = `mismatch-${Math.random().toString(36).slice(2)}`;
    const r = await modern(
      'tools/call',
      { name: 'send_message', arguments: { channel_id: channel, content: marker } },
      headers,
    );
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32020 } });
    const list = expectStatus(await w.admin.api.get(`/api/channels/${channel}/messages`), 200);
    expect((list.items as { content: string }[]).some((m) => m.content === marker)).toBe(false);
  });

  it('Mcp-Name may be Base64-encoded (=?base64?…?=); it is decoded before the comparison', async () => {
    const uri = `workroom://channels/${channel}`;
    const enc = `=?base64?${Buffer.from(uri).toString('base64')}?=`;
    expect((await modern('resources/read', { uri }, { 'mcp-name': enc })).status).toBe(200);
    const other = `=?base64?${Buffer.from('workroom://channels/x').toString('base64')}?=`;
    expect((await modern('resources/read', { uri }, { 'mcp-name': other })).body.error.code).toBe(-32020);
  });

  it('404 -32601 for a method the modern era does not have (ping, initialize-era methods, unknown)', async () => {
    for (const m of ['ping', 'logging/setLevel', 'no/such/method']) {
      const r = await modern(m);
      expect(r.status, m).toBe(404);
      expect(r.body).toMatchObject({ id: 7, error: { code: -32601 } });
    }
  });

  it('malformed tool arguments stay in-band -32602 (HTTP 200); a notification is 202; SSE when preferred', async () => {
    const bad = await modern('tools/call', { name: 'read_messages', arguments: { channel_id: 'nope' } });
    expect(bad.status).toBe(200);
    expect(bad.body.error.code).toBe(-32602);
    const note = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/cancelled' },
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: META } },
    });
    expect(note.status).toBe(202);
    expect(note.text).toBe('');
    const sse = await modern('tools/list', {}, { accept: 'text/event-stream' });
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(sse.text);
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.data).result.resultType).toBe('complete');
  });

  it('a batch of modern requests is not modern: legacy rules apply (a session is required)', async () => {
    const r = await rawMcp(srv.url, {
      key: bot.key,
      headers: { 'mcp-protocol-version': MODERN },
      body: [{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }],
    });
    expect(r.status).toBe(400);
    expect(r.text).not.toContain('"result"');
  });
});
