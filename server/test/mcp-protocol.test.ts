import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { parseSse, rawMcp, rawSession, sseChunk } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle } from './helpers/world.js';

/** The transport and JSON-RPC layer, byte by byte, with raw HTTP. */
describe('MCP protocol (raw HTTP)', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let sid: string;
  const post = (body: unknown, opts: Parameters<typeof rawMcp>[1] = {}) =>
    rawMcp(srv.url, { key: bot.key, session: sid, body, ...opts });

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_MCP_ALLOWED_ORIGINS: 'https://agents.example.com' });
    w = await World.create(srv.url);
    bot = await w.bot(w.admin.api);
    sid = (await rawSession(srv.url, bot.key))!;
  });
  afterAll(() => srv.close());

  describe('initialize', () => {
    it('answers 2025-03-26 with server info, capabilities, instructions and a session id', async () => {
      const r = await rawMcp(srv.url, {
        key: bot.key,
        body: {
          jsonrpc: '2.0',
          id: 'init-1',
          method: 'initialize',
          params: {
            protocolVersion: '2025-03-26',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('mcp-session-id')).toMatch(/^wrms1\.[!-~]+$/);
      expect(r.body).toMatchObject({
        jsonrpc: '2.0',
        id: 'init-1',
        result: {
          protocolVersion: '2025-03-26',
          serverInfo: { name: 'workroom' },
          capabilities: { tools: {}, resources: {} },
        },
      });
      expect(typeof r.body.result.instructions).toBe('string');
    });

    it.each([
      ['2025-06-18', '2025-06-18'],
      ['2025-11-25', '2025-11-25'],
      ['2099-01-01', '2025-11-25'],
      ['2026-07-28', '2025-11-25'],
    ])(
      'a client asking %s gets %s (a version we speak is echoed, any other gets our latest), not an error',
      async (v, answered) => {
        const r = await rawMcp(srv.url, {
          key: bot.key,
          headers: { 'mcp-protocol-version': v },
          body: {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
          },
        });
        expect(r.status).toBe(200);
        expect(r.body.result.protocolVersion).toBe(answered);
      },
    );

    it('2024-11-05 is echoed; a missing protocolVersion is -32602 naming it', async () => {
      const old = await rawMcp(srv.url, {
        key: bot.key,
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2024-11-05',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        },
      });
      expect(old.body.result.protocolVersion).toBe('2024-11-05');
      const bad = await rawMcp(srv.url, {
        key: bot.key,
        body: { jsonrpc: '2.0', id: 2, method: 'initialize', params: {} },
      });
      expect(bad.body.error.code).toBe(-32602);
      expect(bad.body.error.message).toContain('protocolVersion');
    });

    it('accepts the MCP-Protocol-Version header of newer clients', async () => {
      const r = await post(
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { headers: { 'mcp-protocol-version': '2025-03-26' } },
      );
      expect(r.body).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    });
  });

  describe('JSON-RPC 2.0', () => {
    it('echoes string and number ids', async () => {
      expect((await post({ jsonrpc: '2.0', id: 'abc', method: 'ping' })).body).toEqual({
        jsonrpc: '2.0',
        id: 'abc',
        result: {},
      });
      expect((await post({ jsonrpc: '2.0', id: 42, method: 'ping' })).body).toEqual({
        jsonrpc: '2.0',
        id: 42,
        result: {},
      });
      expect((await post({ jsonrpc: '2.0', id: 0, method: 'ping' })).body.id).toBe(0);
    });

    it('-32700 for a body that is not JSON', async () => {
      const r = await post(undefined, { raw: '{"jsonrpc":"2.0","id":1,"method":' });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    });

    it.each([
      ['no jsonrpc member', { id: 7, method: 'ping' }, 7],
      ['jsonrpc 1.0', { jsonrpc: '1.0', id: 7, method: 'ping' }, 7],
      ['a method that is not a string', { jsonrpc: '2.0', id: 7, method: 12 }, 7],
      ['no method', { jsonrpc: '2.0', id: 7 }, 7],
      ['an id that is an object', { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, null],
      ['an id that is null', { jsonrpc: '2.0', id: null, method: 'ping' }, null],
      ['params that are a string', { jsonrpc: '2.0', id: 7, method: 'ping', params: 'x' }, 7],
      ['a body that is a number', 5, null],
    ])('-32600 for %s', async (_name, body, id) => {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
    });

    it('-32600 for an empty batch', async () => {
      const r = await post([]);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ id: null, error: { code: -32600 } });
    });

    it('-32601 for an unknown method', async () => {
      const r = await post({ jsonrpc: '2.0', id: 1, method: 'tools/destroy' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ id: 1, error: { code: -32601 } });
      expect(r.body.error.message).toContain('tools/destroy');
    });

    it('-32602 for an unknown tool, a missing name, bad arguments, array params', async () => {
      const unknown = await post({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'rm_rf', arguments: {} },
      });
      expect(unknown.body).toMatchObject({ id: 1, error: { code: -32602 } });
      expect(unknown.body.error.message).toContain('rm_rf');
      const noName = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { arguments: {} } });
      expect(noName.body).toMatchObject({ id: 2, error: { code: -32602, data: { field: 'name' } } });
      const missing = await post({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'send_message', arguments: { channel_id: crypto.randomUUID() } },
      });
      expect(missing.body).toMatchObject({ id: 3, error: { code: -32602, data: { field: 'content' } } });
      expect(missing.body.error.message).toContain('content: is required');
      const wrongType = await post({
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'read_messages', arguments: { channel_id: 5 } },
      });
      expect(wrongType.body.error).toMatchObject({ code: -32602, data: { field: 'channel_id' } });
      const notObject = await post({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'search', arguments: 'q' },
      });
      expect(notObject.body.error).toMatchObject({ code: -32602, data: { field: 'arguments' } });
      const arrayParams = await post({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: ['search'] });
      expect(arrayParams.body.error.code).toBe(-32602);
      const extra = await post({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'search', arguments: { query: 'x', colour: 'red' } },
      });
      expect(extra.body.error).toMatchObject({ code: -32602, data: { field: 'colour' } });
    });

    it('-32603 for an internal failure, without a stack trace', async () => {
      // A storage failure the tool cannot expect: its table is gone for a moment.
      await srv.app.services.storage.stores.db.schema.alterTable('tasks').renameTo('tasks_gone').execute();
      try {
        const { topicId, projectId } = await w.project(w.admin.api);
        expectStatus(await w.admin.api.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
        const r = await post({
          jsonrpc: '2.0',
          id: 9,
          method: 'tools/call',
          params: { name: 'list_tasks', arguments: { topic_id: topicId } },
        });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32603, message: 'Internal error' } });
        expect(r.text).not.toMatch(/at .*\.ts|stack|tasks_gone/);
      } finally {
        await srv.app.services.storage.stores.db.schema.alterTable('tasks_gone').renameTo('tasks').execute();
      }
    });

    it('notifications get no response: 202 with no body', async () => {
      const r = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(r.status).toBe(202);
      expect(r.text).toBe('');
      const unknown = await post({ jsonrpc: '2.0', method: 'notifications/whatever' });
      expect(unknown.status).toBe(202);
      const responses = await post([
        { jsonrpc: '2.0', id: 'srv-1', result: {} },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      ]);
      expect(responses.status).toBe(202);
      expect(responses.text).toBe('');
    });

    it('a batch answers an array of the responses, in order, without the notifications', async () => {
      const r = await post([
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'nope' },
        { jsonrpc: '1.0', id: 3, method: 'ping' },
        { jsonrpc: '2.0', id: 4, method: 'tools/list' },
        {
          jsonrpc: '2.0',
          id: 5,
          method: 'tools/call',
          params: { name: 'search', arguments: { query: 'zzz-nothing' } },
        },
      ]);
      expect(r.status).toBe(200);
      expect(Array.isArray(r.body)).toBe(true);
      expect(r.body.map((x: any) => x.id)).toEqual(['a', 2, 3, 4, 5]);
      expect(r.body[0].result).toEqual({});
      expect(r.body[1].error.code).toBe(-32601);
      expect(r.body[2].error.code).toBe(-32600);
      expect(r.body[3].result.tools).toHaveLength(9);
      expect(r.body[4].result.content[0].type).toBe('text');
    });

    it('initialize inside a batch is -32600', async () => {
      const r = await post([
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26' } },
      ]);
      expect(r.body[0].error.code).toBe(-32600);
    });
  });

  describe('Streamable HTTP', () => {
    it('answers over SSE when the client prefers text/event-stream, one event per response', async () => {
      const r = await post(
        [
          { jsonrpc: '2.0', id: 1, method: 'ping' },
          { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        ],
        { headers: { accept: 'text/event-stream, application/json;q=0.5' } },
      );
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/event-stream');
      const events = parseSse(r.text);
      expect(events).toHaveLength(2);
      expect(events.every((e) => e.event === 'message' && /^\d+$/.test(e.id!))).toBe(true);
      expect(JSON.parse(events[0]!.data)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
      expect(JSON.parse(events[1]!.data).result.tools).toHaveLength(9);
      const only = await post(
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { headers: { accept: 'text/event-stream' } },
      );
      expect(only.headers.get('content-type')).toBe('text/event-stream');
      expect(JSON.parse(parseSse(only.text)[0]!.data)).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    });

    it('answers JSON to clients listing both (the SDK) and 406 to clients accepting neither', async () => {
      const r = await post({ jsonrpc: '2.0', id: 1, method: 'ping' });
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const no = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { accept: 'text/html' } });
      expect(no.status).toBe(406);
    });

    it('415 for a body that is not JSON by its content type', async () => {
      const r = await post(undefined, { raw: 'ping', headers: { 'content-type': 'text/plain' } });
      expect(r.status).toBe(415);
    });

    it('requires the session id after initialize: 400 without, 404 for an unknown one', async () => {
      const none = await rawMcp(srv.url, { key: bot.key, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
      expect(none.status).toBe(400);
      const unknown = await rawMcp(srv.url, {
        key: bot.key,
        session: crypto.randomUUID(),
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expect(unknown.status).toBe(404);
      // Another bot cannot use this bot's session.
      const other = await w.bot(w.admin.api);
      const stolen = await rawMcp(srv.url, {
        key: other.key,
        session: sid,
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expect(stolen.status).toBe(404);
    });

    it('DELETE ends a session; afterwards its id answers 404', async () => {
      const s = (await rawSession(srv.url, bot.key))!;
      expect(
        (await rawMcp(srv.url, { key: bot.key, session: s, body: { jsonrpc: '2.0', id: 1, method: 'ping' } }))
          .status,
      ).toBe(200);
      const del = await rawMcp(srv.url, { key: bot.key, session: s, method: 'DELETE' });
      expect(del.status).toBe(204);
      expect(
        (await rawMcp(srv.url, { key: bot.key, session: s, body: { jsonrpc: '2.0', id: 1, method: 'ping' } }))
          .status,
      ).toBe(404);
      expect((await rawMcp(srv.url, { key: bot.key, session: s, method: 'DELETE' })).status).toBe(404);
    });

    it('GET opens the session stream: server messages with event ids, resumable with Last-Event-ID', async () => {
      const s = (await rawSession(srv.url, bot.key))!;
      const ctl = new AbortController();
      const res = await fetch(new URL('/api/mcp', srv.url), {
        headers: { authorization: `Bearer ${bot.key}`, accept: 'text/event-stream', 'mcp-session-id': s },
        signal: ctl.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      const reader = res.body!.getReader();
      const join = async () => {
        const ch = await w.channel(w.admin.api);
        expectStatus(await w.admin.api.post(`/api/channels/${ch}/members`, { bot_id: bot.id }), 201);
      };
      await join();
      let text = '';
      while (!text.includes('\n\n')) text += await sseChunk(reader);
      const [first] = parseSse(text);
      expect(JSON.parse(first!.data)).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/resources/list_changed',
      });
      ctl.abort();
      // While disconnected, two more changes; reconnecting with Last-Event-ID replays exactly those.
      await join();
      await join();
      const ctl2 = new AbortController();
      const res2 = await fetch(new URL('/api/mcp', srv.url), {
        headers: {
          authorization: `Bearer ${bot.key}`,
          accept: 'text/event-stream',
          'mcp-session-id': s,
          'last-event-id': first!.id!,
        },
        signal: ctl2.signal,
      });
      const reader2 = res2.body!.getReader();
      let text2 = '';
      while (parseSse(text2).length < 2) text2 += await sseChunk(reader2);
      const replay = parseSse(text2);
      // Ids are the changes' outbox positions (`o<position>`: resumable on any instance, mcp-instances).
      const position = (id: string | undefined) => Number(/^o(\d+)$/.exec(id ?? '')?.[1]);
      expect(replay).toHaveLength(2);
      expect(position(replay[0]!.id)).toBeGreaterThan(position(first!.id));
      expect(position(replay[1]!.id)).toBeGreaterThan(position(replay[0]!.id));
      ctl2.abort();
      // DELETE ends the session and closes its stream.
      expect((await rawMcp(srv.url, { key: bot.key, session: s, method: 'DELETE' })).status).toBe(204);
    });

    it('GET without a session id is 400, with a wrong Accept 406', async () => {
      expect(
        (await rawMcp(srv.url, { key: bot.key, method: 'GET', headers: { accept: 'text/event-stream' } }))
          .status,
      ).toBe(400);
      expect(
        (
          await rawMcp(srv.url, {
            key: bot.key,
            session: sid,
            method: 'GET',
            headers: { accept: 'application/json' },
          })
        ).status,
      ).toBe(406);
    });
  });

  describe('Origin and authentication', () => {
    it.each(['https://evil.example', 'null', 'http://localhost.evil.example'])(
      'refuses Origin %s with 403',
      async (origin) => {
        const r = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { origin } });
        expect(r.status).toBe(403);
        expect(r.body.error.code).toBe(-32000);
      },
    );

    it.each(['http://localhost:5173', 'http://127.0.0.1:8080', 'https://agents.example.com'])(
      'allows Origin %s',
      async (origin) => {
        const r = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { origin } });
        expect(r.status).toBe(200);
      },
    );

    it('401 with WWW-Authenticate: Bearer for missing, malformed, user, revoked and expired credentials', async () => {
      const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
      const expect401 = async (key: string | undefined) => {
        const r = await rawMcp(srv.url, { key, body: ping });
        expect(r.status).toBe(401);
        expect(r.headers.get('www-authenticate')).toBe('Bearer');
        expect(r.body.error.code).toBe(-32001);
        return r;
      };
      await expect401(undefined);
      await expect401('wrbk_12345678_live_nothex');
      await expect401(w.admin.token);
      const revoked = await w.bot(w.admin.api);
      expectStatus(await w.admin.api.delete(`/api/bots/${revoked.id}/api-keys/${revoked.keyId}`), 200);
      await expect401(revoked.key);
      const expired = await w.bot(w.admin.api, { expires_in_days: 1 });
      await srv.app.services.storage.stores.db
        .updateTable('bot_api_keys')
        .set({ expires_at: '2000-01-01T00:00:00.000Z' })
        .where('id', '=', expired.keyId)
        .execute();
      const r = await expect401(expired.key);
      expect(r.text).not.toContain(expired.key);
      // GET and DELETE too.
      expect((await rawMcp(srv.url, { method: 'GET', session: sid })).status).toBe(401);
      expect((await rawMcp(srv.url, { method: 'DELETE', session: sid })).status).toBe(401);
    });

    it('records key usage', async () => {
      const b = await w.bot(w.admin.api);
      await rawSession(srv.url, b.key);
      const keys = expectStatus(await w.admin.api.get(`/api/bots/${b.id}/api-keys`), 200);
      expect(keys.items[0].use_count).toBe(2);
    });
  });
});

describe('MCP with sessions off', () => {
  let srv: TestServer;
  let bot: BotHandle;
  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_MCP_SESSIONS: 'false' });
    bot = await World.create(srv.url).then((w) => w.bot(w.admin.api));
  });
  afterAll(() => srv.close());

  it('initialize issues no session id, every request stands alone, GET and DELETE answer 405', async () => {
    const init = await rawMcp(srv.url, {
      key: bot.key,
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      },
    });
    expect(init.status).toBe(200);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.body.result.protocolVersion).toBe('2025-11-25');
    const list = await rawMcp(srv.url, {
      key: bot.key,
      body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    });
    expect(list.body.result.tools).toHaveLength(9);
    const get = await rawMcp(srv.url, {
      key: bot.key,
      method: 'GET',
      headers: { accept: 'text/event-stream' },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await rawMcp(srv.url, { key: bot.key, method: 'DELETE' })).status).toBe(405);
  });
});

describe('MCP rate limit', () => {
  let srv: TestServer;
  let bot: BotHandle;
  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0.5',
      WORKROOM_RATE_LIMIT_BOT_BURST: '3',
    });
    bot = await World.create(srv.url).then((w) => w.bot(w.admin.api));
  });
  afterAll(() => srv.close());

  it('shares the per-key token bucket of the REST API: 429 with Retry-After once it is empty', async () => {
    const sid = await rawSession(srv.url, bot.key); // initialize + notifications/initialized: two tokens
    const ok = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: { jsonrpc: '2.0', id: 1, method: 'ping' },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('ratelimit-remaining')).toBe('0');
    const limited = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: { jsonrpc: '2.0', id: 2, method: 'ping' },
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body.error.message).toContain('Too Many Requests');
  });
});
