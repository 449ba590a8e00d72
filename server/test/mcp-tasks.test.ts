import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WITHDRAWN } from '../src/operations/approvals/pending-actions.js';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession, withSdkClient } from './helpers/mcp.js';
import { waitFor } from './helpers/platform-bots.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * MCP Tasks for calls held for approval (issue 21 point 3; docs/MCP.md "Approval"): a task-augmented
 * tools/call of a tool in the key's `approval` grant answers a CreateTaskResult whose taskId is the
 * pending action; tasks/get, tasks/result (waits for the decision), tasks/list, tasks/cancel (the agent
 * withdraws) — on a 2025-11-25 session and on 2026-07-28 requests declaring the
 * io.modelcontextprotocol/tasks extension. Only the key that made the call sees its tasks.
 */

const MODERN = '2026-07-28';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const RELATED = 'io.modelcontextprotocol/related-task';
const metaWith = (caps: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '1' },
});

type Rpc = (method: string, params?: Record<string, unknown>) => Promise<any>;

describe('MCP tasks for calls held for approval', () => {
  const clock = new TestClock();
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let chan: string;
  let key: string;
  let keyId: string;
  let initResult: any;
  /** A 2025-11-25 session of the approval key. */
  let rpc: Rpc;
  let rpcSession: string | undefined;

  /** Opens a 2025-11-25 session for `k`; answers its request function (and the initialize result). */
  async function session2025(k: string): Promise<{ call: Rpc; init: any; session: string | undefined }> {
    const init = await rawMcp(srv.url, {
      key: k,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      },
    });
    expect(init.status).toBe(200);
    const session = init.headers.get('mcp-session-id') ?? undefined;
    const headers = { 'mcp-protocol-version': '2025-11-25' };
    await rawMcp(srv.url, {
      key: k,
      session,
      headers,
      body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    let id = 1;
    const call: Rpc = async (method, params) =>
      (
        await rawMcp(srv.url, {
          key: k,
          session,
          headers,
          body: { jsonrpc: '2.0', id: id++, method, params },
        })
      ).body;
    return { call, init: init.body.result, session };
  }

  /** A 2026-07-28 request of `k` with these client capabilities. */
  const modern =
    (k: string, caps: Record<string, unknown>): Rpc =>
    async (method, params = {}) =>
      (
        await rawMcp(srv.url, {
          key: k,
          headers: {
            'mcp-protocol-version': MODERN,
            'mcp-method': method,
            ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
          },
          body: { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: metaWith(caps) } },
        })
      ).body;

  beforeAll(async () => {
    srv = await startTestServer({}, { clock });
    w = await World.create(srv.url);
    const org = await w.org();
    owner = org.admin;
    chan = await w.channel(owner.api);
    const b = await w.bot(owner.api, { grants: { approval: ['send_message', 'create_task'] } });
    expectStatus(await owner.api.post(`/api/channels/${chan}/members`, { bot_id: b.id }), 201);
    key = b.key;
    keyId = b.keyId;
    const s = await session2025(key);
    rpc = s.call;
    rpcSession = s.session;
    initResult = s.init;
  });
  afterAll(() => srv?.close());

  const channelMessages = async (content: string) =>
    expectStatus(await owner.api.get(`/api/channels/${chan}/messages`), 200).items.filter(
      (m: any) => m.content === content,
    );
  const send = (call: Rpc, content: string, task: unknown = {}) =>
    call('tools/call', { name: 'send_message', arguments: { channel_id: chan, content }, task });
  const botView = async (id: string) =>
    expectStatus(await w.anon.as(key).get(`/api/bots/me/pending-actions/${id}`), 200);

  it('2025-11-25: the capability, taskSupport only on held tools, and a held call that answers its task', async () => {
    expect(initResult.capabilities.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const tools = (await rpc('tools/list')).result.tools;
    const supporting = tools
      .filter((t: any) => t.execution?.taskSupport === 'optional')
      .map((t: any) => t.name);
    expect(supporting.sort()).toEqual(['create_task', 'send_message']);

    const content = uniq('task me');
    const created = (await send(rpc, content, { ttl: 60_000 })).result;
    const task = created.task;
    expect(task).toMatchObject({ status: 'working', ttl: null, pollInterval: 5000 });
    expect(task.statusMessage).toContain('Waiting for approval');
    expect(task.createdAt).toBe(task.lastUpdatedAt);
    expect(created.content).toBeUndefined();
    expect(await channelMessages(content)).toHaveLength(0);
    // The task is the pending action.
    expect((await botView(task.taskId)).status).toBe('pending');
    const got = (await rpc('tasks/get', { taskId: task.taskId })).result;
    expect(got).toMatchObject({ taskId: task.taskId, status: 'working' });
    const listed = (await rpc('tasks/list')).result.tasks.map((t: any) => t.taskId);
    expect(listed).toContain(task.taskId);

    // tasks/result waits for the decision; the owner approves through REST.
    const waiting = rpc('tasks/result', { taskId: task.taskId });
    expectStatus(await owner.api.post(`/api/pending-actions/${task.taskId}/approve`, {}), 200);
    const result = (await waiting).result;
    expect(result.isError).toBeUndefined();
    expect(result._meta[RELATED]).toEqual({ taskId: task.taskId });
    expect(result.structuredContent).toMatchObject({ content, channel_id: chan });
    expect(result.content[0].text).toContain(result.structuredContent.id);
    expect(await channelMessages(content)).toHaveLength(1);
    const done = (await rpc('tasks/get', { taskId: task.taskId })).result;
    expect(done.status).toBe('completed');
    expect(done.statusMessage).toContain('Approved by');
    expect(done.pollInterval).toBeUndefined();
    // Asked again once terminal, it answers at once.
    expect((await rpc('tasks/result', { taskId: task.taskId })).result.structuredContent.id).toBe(
      result.structuredContent.id,
    );
  });

  it('a call without task answers as before; a tool not held ignores task', async () => {
    const content = uniq('no task');
    const r = (await rpc('tools/call', { name: 'send_message', arguments: { channel_id: chan, content } }))
      .result;
    expect(r.task).toBeUndefined();
    expect(r.content[0].text).toContain('PENDING APPROVAL');
    expect(r.structuredContent.status).toBe('pending_approval');
    const read = (await rpc('tools/call', { name: 'list_channels', arguments: {}, task: {} })).result;
    expect(read.task).toBeUndefined();
    expect(read.isError).toBeUndefined();
  });

  it('reject: tasks/result answers an error result, the task failed', async () => {
    const content = uniq('reject me');
    const { taskId } = (await send(rpc, content)).result.task;
    const waiting = rpc('tasks/result', { taskId });
    expectStatus(await owner.api.post(`/api/pending-actions/${taskId}/reject`, {}), 200);
    const result = (await waiting).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('Rejected by');
    expect(result._meta[RELATED]).toEqual({ taskId });
    expect((await rpc('tasks/get', { taskId })).result.status).toBe('failed');
    expect(await channelMessages(content)).toHaveLength(0);
    // A decided task cannot be cancelled.
    const again = await rpc('tasks/cancel', { taskId });
    expect(again.error.code).toBe(-32602);
    expect(again.error.message).toContain('failed');
  });

  it('cancel: the agent withdraws a pending call; sticky; approving it afterwards is a conflict', async () => {
    const content = uniq('cancel me');
    const { taskId } = (await send(rpc, content)).result.task;
    const waiting = rpc('tasks/result', { taskId });
    const cancelled = (await rpc('tasks/cancel', { taskId })).result;
    expect(cancelled).toMatchObject({ taskId, status: 'cancelled' });
    const result = (await waiting).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('Cancelled');
    const view = await botView(taskId);
    expect(view).toMatchObject({ status: 'rejected', decided_by: null, error: WITHDRAWN });
    expect((await rpc('tasks/cancel', { taskId })).error.code).toBe(-32602);
    expect(
      expectStatus(await owner.api.post(`/api/pending-actions/${taskId}/approve`, {}), 409).error.code,
    ).toBe('conflict');
    expect((await rpc('tasks/get', { taskId })).result.status).toBe('cancelled');
    expect(await channelMessages(content)).toHaveLength(0);
  });

  it('bad input, and another key’s or organization’s task looks like no task', async () => {
    const { taskId } = (await send(rpc, uniq('mine'))).result.task;
    expect((await rpc('tasks/get', {})).error.code).toBe(-32602);
    expect((await rpc('tasks/get', { taskId: 42 })).error.code).toBe(-32602);
    expect((await rpc('tasks/get', { taskId: 'nope' })).error.code).toBe(-32602);
    expect((await rpc('tasks/get', { taskId: crypto.randomUUID() })).error.code).toBe(-32602);
    expect((await rpc('tasks/list', { cursor: 'garbage' })).error.code).toBe(-32602);
    expect((await send(rpc, 'x', 'soon')).error.code).toBe(-32602);
    expect((await send(rpc, 'x', { ttl: 'long' })).error.code).toBe(-32602);

    // Another key of the same organization, with approval too; a bot of another organization.
    const sibling = await w.bot(owner.api, { grants: { approval: ['send_message'] } });
    const foreign = await w.bot((await w.org()).admin.api, { grants: { approval: ['send_message'] } });
    for (const other of [sibling, foreign]) {
      const s = (await session2025(other.key)).call;
      for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
        const r = await s(method, { taskId });
        expect(r.error.code, method).toBe(-32602);
        expect(r.error.message).toContain('no task');
      }
      expect((await s('tasks/list')).result.tasks).toEqual([]);
    }
    expect((await rpc('tasks/get', { taskId })).result.status).toBe('working');
    expect(keyId).toBeTruthy();
  });

  it('tasks/list pages newest first with a cursor', async () => {
    const b = await w.bot(owner.api, { grants: { approval: ['send_message'] } });
    expectStatus(await owner.api.post(`/api/channels/${chan}/members`, { bot_id: b.id }), 201);
    const s = (await session2025(b.key)).call;
    const ids: string[] = [];
    for (let i = 0; i < 52; i++) {
      const r = await s('tools/call', {
        name: 'send_message',
        arguments: { channel_id: chan, content: `page ${i}` },
        task: {},
      });
      ids.push(r.result.task.taskId);
    }
    const first = (await s('tasks/list')).result;
    expect(first.tasks).toHaveLength(50);
    expect(first.nextCursor).toBeTypeOf('string');
    const second = (await s('tasks/list', { cursor: first.nextCursor })).result;
    expect(second.nextCursor).toBeUndefined();
    const all = [...first.tasks, ...second.tasks].map((t: any) => t.taskId);
    expect(new Set(all)).toEqual(new Set(ids));
    expect(all).toHaveLength(52);
  });

  it('older versions: no tasks capability, no taskSupport, task ignored, tasks/* not found', async () => {
    const session = await rawSession(srv.url, key);
    const call: Rpc = async (method, params) =>
      (await rawMcp(srv.url, { key, session, body: { jsonrpc: '2.0', id: 1, method, params } })).body;
    const tools = (await call('tools/list')).result.tools;
    expect(tools.some((t: any) => t.execution)).toBe(false);
    const r = (await send(call, uniq('old'))).result;
    expect(r.task).toBeUndefined();
    expect(r.content[0].text).toContain('PENDING APPROVAL');
    expect((await call('tasks/get', { taskId: r._meta['workroom/pending_action'].id })).error.code).toBe(
      -32601,
    );
  });

  it('2026-07-28: discover names the extension; a request declaring it gets a task, one without does not', async () => {
    const withExt = modern(key, { extensions: { [TASKS_EXT]: {} } });
    const without = modern(key, {});
    const discover = (await without('server/discover')).result;
    expect(discover.capabilities.extensions[TASKS_EXT]).toBeDefined();
    const tools = (await withExt('tools/list')).result.tools;
    expect(tools.find((t: any) => t.name === 'send_message').execution).toEqual({ taskSupport: 'optional' });
    expect(tools.find((t: any) => t.name === 'list_channels').execution).toBeUndefined();

    const plain = (await send(without, uniq('modern plain'))).result;
    expect(plain.task).toBeUndefined();
    expect(plain.structuredContent.status).toBe('pending_approval');

    const content = uniq('modern task');
    const created = (await send(withExt, content)).result;
    expect(created.resultType).toBe('complete');
    const { taskId } = created.task;
    expect(created.task.status).toBe('working');
    const waiting = withExt('tasks/result', { taskId });
    expectStatus(await owner.api.post(`/api/pending-actions/${taskId}/approve`, {}), 200);
    const result = (await waiting).result;
    expect(result.structuredContent).toMatchObject({ content });
    expect(result._meta[RELATED]).toEqual({ taskId });
    expect((await withExt('tasks/get', { taskId })).result.status).toBe('completed');
    expect((await withExt('tasks/list')).result.tasks.map((t: any) => t.taskId)).toContain(taskId);
    expect((await withExt('tasks/get', { taskId: crypto.randomUUID() })).error.code).toBe(-32602);
    expect(await channelMessages(content)).toHaveLength(1);
  });

  it('a key without approval: no taskSupport anywhere, its task calls run as usual', async () => {
    const plain = await w.bot(owner.api, { grants: { read_only: false } });
    expectStatus(await owner.api.post(`/api/channels/${chan}/members`, { bot_id: plain.id }), 201);
    const s = (await session2025(plain.key)).call;
    expect((await s('tools/list')).result.tools.some((t: any) => t.execution)).toBe(false);
    const m = modern(plain.key, { extensions: { [TASKS_EXT]: {} } });
    expect((await m('tools/list')).result.tools.some((t: any) => t.execution)).toBe(false);
    const content = uniq('runs now');
    const r = (await send(s, content)).result;
    expect(r.task).toBeUndefined();
    expect(r.structuredContent).toMatchObject({ content });
    expect(await channelMessages(content)).toHaveLength(1);
    expect((await s('tasks/list')).result.tasks).toEqual([]);
  });
  it('the official SDK 1.x client: callToolStream makes the held call a task and yields the approved result', async () => {
    const content = uniq('sdk task');
    await withSdkClient(srv.url, key, async (client) => {
      expect(client.getServerCapabilities()?.tasks).toBeDefined();
      await client.listTools(); // the client learns which tools support tasks
      const seen: string[] = [];
      let result: any;
      for await (const m of client.experimental.tasks.callToolStream({
        name: 'send_message',
        arguments: { channel_id: chan, content },
      })) {
        seen.push(m.type);
        if (m.type === 'taskCreated') {
          expect(await channelMessages(content)).toHaveLength(0);
          expectStatus(await owner.api.post(`/api/pending-actions/${m.task.taskId}/approve`, {}), 200);
        }
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      expect(seen[0]).toBe('taskCreated');
      expect(seen.at(-1)).toBe('result');
      expect(result.structuredContent).toMatchObject({ content, channel_id: chan });
    });
    expect(await channelMessages(content)).toHaveLength(1);
  });
  it('tasks/result answers -32000 "still working" when nobody decides within its wait (50 s)', async () => {
    const { taskId } = (await send(rpc, uniq('slow'))).result.task;
    let answer: any;
    void rpc('tasks/result', { taskId }).then((r) => (answer = r));
    // The server's clock moves on until the wait gives up (its timers are on that clock).
    const r = await waitFor('tasks/result to give up', async () => {
      clock.advance(5_001);
      return answer;
    });
    expect(r.error.code).toBe(-32000);
    expect(r.error.message).toContain('still working');
    expect(r.error.data).toEqual({ taskId, status: 'working' });
    const task = (await rpc('tasks/get', { taskId })).result;
    expect(task.status).toBe('working');
    expect(task.statusMessage).toContain(
      `Waiting for approval by ${owner.email.split('@')[0]} or an organization admin, until`,
    );
  });

  it('a waiting tasks/result stops waiting when its client goes away', async () => {
    const { taskId } = (await send(rpc, uniq('gone'))).result.task;
    const before = clock.pending;
    const ac = new AbortController();
    const waiting = fetch(new URL('/api/mcp', srv.url), {
      method: 'POST',
      signal: ac.signal,
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'mcp-session-id': rpcSession!,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tasks/result', params: { taskId } }),
    }).catch(() => undefined);
    // The wait polls on the server's clock: one timer more while it waits, gone once it stopped.
    const during = await waitFor('tasks/result to wait', async () =>
      clock.pending > before ? clock.pending : undefined,
    );
    ac.abort();
    await waiting;
    // Within 3 s: the wait re-reads the store every 5 s (POLL_MS, a real timer too), which would also
    // drop its timer for a moment.
    await waitFor('the wait to stop', async () => clock.pending < during, 3_000);
  });

  // Last: it moves the clock a day on.
  it('a task nobody decided in 24 h has failed (expired); it can no longer be cancelled', async () => {
    const content = uniq('expire me');
    const { taskId } = (await send(rpc, content)).result.task;
    clock.advance(24 * 3_600_000 + 60_000);
    const task = (await rpc('tasks/get', { taskId })).result;
    expect(task.status).toBe('failed');
    expect(task.statusMessage).toContain('Expired');
    const result = (await rpc('tasks/result', { taskId })).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('Expired');
    expect((await rpc('tasks/cancel', { taskId })).error.code).toBe(-32602);
    expect(await channelMessages(content)).toHaveLength(0);
  });
});

/**
 * Two instances on one PostgreSQL database: the task is made on one, tasks/result waits on the other,
 * and the approval through the first ends that wait (the outbox's committed events, or the store poll).
 */
describe.skipIf(!process.env.DATABASE_URL)('MCP tasks across two instances', () => {
  let a: TestServer;
  let b: TestServer;
  const encryptionKey = randomBytes(32).toString('base64');
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('tasks/result on instance B answers the call approved on instance A', async () => {
    a = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey });
    b = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey, ...sameDatabaseAs(a) });
    const w = await World.create(a.url);
    const org = await w.org();
    const channel = await w.channel(org.admin.api);
    const bot = await w.bot(org.admin.api, { grants: { approval: ['send_message'] } });
    expectStatus(await org.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const on = (url: string) => async (method: string, params: Record<string, unknown>) =>
      (
        await rawMcp(url, {
          key: bot.key,
          headers: {
            'mcp-protocol-version': MODERN,
            'mcp-method': method,
            ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
          },
          body: {
            jsonrpc: '2.0',
            id: 1,
            method,
            params: { ...params, _meta: metaWith({ extensions: { [TASKS_EXT]: {} } }) },
          },
        })
      ).body;
    const content = uniq('two instances');
    const { taskId } = (
      await on(a.url)('tools/call', {
        name: 'send_message',
        arguments: { channel_id: channel, content },
        task: {},
      })
    ).result.task;
    expect((await on(b.url)('tasks/get', { taskId })).result.status).toBe('working');
    const waiting = on(b.url)('tasks/result', { taskId });
    expectStatus(await org.admin.api.post(`/api/pending-actions/${taskId}/approve`, {}), 200);
    const result = (await waiting).result;
    expect(result.structuredContent).toMatchObject({ content, channel_id: channel });
    expect((await on(b.url)('tasks/get', { taskId })).result.status).toBe('completed');
  });
});
