import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Agent grants and dry runs (issue 21; docs/API.md "Agent grants", docs/MCP.md "Grants"): every tool ×
 * every grant, on REST, on an MCP 2025-03-26 session and on MCP 2026-07-28 (stateless). A refused
 * call writes nothing and emits nothing; a dry run writes, emits and spends nothing.
 */

const MODERN = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'grants-test', version: '1' },
};
const TOOLS = [
  'send_message',
  'read_messages',
  'list_channels',
  'create_task',
  'update_task',
  'list_tasks',
  'search',
  'get_user_info',
  'list_users',
] as const;
type Tool = (typeof TOOLS)[number];
const WRITING = new Set<Tool>(['send_message', 'create_task', 'update_task']);
/** Tools that name a container (or a task in one) in their arguments. */
const IN_CONTAINER = new Set<Tool>([
  'send_message',
  'read_messages',
  'create_task',
  'update_task',
  'list_tasks',
]);
type Surface = 'rest' | 'mcp-2025-03-26' | 'mcp-2025-06-18' | 'mcp-2025-11-25' | 'mcp-2026-07-28';
/** REST, and every MCP version era: sessions of 2025-03-26, -06-18, -11-25, and stateless 2026-07-28. */
const SURFACES: Surface[] = ['rest', 'mcp-2025-03-26', 'mcp-2025-06-18', 'mcp-2025-11-25', 'mcp-2026-07-28'];

/** What a call came to, the same on every surface. */
interface Outcome {
  ok: boolean;
  /** REST status, or 200 for MCP. */
  status: number;
  /** The error code: REST error.code, MCP tool error's "(code)", or the JSON-RPC error code. */
  code?: string | number;
  grant?: string;
  body: any;
}

describe('agent grants and dry runs', () => {
  let srv: TestServer;
  let w: World;
  let botId: string;
  let assignee: UserHandle;
  let chanA: string;
  let chanB: string;
  let projectId: string;
  let topicId: string;
  let taskId: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    assignee = await w.user();
    const b = expectStatus(await w.admin.api.post('/api/bots', { name: uniq('agent') }), 201);
    botId = b.bot_id;
    chanA = await w.channel(w.admin.api);
    chanB = await w.channel(w.admin.api);
    for (const c of [chanA, chanB])
      expectStatus(await w.admin.api.post(`/api/channels/${c}/members`, { bot_id: botId }), 201);
    ({ projectId, topicId } = await w.project(w.admin.api));
    expectStatus(await w.admin.api.post(`/api/projects/${projectId}/members`, { bot_id: botId }), 201);
    taskId = expectStatus(await w.admin.api.post(`/api/topics/${topicId}/tasks`, { title: 'seed' }), 201).id;
  });
  afterAll(() => srv?.close());

  const keysPath = () => `/api/bots/${botId}/api-keys`;
  async function keyWith(grants: Record<string, unknown> | null): Promise<{ key: string; id: string }> {
    const k = expectStatus(await w.admin.api.post(keysPath(), { name: 'grants test', grants }), 201);
    return { key: k.key, id: k.id };
  }

  const args = (tool: Tool, marker: string): Record<string, unknown> =>
    ({
      send_message: { channel_id: chanA, content: `grants ${marker}` },
      read_messages: { channel_id: chanA },
      list_channels: {},
      create_task: { topic_id: topicId, title: `grants ${marker}` },
      update_task: { task_id: taskId, title: `grants ${marker}` },
      list_tasks: { topic_id: topicId },
      search: { query: 'grants' },
      get_user_info: { user_id: assignee.id },
      list_users: {},
    })[tool];

  async function rest(key: string, tool: Tool, a: Record<string, unknown>, dryRun = false) {
    const api = w.anon.as(key);
    const headers = dryRun ? { 'x-dry-run': 'true' } : undefined;
    const { channel_id, topic_id, task_id, user_id, ...rest } = a as Record<string, string>;
    let r: ApiResponse;
    switch (tool) {
      case 'send_message':
        r = await api.post(`/api/channels/${channel_id}/messages`, rest, { headers });
        break;
      case 'read_messages':
        r = await api.get(`/api/channels/${channel_id}/messages`);
        break;
      case 'list_channels':
        r = await api.get('/api/containers');
        break;
      case 'create_task':
        r = await api.post(`/api/topics/${topic_id}/tasks`, rest, { headers });
        break;
      case 'update_task':
        r = await api.patch(`/api/tasks/${task_id}`, rest, { headers });
        break;
      case 'list_tasks':
        r = await api.get(`/api/topics/${topic_id}/tasks`);
        break;
      case 'search':
        r = await api.get('/api/search', { query: rest as Record<string, string> });
        break;
      case 'get_user_info':
        r = await api.get(`/api/users/${user_id}`);
        break;
      case 'list_users':
        r = await api.get('/api/users');
        break;
    }
    const ok = r.status < 300;
    return {
      ok,
      status: r.status,
      code: ok ? undefined : r.body?.error?.code,
      grant: ok ? undefined : r.body?.error?.grant,
      body: r.body,
    } satisfies Outcome;
  }

  const sessions = new Map<string, string | undefined>();
  /** A session of a 2025-06-18+ client: initialize echoes the version; later requests carry the header. */
  async function session(key: string, version: string): Promise<string | undefined> {
    const r = await rawMcp(srv.url, {
      key,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: version,
          capabilities: {},
          clientInfo: { name: 'grants-test', version: '1' },
        },
      },
    });
    expect(r.body.result.protocolVersion).toBe(version);
    const id = r.headers.get('mcp-session-id') ?? undefined;
    await rawMcp(srv.url, {
      key,
      session: id,
      headers: { 'mcp-protocol-version': version },
      body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    return id;
  }
  async function mcp(
    surface: Exclude<Surface, 'rest'>,
    key: string,
    method: string,
    params: Record<string, unknown>,
  ): Promise<any> {
    if (surface !== 'mcp-2026-07-28') {
      const version = surface.slice(4);
      const sessionKey = `${surface} ${key}`;
      if (!sessions.has(sessionKey))
        sessions.set(
          sessionKey,
          version === '2025-03-26' ? await rawSession(srv.url, key) : await session(key, version),
        );
      const r = await rawMcp(srv.url, {
        key,
        session: sessions.get(sessionKey),
        headers: version === '2025-03-26' ? {} : { 'mcp-protocol-version': version },
        body: { jsonrpc: '2.0', id: 1, method, params },
      });
      expect(r.status, r.text).toBe(200);
      return r.body;
    }
    const name = typeof params.name === 'string' ? params.name : undefined;
    const r = await rawMcp(srv.url, {
      key,
      headers: {
        'mcp-protocol-version': MODERN,
        'mcp-method': method,
        ...(name ? { 'mcp-name': name } : {}),
      },
      body: { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } },
    });
    expect(r.status, r.text).toBe(200);
    return r.body;
  }

  async function call(
    surface: Surface,
    key: string,
    tool: Tool,
    a: Record<string, unknown>,
  ): Promise<Outcome> {
    if (surface === 'rest') return rest(key, tool, a);
    const body = await mcp(surface, key, 'tools/call', { name: tool, arguments: a });
    if (body.error) {
      return { ok: false, status: 200, code: body.error.code, grant: body.error.data?.grant, body };
    }
    const result = body.result;
    if (result.isError) {
      const text = result.content[0].text as string;
      return { ok: false, status: 200, code: /^Error \((\w+)\)/.exec(text)?.[1], body };
    }
    return { ok: true, status: 200, body };
  }

  async function listed(surface: Exclude<Surface, 'rest'>, key: string): Promise<string[]> {
    const body = await mcp(surface, key, 'tools/list', {});
    return (body.result.tools as { name: string }[]).map((t) => t.name);
  }

  /** What a call could have changed: the bot's own events, messages, tasks, idempotency records. */
  async function snapshot(): Promise<string> {
    const db = srv.app.services.storage.stores.db;
    const count = async (table: string, where = sql`1 = 1`) =>
      Number(
        (await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where ${where}`.execute(db))
          .rows[0]!.n,
      );
    const like = `%${botId}%`;
    const task = await srv.app.services.storage.stores.tasks.get(taskId);
    return JSON.stringify({
      events: await count(
        'events',
        sql`type in ('message.created', 'task.created', 'task.status_changed', 'task.assigned', 'task.updated') and data like ${like}`,
      ),
      messages: await count('messages', sql`bot_id = ${botId}`),
      tasks: await count('tasks'),
      idempotency: await count('idempotency_keys'),
      task: [task?.title, task?.status, task?.updated_at],
    });
  }

  /** The call is refused as expected, and changed nothing. */
  async function expectRefused(
    surface: Surface,
    key: string,
    tool: Tool,
    expected: { rest: [number, string, string?]; mcp: [string | number, string?] },
  ): Promise<void> {
    const before = await snapshot();
    const o = await call(surface, key, tool, args(tool, uniq('refused')));
    const what = `${surface} ${tool} ${JSON.stringify(o.body)}`;
    expect(o.ok, what).toBe(false);
    if (surface === 'rest') {
      expect([o.status, o.code], what).toEqual(expected.rest.slice(0, 2));
      if (expected.rest[2]) expect(o.grant, what).toBe(expected.rest[2]);
    } else {
      expect(o.code, what).toBe(expected.mcp[0]);
      if (expected.mcp[1]) expect(o.grant, what).toBe(expected.mcp[1]);
    }
    expect(await snapshot(), what).toBe(before);
  }

  it('grants are set on issue and PATCH, shown on the key list, validated, and audited', async () => {
    const k = expectStatus(
      await w.admin.api.post(keysPath(), {
        grants: {
          tools: ['send_message', 'read_messages', 'send_message'],
          read_only: false,
          containers: [chanA, topicId],
          writes_per_hour: 10,
          approval: ['send_message'],
          mentions_all: false,
        },
      }),
      201,
    );
    expect(k.grants).toEqual({
      tools: ['send_message', 'read_messages'],
      read_only: false,
      containers: [chanA, topicId],
      writes_per_hour: 10,
      approval: ['send_message'],
      mentions_all: false,
    });
    const listed = expectStatus(await w.admin.api.get(keysPath()), 200).items as any[];
    expect(listed.find((x) => x.id === k.id).grants).toEqual(k.grants);

    const patched = expectStatus(
      await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: { read_only: true } }),
      200,
    );
    expect(patched.grants).toEqual({ read_only: true });
    const cleared = expectStatus(await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: null }), 200);
    expect(cleared.grants).toBeNull();
    // A key issued without grants shows null.
    const plain = expectStatus(await w.admin.api.post(keysPath(), {}), 201);
    expect(plain.grants).toBeNull();

    // Bad input names the field.
    const bad = await w.admin.api.post(keysPath(), { grants: { tools: ['send_message', 'drop_tables'] } });
    expect([bad.status, bad.body.error.code, bad.body.error.field]).toEqual([
      400,
      'invalid_input',
      'grants.tools.1',
    ]);
    const outside = await w.admin.api.post(keysPath(), { grants: { containers: [crypto.randomUUID()] } });
    expect([outside.status, outside.body.error.field]).toEqual([400, 'grants.containers.0']);
    const notMember = await w.admin.api.patch(`${keysPath()}/${k.id}`, {
      grants: { containers: [await w.channel(w.admin.api)] },
    });
    expect([notMember.status, notMember.body.error.field]).toEqual([400, 'grants.containers.0']);
    const budget = await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: { writes_per_hour: 0 } });
    expect([budget.status, budget.body.error.field]).toEqual([400, 'grants.writes_per_hour']);
    const unknown = await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: { admin: true } });
    expect([unknown.status, unknown.body.error.field]).toEqual([400, 'grants.admin']);

    // Another organization's admin, a key of another bot, a bot key itself: not found / forbidden.
    const other = await w.org();
    expect((await other.admin.api.patch(`${keysPath()}/${k.id}`, { grants: null })).status).toBe(404);
    const otherBot = await w.bot(w.admin.api);
    expect(
      (await w.admin.api.patch(`/api/bots/${otherBot.id}/api-keys/${k.id}`, { grants: null })).status,
    ).toBe(404);
    expect((await w.anon.as(k.key).patch(`${keysPath()}/${k.id}`, { grants: null })).status).toBe(403);

    // Audited: who, before and after.
    await expect
      .poll(async () => {
        const calls = expectStatus(
          await w.admin.api.get(`/api/bots/${botId}/tool-calls?tool=grants.set`),
          200,
        ).items as any[];
        return calls
          .filter((c) => c.key_id === k.id)
          .map((c) => [c.detail.before, c.detail.after, c.detail.by]);
      })
      .toEqual([
        [{ read_only: true }, null, w.admin.id],
        [k.grants, { read_only: true }, w.admin.id],
        [null, k.grants, w.admin.id],
      ]);
  });

  describe.each(SURFACES)('%s', (surface) => {
    it.each(TOOLS)('%s: allowed when granted; hidden and refused when not', async (tool) => {
      const allowed = await keyWith({ tools: [tool] });
      const o = await call(surface, allowed.key, tool, args(tool, uniq('allowed')));
      expect(o.ok, JSON.stringify(o.body)).toBe(true);
      const other = TOOLS.find((t) => t !== tool)!;
      const hidden = await keyWith({ tools: [other] });
      if (surface !== 'rest') {
        expect(await listed(surface, allowed.key)).toEqual([tool]);
        expect(await listed(surface, hidden.key)).toEqual([other]);
      }
      await expectRefused(surface, hidden.key, tool, {
        rest: [403, 'grant_denied', 'tools'],
        mcp: [-32004, 'tools'],
      });
    });

    it.each(TOOLS)('%s under read_only', async (tool) => {
      const k = await keyWith({ read_only: true });
      if (surface !== 'rest') {
        expect(await listed(surface, k.key)).toEqual(TOOLS.filter((t) => !WRITING.has(t)));
      }
      if (WRITING.has(tool)) {
        await expectRefused(surface, k.key, tool, {
          rest: [403, 'grant_denied', 'read_only'],
          mcp: [-32004, 'read_only'],
        });
      } else {
        const o = await call(surface, k.key, tool, args(tool, 'ro'));
        expect(o.ok, JSON.stringify(o.body)).toBe(true);
      }
    });

    it.each(TOOLS)('%s with a container outside the grant', async (tool) => {
      const k = await keyWith({ containers: [chanB] });
      if (IN_CONTAINER.has(tool)) {
        await expectRefused(surface, k.key, tool, { rest: [404, 'not_found'], mcp: ['not_found'] });
      } else {
        const o = await call(surface, k.key, tool, args(tool, 'outside'));
        expect(o.ok, JSON.stringify(o.body)).toBe(true);
        if (tool === 'list_channels') {
          const body = surface === 'rest' ? o.body : o.body.result.structuredContent;
          const text = JSON.stringify(o.body);
          expect(text).toContain(chanB);
          expect(text).not.toContain(chanA);
          expect(text).not.toContain(topicId);
          if (body) expect(body.channels.map((c: { id: string }) => c.id)).toEqual([chanB]);
        }
      }
      // Inside the grant (the topic through its project) the same call works.
      const inside = await keyWith({ containers: [chanA, projectId] });
      const o = await call(surface, inside.key, tool, args(tool, uniq('inside')));
      expect(o.ok, JSON.stringify(o.body)).toBe(true);
    });

    it.each(TOOLS)('%s with the write budget spent', async (tool) => {
      const k = await keyWith({ writes_per_hour: 1 });
      const first = await call(surface, k.key, tool, args(tool, uniq('budget')));
      expect(first.ok, JSON.stringify(first.body)).toBe(true);
      if (WRITING.has(tool)) {
        await expectRefused(surface, k.key, tool, {
          rest: [429, 'write_budget_exceeded', 'writes_per_hour'],
          mcp: ['write_budget_exceeded'],
        });
        if (surface === 'rest') expect(await retryAfter(k.key, tool)).toBeGreaterThan(0);
      } else {
        const again = await call(surface, k.key, tool, args(tool, 'again'));
        expect(again.ok).toBe(true);
      }
    });

    it.each(TOOLS)('%s when it needs approval: held as a pending action, nothing done', async (tool) => {
      // (approval.test.ts: the approval, the execution exactly once, reject, expiry.)
      const k = await keyWith({ approval: [tool] });
      const before = await snapshot();
      const o = await call(surface, k.key, tool, args(tool, uniq('held')));
      const what = `${surface} ${tool} ${JSON.stringify(o.body)}`;
      expect(o.ok, what).toBe(true);
      if (surface === 'rest') expect([o.status, o.body.status], what).toEqual([202, 'pending_approval']);
      else expect(o.body.result._meta['workroom/pending_action'].status, what).toBe('pending');
      expect(await snapshot(), what).toBe(before);
    });

    it.each([...WRITING])(
      '%s dry run: writes, emits and spends nothing; reports what would happen',
      async (tool) => {
        const k = await keyWith({ writes_per_hour: 1, approval: [] });
        const before = await snapshot();
        for (let i = 0; i < 3; i++) {
          const marker = uniq('dry');
          const a = args(tool, marker);
          let report: any;
          if (surface === 'rest') {
            const r = await rest(k.key, tool, a, true);
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            report = r.body;
          } else {
            const body = await mcp(surface, k.key, 'tools/call', {
              name: tool,
              arguments: { ...a, dry_run: true },
            });
            expect(body.result?.isError, JSON.stringify(body)).toBeFalsy();
            expect(body.result.content[0].text).toMatch(/^DRY RUN/);
            report = body.result._meta['workroom/dry_run'];
          }
          expect(report).toMatchObject({ dry_run: true, approval_required: false });
          expect(report.events).toEqual(
            tool === 'send_message' ? ['message.created'] : tool === 'create_task' ? ['task.created'] : [],
          );
          if (tool === 'send_message') {
            expect(report.target).toEqual({ channel_id: chanA });
            expect(report.result.content).toBe(`grants ${marker}`);
          } else expect(report.result.title).toBe(`grants ${marker}`);
        }
        expect(await snapshot()).toBe(before);
        // What readers see (through the server's read paths and caches) holds none of it either.
        const seen = JSON.stringify([
          expectStatus(await w.admin.api.get(`/api/channels/${chanA}/messages`), 200),
          expectStatus(await w.admin.api.get(`/api/topics/${topicId}/tasks`), 200),
        ]);
        expect(seen).not.toContain('grants dry-');
        // The budget is whole: the real call goes through, then the next is refused.
        const real = await call(surface, k.key, tool, args(tool, uniq('real')));
        expect(real.ok, JSON.stringify(real.body)).toBe(true);
        const over = await call(surface, k.key, tool, args(tool, uniq('over')));
        expect(over.code).toBe('write_budget_exceeded');
        // A dry run of a spent budget says so too, and of a read-only key is refused.
        const dry = surface === 'rest' ? await rest(k.key, tool, args(tool, 'x'), true) : undefined;
        if (dry) expect([dry.status, dry.code]).toEqual([429, 'write_budget_exceeded']);
        const ro = await keyWith({ read_only: true });
        await expectRefused(surface, ro.key, tool, {
          rest: [403, 'grant_denied', 'read_only'],
          mcp: [-32004, 'read_only'],
        });
      },
    );

    it('a dry run of a tool that needs approval reports it and holds nothing', async () => {
      const k = await keyWith({ approval: ['send_message'] });
      const a = args('send_message', uniq('approval'));
      const before = await snapshot();
      if (surface === 'rest') {
        const r = await rest(k.key, 'send_message', a, true);
        expect(r.status).toBe(200);
        expect(r.body.approval_required).toBe(true);
      } else {
        const body = await mcp(surface, k.key, 'tools/call', {
          name: 'send_message',
          arguments: { ...a, dry_run: true },
        });
        expect(body.result._meta['workroom/dry_run'].approval_required).toBe(true);
        expect(body.result.content[0].text).toContain('needs approval');
      }
      expect(await snapshot()).toBe(before);
    });
  });

  async function retryAfter(key: string, tool: Tool): Promise<number> {
    const a = args(tool, 'retry');
    const api = w.anon.as(key);
    const r =
      tool === 'send_message'
        ? await api.post(`/api/channels/${a.channel_id as string}/messages`, { content: a.content })
        : tool === 'create_task'
          ? await api.post(`/api/topics/${a.topic_id as string}/tasks`, { title: a.title })
          : await api.patch(`/api/tasks/${a.task_id as string}`, { title: a.title });
    expect(r.status).toBe(429);
    return Number(r.headers.get('retry-after'));
  }

  it('a PATCH applies from the next request, also inside an open MCP session', async () => {
    const k = await keyWith(null);
    expect(await listed('mcp-2025-03-26', k.key)).toHaveLength(9);
    expectStatus(await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: { tools: ['search'] } }), 200);
    expect(await listed('mcp-2025-03-26', k.key)).toEqual(['search']);
    const o = await call('mcp-2025-03-26', k.key, 'list_users', {});
    expect([o.code, o.grant]).toEqual([-32004, 'tools']);
    expectStatus(await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: null }), 200);
    expect(await listed('mcp-2025-03-26', k.key)).toHaveLength(9);
    // A revoked key's grants cannot change.
    expectStatus(await w.admin.api.delete(`${keysPath()}/${k.id}`), 200);
    expect((await w.admin.api.patch(`${keysPath()}/${k.id}`, { grants: null })).status).toBe(409);
  });

  it('scopes still apply under grants; another organization stays not found with grants', async () => {
    const scoped = expectStatus(
      await w.admin.api.post(keysPath(), {
        scopes: ['messages:read'],
        grants: { tools: ['send_message', 'read_messages'] },
      }),
      201,
    );
    const before = await snapshot();
    const o = await call('mcp-2026-07-28', scoped.key, 'send_message', args('send_message', 'scope'));
    expect(o.code).toBe(-32003);
    const r = await rest(scoped.key, 'send_message', args('send_message', 'scope'));
    expect([r.status, r.code]).toEqual([403, 'insufficient_scope']);
    expect(await snapshot()).toBe(before);
    expect((await call('mcp-2026-07-28', scoped.key, 'read_messages', { channel_id: chanA })).ok).toBe(true);

    // A bot of another organization, granted its own channel: this organization's containers are not found.
    const other = await w.org();
    const ob = expectStatus(await other.admin.api.post('/api/bots', { name: uniq('other') }), 201);
    const oc = await w.channel(other.admin.api);
    expectStatus(await other.admin.api.post(`/api/channels/${oc}/members`, { bot_id: ob.bot_id }), 201);
    const ok = expectStatus(
      await other.admin.api.post(`/api/bots/${ob.bot_id}/api-keys`, { grants: { containers: [oc] } }),
      201,
    );
    // It cannot name them in a grant either (400, as any container the bot is not in).
    const foreign = await other.admin.api.patch(`/api/bots/${ob.bot_id}/api-keys/${ok.id}`, {
      grants: { containers: [chanA] },
    });
    expect([foreign.status, foreign.body.error.field]).toEqual([400, 'grants.containers.0']);
    for (const tool of IN_CONTAINER) {
      const before2 = await snapshot();
      const x = await call('mcp-2026-07-28', ok.key, tool, args(tool, 'foreign'));
      expect(x.code, tool).toBe('not_found');
      const y = await rest(ok.key, tool, args(tool, 'foreign'));
      expect([y.status, y.code], tool).toEqual([404, 'not_found']);
      expect(await snapshot()).toBe(before2);
    }
    // A dry run of another organization's container is as not found as the real call.
    const dry = await rest(ok.key, 'send_message', args('send_message', 'foreign'), true);
    expect([dry.status, dry.code]).toEqual([404, 'not_found']);
  });

  it('mentions_all: false refuses @all and @here on REST and MCP; other text passes', async () => {
    const k = await keyWith({ mentions_all: false });
    const before = await snapshot();
    const r = await w.anon.as(k.key).post(`/api/channels/${chanA}/messages`, { content: 'hey @all look' });
    expect([r.status, r.body.error.code, r.body.error.grant]).toEqual([403, 'grant_denied', 'mentions_all']);
    const m = await call('mcp-2026-07-28', k.key, 'send_message', {
      channel_id: chanA,
      content: '@here now',
    });
    expect(m.code).toBe('grant_denied');
    expect(await snapshot()).toBe(before);
    const fine = await w.anon
      .as(k.key)
      .post(`/api/channels/${chanA}/messages`, { content: 'mail me at a@all.io' });
    expect(fine.status).toBe(201);
  });

  it('REST writes beyond the tools: a read_only key cannot write anywhere; a tools key runs only its tools', async () => {
    const ro = await keyWith({ read_only: true });
    const api = w.anon.as(ro.key);
    const msg = expectStatus(
      await w.anon.as((await keyWith(null)).key).post(`/api/channels/${chanA}/messages`, { content: 'mine' }),
      201,
    );
    for (const r of [
      await api.post(`/api/messages/${msg.id}/reactions`, { emoji: '👍' }),
      await api.delete(`/api/messages/${msg.id}`),
      await api.post(`/api/bots/${botId}/dm-messages`, { user_id: assignee.id, content: 'hi' }),
    ])
      expect([r.status, r.body?.error?.code]).toEqual([403, 'grant_denied']);
    expect((await api.post('/api/bots/auth', {})).status).toBe(200);
    const toolsOnly = w.anon.as((await keyWith({ tools: ['send_message'] })).key);
    const ch = await toolsOnly.get(`/api/channels/${chanA}`);
    expect([ch.status, ch.body.error.grant]).toEqual([403, 'tools']);
  });

  it('the audit records refused calls with their grant and dry runs', async () => {
    const k = await keyWith({ read_only: true, approval: ['list_users'] });
    await call('mcp-2026-07-28', k.key, 'send_message', args('send_message', 'audit'));
    await call('mcp-2026-07-28', k.key, 'list_users', {});
    await call('rest', k.key, 'create_task', args('create_task', 'audit'));
    const free = await keyWith({ writes_per_hour: 5 });
    await mcp('mcp-2026-07-28', free.key, 'tools/call', {
      name: 'send_message',
      arguments: { ...args('send_message', 'audit'), dry_run: true },
    });
    await expect
      .poll(async () => {
        const items = expectStatus(await w.admin.api.get(`/api/bots/${botId}/tool-calls?limit=500`), 200)
          .items as any[];
        return items
          .filter((c) => (c.key_id === k.id || c.key_id === free.id) && c.tool !== 'grants.set')
          .map((c) => [c.tool, c.error_code, c.detail]);
      })
      // In any order: MCP calls are audited in batches, REST refusals at once.
      .toEqual(
        expect.arrayContaining([
          ['send_message', 'grant_denied', { decision: 'refused', grant: 'read_only' }],
          ['list_users', 'pending_approval', { decision: 'pending_approval', grant: 'approval' }],
          ['tasks.create', 'grant_denied', { surface: 'rest', decision: 'refused', grant: 'read_only' }],
          ['send_message', null, { decision: 'allowed', dry_run: true }],
        ]),
      );
    const audited = expectStatus(await w.admin.api.get(`/api/bots/${botId}/tool-calls?limit=500`), 200)
      .items as any[];
    expect(
      audited.filter((c) => (c.key_id === k.id || c.key_id === free.id) && c.tool !== 'grants.set'),
    ).toHaveLength(4);
  });
});
