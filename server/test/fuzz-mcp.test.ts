import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fuzzParameters,
  GROUP,
  garbageValue,
  nastyShort,
  nastyString,
  objectFor,
  preview,
  replayHint,
  rpcProblem,
  runCases,
  type JsonSchema,
} from './helpers/fuzz.js';
import { buildFuzzWorld, idSource, type FuzzWorld } from './helpers/fuzz-world.js';
import { ACCEPT_BOTH, parseSse, rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Fuzzes the MCP endpoint with JSON-RPC generated from the served tool schemas (tools/list
 * inputSchema): valid and invalid tools/call arguments, broken envelopes, odd ids, notifications,
 * small batches, unknown methods, huge params, transport garbage. Properties: never HTTP 5xx, never
 * -32603; every error is a JSON-RPC error object with a code of the spec (or a transport refusal);
 * a tools/call that is well-formed answers a result (isError for a failure inside the tool), -32602
 * for bad arguments or -32003 for a missing scope; another organization's ids never succeed and never
 * show up. Replay with FUZZ_SEED / FUZZ_RUNS / FUZZ_PATH (see fuzz-rest.test.ts).
 */
const FILE = 'fuzz-mcp.test.ts';
/** Posts per run; batches make the number of JSON-RPC messages larger still. */
const PARAMS = fuzzParameters(2000);
/** Arguments that narrow a list (another organization's id there may answer an empty list, never its data). */
const FILTERS = new Set(['list_channels.project_id', 'list_tasks.assignee_id']);

interface Tool {
  name: string;
  inputSchema: JsonSchema;
  scope: string | undefined;
  validate: ValidateFunction;
}

interface Post {
  /** Which key and session the post uses. */
  who: 'all' | 'read' | 'tasks' | 'no-session' | 'bad-session' | 'no-key' | 'garbage-key' | 'user-token';
  body: string;
  /** The messages as generated (undefined when the body is not JSON). */
  value: unknown;
  accept: string;
  contentType: string;
}

const rpcId = fc.oneof(
  { arbitrary: fc.integer(), weight: 4 },
  { arbitrary: fc.uuid(), weight: 2 },
  { arbitrary: nastyShort, weight: 1 },
  { arbitrary: fc.constantFrom(0, -1, 2 ** 53, 1.5, 1e308, '', 'id'), weight: 1 },
);

/** Ids that are not allowed: the server must answer -32600. */
const badId = fc.constantFrom(null, true, {}, [], [1], { a: 1 });

describe('fuzz: MCP (driven by the tool schemas)', () => {
  let srv: TestServer;
  let fw: FuzzWorld;
  let pool: Pool;
  let tools: Tool[];
  const sessions: Record<string, string> = {};
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    srv = await startTestServer();
    fw = await buildFuzzWorld(srv.url);
    for (const [name, bot] of Object.entries(fw.bots)) {
      keys[name] = bot.key;
      sessions[name] = (await rawSession(srv.url, bot.key))!;
    }
    const list = await rawMcp(srv.url, {
      key: keys.all,
      session: sessions.all,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats.default(ajv);
    tools = (list.body.result.tools as { name: string; inputSchema: JsonSchema; description: string }[]).map(
      (t) => ({
        name: t.name,
        inputSchema: t.inputSchema,
        scope: /Requires scope ([\w:]+)/.exec(t.description)?.[1],
        validate: ajv.compile(t.inputSchema),
      }),
    );
    pool = new Pool(srv.url, { connections: GROUP, headersTimeout: 30_000, bodyTimeout: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await pool?.close();
    await srv?.close();
  });

  function postArb(): fc.Arbitrary<Post> {
    const ids = idSource(fw);
    const toolCall = fc
      .tuple(
        fc.constantFrom(...tools),
        rpcId,
        fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 9 },
          {
            arbitrary: fc.record({ idempotency_key: fc.oneof(fc.uuid(), nastyShort, fc.integer()) }),
            weight: 1,
          },
        ),
      )
      .chain(([tool, id, meta]) =>
        fc
          .oneof(
            { arbitrary: objectFor(tool.inputSchema, ids), weight: 8 },
            { arbitrary: garbageValue, weight: 1 },
            { arbitrary: fc.constant(undefined), weight: 1 },
          )
          .map((args) => ({
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: {
              name: tool.name,
              ...(args === undefined ? {} : { arguments: args }),
              ...(meta ? { _meta: meta } : {}),
            },
          })),
      );
    const otherCall = fc
      .tuple(
        rpcId,
        fc.oneof(
          fc.constantFrom(
            'ping',
            'tools/list',
            'resources/list',
            'resources/templates/list',
            'resources/read',
          ),
          fc.constantFrom(
            'initialize',
            'tools/call',
            'prompts/list',
            'completion/complete',
            'logging/setLevel',
          ),
          nastyShort,
        ),
        fc.oneof(
          fc.constant(undefined),
          fc.record({
            uri: fc.oneof(
              fc
                .constantFrom(...fw.local.channel, ...fw.foreign.channel)
                .map((c) => `workroom://channels/${c}`),
              fc.constantFrom(...fw.local.topic, ...fw.foreign.topic).map((c) => `workroom://topics/${c}`),
              fc.constantFrom(...fw.local.dm, ...fw.foreign.dm).map((c) => `workroom://dm-rooms/${c}`),
              nastyShort.map((s) => `workroom://channels/${s}`),
              garbageValue,
            ),
          }),
          fc.record({
            protocolVersion: fc.oneof(fc.constantFrom('2025-03-26', '2024-11-05'), garbageValue),
            capabilities: garbageValue,
          }),
          fc.record({
            name: fc.oneof(nastyShort, fc.constantFrom('send_message', 'nope')),
            arguments: garbageValue,
          }),
          garbageValue,
        ),
      )
      .map(([id, method, params]) => ({
        jsonrpc: '2.0',
        id,
        method,
        ...(params === undefined ? {} : { params }),
      }));
    const broken = fc.oneof(
      fc.record({
        jsonrpc: fc.constantFrom(undefined, '1.0', 2, 2.0, '2.0 ', null),
        id: rpcId,
        method: fc.constant('ping'),
      }),
      fc.record({ jsonrpc: fc.constant('2.0'), id: badId, method: fc.constant('ping') }),
      fc.record({
        jsonrpc: fc.constant('2.0'),
        id: rpcId,
        method: garbageValue.filter((m) => typeof m !== 'string'),
      }),
      fc.record({
        jsonrpc: fc.constant('2.0'),
        id: rpcId,
        method: fc.constant('ping'),
        params: fc.constantFrom(null, 'x', 1, [1, 2], true),
      }),
      fc.record({ jsonrpc: fc.constant('2.0'), id: rpcId, result: garbageValue }),
      fc.record({ jsonrpc: fc.constant('2.0'), id: rpcId }),
      garbageValue,
    );
    const notification = fc
      .tuple(
        fc.constantFrom('notifications/initialized', 'notifications/cancelled', 'tools/call', 'x'),
        garbageValue,
      )
      .map(([method, params]) => ({ jsonrpc: '2.0', method, params }));
    const message = fc.oneof(
      { arbitrary: toolCall, weight: 8 },
      { arbitrary: otherCall, weight: 2 },
      { arbitrary: broken, weight: 2 },
      { arbitrary: notification, weight: 1 },
    );
    const huge = fc.tuple(rpcId, fc.constantFrom(200_000, 600_000, 1_100_000)).map(([id, n]) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'send_message', arguments: { channel_id: fw.orgA.channel, content: 'é'.repeat(n) } },
    }));
    const body = fc.oneof(
      { arbitrary: message.map((value) => ({ value })), weight: 12 },
      { arbitrary: fc.array(message, { minLength: 1, maxLength: 8 }).map((value) => ({ value })), weight: 3 },
      { arbitrary: huge.map((value) => ({ value })), weight: 1 },
      {
        arbitrary: fc
          .oneof(
            fc.constantFrom(
              '',
              '{',
              '[]',
              'null',
              '[[]]',
              '\u0000',
              '{"jsonrpc":"2.0","id":1,"method":"ping"',
              '\ufeff{}',
            ),
            fc.nat({ max: 100_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
            nastyString,
          )
          .map((raw) => ({ raw })),
        weight: 1,
      },
    );
    return fc
      .record({
        who: fc.oneof(
          { arbitrary: fc.constantFrom('all' as const), weight: 6 },
          { arbitrary: fc.constantFrom('read' as const, 'tasks' as const), weight: 3 },
          {
            arbitrary: fc.constantFrom(
              'no-session' as const,
              'bad-session' as const,
              'no-key' as const,
              'garbage-key' as const,
              'user-token' as const,
            ),
            weight: 1,
          },
        ),
        body,
        accept: fc.oneof(
          { arbitrary: fc.constant(ACCEPT_BOTH), weight: 10 },
          {
            arbitrary: fc.constantFrom('text/event-stream', 'application/json', '*/*', 'text/html', ''),
            weight: 2,
          },
        ),
        contentType: fc.oneof(
          { arbitrary: fc.constant('application/json'), weight: 15 },
          fc.constantFrom('text/plain', 'application/json; charset=utf-16'),
        ),
      })
      .map(({ who, body: b, accept, contentType }) => ({
        who,
        accept,
        contentType,
        value: 'value' in b ? b.value : undefined,
        body: 'value' in b ? (JSON.stringify(b.value) ?? 'null') : b.raw,
      }));
  }

  function headersOf(p: Post): Record<string, string> {
    const h: Record<string, string> = { 'content-type': p.contentType };
    if (p.accept) h.accept = p.accept;
    const key = { 'garbage-key': 'wrbk_garbage', 'user-token': fw.orgA.member.token, 'no-key': '' }[
      p.who as string
    ];
    const bot = p.who === 'read' || p.who === 'tasks' ? p.who : 'all';
    h.authorization = key === undefined ? `Bearer ${keys[bot]}` : key ? `Bearer ${key}` : '';
    if (!h.authorization) delete h.authorization;
    if (p.who === 'bad-session') h['mcp-session-id'] = 'f'.repeat(32);
    else if (p.who !== 'no-session') h['mcp-session-id'] = sessions[bot]!;
    return h;
  }

  const isObj = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v);

  /** The problems of one request/response pair inside an answer. */
  function callProblem(p: Post, req: unknown, res: Record<string, unknown>): string | undefined {
    if (!isObj(req) || req.jsonrpc !== '2.0' || req.method !== 'tools/call' || !isObj(req.params))
      return undefined;
    const tool = tools.find((t) => t.name === (req.params as Record<string, unknown>).name);
    const params = req.params as Record<string, unknown>;
    if (!tool || (params.arguments !== undefined && !isObj(params.arguments))) return undefined;
    const err = res.error as { code: number; message: string } | undefined;
    const scopes =
      p.who === 'read' ? ['messages:read'] : p.who === 'tasks' ? ['tasks:read', 'channels:read'] : null;
    // Arguments refused at the edge (U+0000) may answer -32602 before the scope is looked at.
    if (tool.scope && scopes && !scopes.includes(tool.scope))
      return err?.code === -32003 || err?.code === -32602
        ? undefined
        : `a key without ${tool.scope} was not refused`;
    if (err) {
      if (err.code !== -32602) return `a well-formed tools/call answered error ${err.code}`;
      const meta = params._meta as Record<string, unknown> | undefined;
      const badMeta = meta && typeof meta.idempotency_key !== 'string';
      // Rules across fields ("exactly one of channel_id, topic_id, dm_room_id") are in the description only.
      // So is the refusal of U+0000 in any text (decided at the edge for both databases).
      const crossField = /exactly one of|at least one of|NUL character/.test(err.message);
      if (tool.validate(params.arguments ?? {}) && !badMeta && !crossField)
        return `arguments valid by the published inputSchema answered -32602 (${err.message})`;
      return undefined;
    }
    const result = res.result as { isError?: boolean; content?: { text?: string }[] } | undefined;
    if (!isObj(result) || !Array.isArray(result.content)) return 'a tools/call result has no content';
    if (result.isError) return undefined;
    const text = JSON.stringify(result);
    const args = isObj(params.arguments) ? params.arguments : {};
    for (const [k, v] of Object.entries(args))
      if (typeof v === 'string' && fw.foreignIds.has(v) && !FILTERS.has(`${tool.name}.${k}`))
        return `a tools/call with another organization's ${k} succeeded`;
    for (const id of fw.foreignIds)
      if (text.includes(id)) return `the result shows another organization's id ${id}`;
    return undefined;
  }

  /** Every property of one post; returns the first violated, if any. */
  function problemOf(p: Post, status: number, type: string, text: string): string | undefined {
    if (status >= 500) return `HTTP ${status}`;
    if (status === 202) {
      const msgs = Array.isArray(p.value) ? p.value : [p.value];
      if (text) return '202 with a body';
      if (msgs.some((m) => isObj(m) && m.id !== undefined && typeof m.method === 'string'))
        return '202 for a post that holds a request';
      return undefined;
    }
    if (status === 204 || (status >= 400 && status !== 400 && !text)) return undefined;
    let answers: unknown[];
    try {
      answers = type.includes('text/event-stream')
        ? parseSse(text).map((e) => JSON.parse(e.data) as unknown)
        : [JSON.parse(text) as unknown];
    } catch {
      return `the answer is not JSON (${type}): ${text.slice(0, 100)}`;
    }
    const flat = answers.flatMap((a) => (Array.isArray(a) ? a : [a]));
    for (const a of flat) {
      const problem = rpcProblem(a);
      if (problem) return problem;
    }
    if (status !== 200) return undefined;
    const requests = (Array.isArray(p.value) ? p.value : [p.value]).filter(
      (m) => isObj(m) && m.jsonrpc === '2.0' && typeof m.method === 'string' && m.id !== undefined,
    ) as Record<string, unknown>[];
    // Answers are matched to requests by id; a post that repeats an id is checked only for the above.
    const ids = requests.map((r) => JSON.stringify(r.id));
    if (new Set(ids).size !== ids.length) return undefined;
    for (const a of flat as Record<string, unknown>[]) {
      const req = requests.find((r) => a.id !== null && r.id === a.id);
      const problem = req && callProblem(p, req, a);
      if (problem) return problem;
    }
    return undefined;
  }

  it('at least 2,000 generated JSON-RPC messages: no 5xx, no -32603, spec error codes, tool failures as isError', async () => {
    let found: string[] = [];
    let posts = 0;
    let messages = 0;
    const statuses = new Map<number, number>();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = Date.now();

    async function exchange(p: Post): Promise<string | undefined> {
      posts++;
      messages += Array.isArray(p.value) ? p.value.length : 1;
      let status = 0;
      let text = '';
      let problem: string | undefined;
      try {
        const res = await pool.request({
          method: 'POST',
          path: '/api/mcp',
          headers: headersOf(p),
          body: p.body,
        });
        status = res.statusCode;
        text = await res.body.text();
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        problem = problemOf(p, status, String(res.headers['content-type'] ?? ''), text);
      } catch (err) {
        problem = `no answer (${(err as Error).message})`;
      }
      if (!problem) return undefined;
      return `${problem}\n  as ${p.who}: POST /api/mcp ${preview(p.body, 500)}\n  answer ${status} ${text.slice(0, 400)}`;
    }

    try {
      found = await runCases(postArb(), exchange, PARAMS);
    } finally {
      const heapAfter = process.memoryUsage().heapUsed;
      console.log(
        `fuzz-mcp: ${posts} posts, ${messages} JSON-RPC messages on ${srv.dialect} in ` +
          `${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
          `heap ${(heapBefore / 2 ** 20).toFixed(0)} → ${(heapAfter / 2 ** 20).toFixed(0)} MB; replay: ${replayHint(FILE, PARAMS)}`,
      );
    }
    expect(found).toEqual([]);
    expect(messages).toBeGreaterThanOrEqual(PARAMS.numRuns);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(400 * 2 ** 20);
  }, 400_000);

  it('a batch of more than 100 messages (and one past the limit) is refused with a JSON-RPC error and none of it runs', async () => {
    const max = srv.app.services.config.mcp.maxBatch;
    for (const size of [101, max + 1]) {
      const marker = `fuzz-batch-${size}-${Date.now()}`;
      const batch = Array.from({ length: size }, (_, i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: {
          name: 'send_message',
          arguments: { channel_id: fw.orgA.channel, content: `${marker} ${i}` },
        },
      }));
      const r = await rawMcp(srv.url, { key: keys.all, session: sessions.all, body: batch });
      expect(r.status).toBeLessThan(500);
      // One error for the whole post (not an answer per message): -32600 Invalid Request.
      const answer = Array.isArray(r.body) && r.body.length === 1 ? r.body[0] : r.body;
      expect(rpcProblem(answer), r.text.slice(0, 300)).toBeUndefined();
      expect(answer?.error?.code, r.text.slice(0, 300)).toBe(-32600);
      const read = await fw.orgA.admin.api.get(`/api/channels/${fw.orgA.channel}/messages`, {
        query: { limit: 100 },
      });
      expect(read.status).toBe(200);
      expect((read.body.items as { content: string }[]).filter((m) => m.content.startsWith(marker))).toEqual(
        [],
      );
    }
  });

  it('a batch at the limit is still answered in full', async () => {
    const max = srv.app.services.config.mcp.maxBatch;
    const batch = Array.from({ length: max }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    const r = await rawMcp(srv.url, { key: keys.all, session: sessions.all, body: batch });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect((r.body as unknown[]).length).toBe(max);
    for (const a of r.body as unknown[]) expect(rpcProblem(a)).toBeUndefined();
  });
  it('modern (2026-07-28) requests with every mix of _meta and headers: the first failing check answers, exactly', async () => {
    const MODERN = '2026-07-28';
    const methods = ['tools/call', 'tools/list', 'server/discover', 'resources/read', 'ping', 'no/such'];
    const arb = fc.record({
      method: fc.constantFrom(...methods),
      tool: fc.constantFrom('list_channels', 'search', 'read_messages', 'no_such_tool'),
      metaVersion: fc.constantFrom<unknown>(
        MODERN,
        MODERN,
        '2025-11-25',
        '2099-01-01',
        undefined,
        7,
        nastyShort,
      ),
      caps: fc.constantFrom<unknown>({}, {}, { sampling: {} }, undefined, 'x', null, []),
      headerVersion: fc.constantFrom<'same' | 'missing' | 'other' | 'legacy'>(
        'same',
        'same',
        'missing',
        'other',
        'legacy',
      ),
      headerMethod: fc.constantFrom<'same' | 'missing' | 'other'>('same', 'same', 'missing', 'other'),
      headerName: fc.constantFrom<'same' | 'base64' | 'missing' | 'other'>(
        'same',
        'base64',
        'missing',
        'other',
      ),
      id: rpcId,
    });
    let checked = 0;
    const found = await runCases(
      arb,
      async (c) => {
        const meta: Record<string, unknown> = {};
        if (c.metaVersion !== undefined) meta['io.modelcontextprotocol/protocolVersion'] = c.metaVersion;
        if (c.caps !== undefined) meta['io.modelcontextprotocol/clientCapabilities'] = c.caps;
        const uri = `workroom://channels/${fw.orgA.channel}`;
        const params: Record<string, unknown> =
          c.method === 'tools/call'
            ? { name: c.tool, arguments: c.tool === 'search' ? { query: 'x' } : {} }
            : c.method === 'resources/read'
              ? { uri }
              : {};
        params._meta = meta;
        const name = c.method === 'tools/call' ? c.tool : c.method === 'resources/read' ? uri : undefined;
        const headers: Record<string, string> = {
          authorization: `Bearer ${keys.all}`,
          'content-type': 'application/json',
          accept: ACCEPT_BOTH,
        };
        const hv = typeof c.metaVersion === 'string' ? c.metaVersion : MODERN;
        if (c.headerVersion === 'same') headers['mcp-protocol-version'] = hv;
        if (c.headerVersion === 'other') headers['mcp-protocol-version'] = '2099-12-31';
        if (c.headerVersion === 'legacy') headers['mcp-protocol-version'] = '2025-06-18';
        if (c.headerMethod === 'same') headers['mcp-method'] = c.method;
        if (c.headerMethod === 'other') headers['mcp-method'] = 'tools/list-x';
        if (name !== undefined && c.headerName === 'same')
          headers['mcp-name'] = /^[ -~]*$/.test(name) ? name : 'x';
        if (name !== undefined && c.headerName === 'base64')
          headers['mcp-name'] = `=?base64?${Buffer.from(name).toString('base64')}?=`;
        if (name !== undefined && c.headerName === 'other') headers['mcp-name'] = 'other_name';
        const res = await pool.request({
          method: 'POST',
          path: '/api/mcp',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: c.id, method: c.method, params }),
        });
        const text = await res.body.text();
        const where = `${preview(c)} → ${res.statusCode} ${text.slice(0, 300)}`;
        if (res.statusCode >= 500) return `5xx: ${where}`;
        if (res.headers['mcp-session-id'] !== undefined) return `a session id was minted: ${where}`;
        // Which era the server must pick: _meta with a version, or (no session) a non-legacy header.
        const modern =
          c.metaVersion !== undefined || (c.headerVersion !== 'missing' && c.headerVersion !== 'legacy');
        if (!modern) return undefined; // a legacy request without a session: the legacy rules (other tests)
        checked++;
        const body = JSON.parse(text) as { result?: Record<string, unknown>; error?: { code: number } };
        const caps = c.caps !== null && typeof c.caps === 'object' && !Array.isArray(c.caps);
        const nameOk = name === undefined || c.headerName === 'same' || c.headerName === 'base64';
        // The documented order (modern.ts, checkModern): the first failure is the answer.
        const expected: [number, number] | undefined =
          typeof c.metaVersion !== 'string'
            ? [400, -32602]
            : c.metaVersion !== MODERN
              ? [400, -32022]
              : c.headerVersion !== 'same'
                ? [400, -32020]
                : !caps
                  ? [400, -32602]
                  : c.headerMethod !== 'same' || !nameOk
                    ? [400, -32020]
                    : c.method === 'ping' || c.method === 'no/such'
                      ? [404, -32601]
                      : undefined;
        if (expected) {
          if (res.statusCode !== expected[0] || body.error?.code !== expected[1])
            return `expected ${expected[0]} ${expected[1]}: ${where}`;
          return undefined;
        }
        if (res.statusCode !== 200) return `expected 200: ${where}`;
        if (body.result && body.result.resultType !== 'complete') return `no resultType: ${where}`;
        if (
          body.error &&
          !(c.method === 'tools/call' && c.tool === 'no_such_tool' && body.error.code === -32602)
        )
          return `unexpected error: ${where}`;
        return rpcProblem(body);
      },
      { ...fuzzParameters(400), path: process.env.FUZZ_PATH },
    );
    expect(found, replayHint(FILE, PARAMS)).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });
});
