import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/** Tool by tool: limits, bad input, scopes, organizations, events, the audit, and the REST twins. */
describe('MCP tools', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let sid: string;
  let channelId: string;
  let topicId: string;
  let projectId: string;
  let member: UserHandle;
  // Another organization, with data the bot must never see.
  let other: {
    channelId: string;
    projectId: string;
    topicId: string;
    taskId: string;
    user: UserHandle;
    word: string;
  };

  let n = 0;
  const call = async (name: string, args: unknown, key = bot.key, session = sid) => {
    const r = await rawMcp(srv.url, {
      key,
      session,
      body: { jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: args } },
    });
    expect(r.status).toBe(200);
    return r.body;
  };
  const ok = async (name: string, args: unknown) => {
    const b = await call(name, args);
    expect(b.result?.isError, JSON.stringify(b)).toBeUndefined();
    return b.result.content[0].text as string;
  };
  const toolError = async (name: string, args: unknown) => {
    const b = await call(name, args);
    expect(b.result?.isError, JSON.stringify(b)).toBe(true);
    return b.result.content[0].text as string;
  };
  const rpcError = async (name: string, args: unknown, key?: string, session?: string) => {
    const b = await call(name, args, key, session);
    expect(b.error, JSON.stringify(b)).toBeDefined();
    return b.error as { code: number; message: string; data?: any };
  };

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const admin = w.admin.api;
    bot = await w.bot(admin);
    sid = (await rawSession(srv.url, bot.key))!;
    channelId = await w.channel(admin);
    expectStatus(await admin.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    ({ projectId, topicId } = await w.project(admin));
    expectStatus(await admin.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    member = await w.user({ department: 'Sales', role: 'member' });

    const org = await w.org();
    const oa = org.admin.api;
    const word = uniq('secretword');
    const oc = await w.channel(oa, { name: uniq(word) });
    expectStatus(await oa.post(`/api/channels/${oc}/messages`, { content: `the ${word} is here` }), 201);
    const op = await w.project(oa);
    const task = expectStatus(
      await oa.post(`/api/topics/${op.topicId}/tasks`, { title: `Task ${word}` }),
      201,
    );
    const ou = await w.user({ organization_id: org.id, display_name: word, department: 'Sales' });
    other = {
      channelId: oc,
      projectId: op.projectId,
      topicId: op.topicId,
      taskId: task.task_id,
      user: ou,
      word,
    };
  });
  afterAll(() => srv.close());

  it('limits and empty values are tool errors (isError) naming the field', async () => {
    expect(await toolError('read_messages', { channel_id: channelId, limit: 500 })).toContain(
      'limit: must be at most 100',
    );
    expect(await toolError('read_messages', { channel_id: channelId, limit: 0 })).toContain('limit');
    expect(await toolError('search', { query: 'x', limit: 51 })).toContain('limit: must be at most 50');
    expect(await toolError('list_users', { limit: 201 })).toContain('limit: must be at most 200');
    expect(await toolError('send_message', { channel_id: channelId, content: 'x'.repeat(50_001) })).toContain(
      'content: must be at most 50000 characters',
    );
    expect(await toolError('send_message', { channel_id: channelId, content: '' })).toContain('content');
    // Exactly at the limits is fine.
    await ok('send_message', { channel_id: channelId, content: 'y'.repeat(50_000) });
    await ok('read_messages', { channel_id: channelId, limit: 100 });
  });

  it('malformed arguments are -32602 naming the field', async () => {
    const cases: [string, unknown, string][] = [
      ['send_message', { content: 'hi' }, 'channel_id'],
      ['send_message', { content: 'hi', channel_id: channelId, topic_id: topicId }, 'channel_id'],
      ['send_message', { content: 'hi', channel_id: 'not-a-uuid' }, 'channel_id'],
      ['read_messages', { limit: 5 }, 'channel_id'],
      ['list_channels', { type: 'rooms' }, 'type'],
      ['create_task', { topic_id: topicId }, 'title'],
      ['create_task', { topic_id: topicId, title: 't', priority: 'critical' }, 'priority'],
      ['create_task', { topic_id: topicId, title: 't', due_date: '2026-02-30' }, 'due_date'],
      ['update_task', { status: 'done' }, 'task_id'],
      ['update_task', { task_id: crypto.randomUUID(), status: 'finished' }, 'status'],
      ['list_tasks', { status: 'open' }, 'topic_id'],
      ['search', {}, 'query'],
      ['search', { query: 'x', type: 'files' }, 'type'],
      ['get_user_info', {}, 'user_id'],
      ['get_user_info', { email: 'not an email' }, 'email'],
      ['list_users', { role: 'king' }, 'role'],
    ];
    for (const [tool, args, field] of cases) {
      const e = await rpcError(tool, args);
      expect(e.code, `${tool} ${JSON.stringify(args)}`).toBe(-32602);
      expect(e.data.field, `${tool} ${JSON.stringify(args)}`).toBe(field);
      expect(e.message).toContain(field);
    }
  });

  it('every scoped tool refuses a key without its scope with -32003 naming it; search needs none', async () => {
    const k = expectStatus(
      await w.admin.api.post(`/api/bots/${bot.id}/api-keys`, { scopes: ['files:read'] }),
      201,
    );
    const s = (await rawSession(srv.url, k.key))!;
    const scoped: [string, unknown, string][] = [
      ['send_message', { channel_id: channelId, content: 'x' }, 'messages:write'],
      ['read_messages', { channel_id: channelId }, 'messages:read'],
      ['list_channels', {}, 'channels:read'],
      ['create_task', { topic_id: topicId, title: 'x' }, 'tasks:write'],
      ['update_task', { task_id: crypto.randomUUID(), status: 'done' }, 'tasks:write'],
      ['list_tasks', { topic_id: topicId }, 'tasks:read'],
      ['get_user_info', { user_id: member.id }, 'users:read'],
      ['list_users', {}, 'users:read'],
    ];
    for (const [tool, args, scope] of scoped) {
      const e = await rpcError(tool, args, k.key, s);
      expect(e.code, tool).toBe(-32003);
      expect(e.message).toContain(scope);
      expect(e.data).toEqual({ scope });
    }
    const found = await call('search', { query: 'anything' }, k.key, s);
    expect(found.result.isError).toBeUndefined();
    // resources need channels:read (list) and messages:read (read).
    const list = await rawMcp(srv.url, {
      key: k.key,
      session: s,
      body: { jsonrpc: '2.0', id: 1, method: 'resources/list' },
    });
    expect(list.body.error).toMatchObject({ code: -32003, data: { scope: 'channels:read' } });
  });

  it("never reaches another organization's data, with any tool", async () => {
    const o = other;
    expect(await toolError('send_message', { channel_id: o.channelId, content: 'hi' })).toContain(
      'not found',
    );
    expect(await toolError('read_messages', { channel_id: o.channelId })).toContain('not found');
    expect(await toolError('read_messages', { topic_id: o.topicId })).toContain('not found');
    const lists = await ok('list_channels', {});
    for (const id of [o.channelId, o.projectId, o.topicId]) expect(lists).not.toContain(id);
    expect(await toolError('list_channels', { type: 'topics', project_id: o.projectId })).toContain(
      'not found',
    );
    expect(await toolError('create_task', { topic_id: o.topicId, title: 'x' })).toContain('not found');
    expect(await toolError('update_task', { task_id: o.taskId, status: 'done' })).toContain('not found');
    expect(await toolError('list_tasks', { topic_id: o.topicId })).toContain('not found');
    const found = await ok('search', { query: o.word });
    expect(found).not.toContain(o.channelId);
    expect(found).not.toContain(o.taskId);
    expect(found).not.toContain(o.user.id);
    expect(found).toMatch(/Messages \(0\)[\s\S]*Users \(0\)[\s\S]*Tasks \(0\)[\s\S]*Channels \(0\)/);
    expect(await toolError('get_user_info', { user_id: o.user.id })).toContain('not found');
    expect(await toolError('get_user_info', { email: o.user.email })).toContain('not found');
    const users = await ok('list_users', { department: 'Sales' });
    expect(users).toContain(member.id);
    expect(users).not.toContain(o.user.id);
    // Assigning a task to another organization's user fails, and changes nothing.
    const created = await ok('create_task', { topic_id: topicId, title: 'Local task' });
    const taskId = /task_id: (\S+)/.exec(created)![1]!;
    expect(await toolError('update_task', { task_id: taskId, assignee_id: o.user.id })).toContain(
      'assignee_id',
    );
    expect(
      await toolError('create_task', { topic_id: topicId, title: 'x', assignee_id: o.user.id }),
    ).toContain('assignee_id');
    expect(await ok('list_tasks', { topic_id: topicId, assignee_id: o.user.id })).toContain('No tasks');
    // The other organization's resources are not listed or readable.
    const res = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: { jsonrpc: '2.0', id: 1, method: 'resources/list' },
    });
    expect(JSON.stringify(res.body)).not.toContain(o.channelId);
    const read = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'resources/read',
        params: { uri: `workroom://channels/${o.channelId}` },
      },
    });
    expect(read.body.error.code).toBe(-32002);
  });

  it('does not reach containers of its own organization it was not added to', async () => {
    const hidden = await w.channel(w.admin.api);
    expect(await toolError('send_message', { channel_id: hidden, content: 'x' })).toContain(
      'Channel not found',
    );
    const p = await w.project(w.admin.api);
    expect(await toolError('list_tasks', { topic_id: p.topicId })).toContain('Topic not found');
    expect(await ok('list_channels', { type: 'channels' })).not.toContain(hidden);
  });

  it('create_task and update_task emit task.created, task.status_changed and task.assigned', async () => {
    const created = await ok('create_task', {
      topic_id: topicId,
      title: 'Ship it',
      priority: 'high',
      due_date: '2031-05-01',
    });
    const taskId = /task_id: (\S+)/.exec(created)![1]!;
    expect(created).toContain('priority: high');
    expect(created).toContain('due_date: 2031-05-01');
    const events = async () =>
      (
        await srv.app.services.storage.stores.db
          .selectFrom('events')
          .select(['type', 'data'])
          .orderBy('seq')
          .execute()
      )
        .map((e) => ({ type: e.type, data: JSON.parse(e.data) }))
        .filter((e) => e.data.task_id === taskId);
    expect((await events()).map((e) => e.type)).toEqual(['task.created']);

    await ok('update_task', { task_id: taskId, title: 'Ship it now' });
    expect((await events()).map((e) => e.type)).toEqual(['task.created']);
    await ok('update_task', { task_id: taskId, status: 'review' });
    await ok('update_task', { task_id: taskId, status: 'review' }); // no change, no event
    await ok('update_task', { task_id: taskId, assignee_id: member.id });
    const text = await ok('update_task', { task_id: taskId, status: 'done', assignee_id: null });
    expect(text).toContain('assignee_id: none');
    const evs = await events();
    expect(evs.map((e) => e.type)).toEqual([
      'task.created',
      'task.status_changed',
      'task.assigned',
      'task.status_changed',
      'task.assigned',
    ]);
    expect(evs[1]!.data).toMatchObject({
      status: 'review',
      previous_status: 'todo',
      actor_type: 'bot',
      actor_id: bot.id,
    });
    expect(evs[2]!.data).toMatchObject({ assignee_id: member.id, previous_assignee_id: null });
    expect(evs[4]!.data).toMatchObject({ assignee_id: null, previous_assignee_id: member.id });
    // The REST twin sees the same task.
    const t = expectStatus(await w.admin.api.get(`/api/tasks/${taskId}`), 200);
    expect(t).toMatchObject({
      task_id: taskId,
      title: 'Ship it now',
      status: 'done',
      assignee_id: null,
      priority: 'high',
    });
  });

  it('the REST twins: tasks, search and containers', async () => {
    const api = member.api;
    // The member is not in the project: 404, as if it did not exist.
    expect((await api.post(`/api/topics/${topicId}/tasks`, { title: 'x' })).status).toBe(404);
    const admin = w.admin.api;
    const t = expectStatus(
      await admin.post(`/api/topics/${topicId}/tasks`, { title: 'REST task', assignee_id: member.id }),
      201,
    );
    expect(t).toMatchObject({ priority: 'medium', status: 'todo', assignee_id: member.id });
    const list = expectStatus(
      await admin.get(`/api/topics/${topicId}/tasks`, { query: { assignee_id: member.id } }),
      200,
    );
    expect(list.items.map((x: any) => x.task_id)).toContain(t.task_id);
    const patched = expectStatus(
      await admin.patch(`/api/tasks/${t.task_id}`, { status: 'in_progress' }),
      200,
    );
    expect(patched.status).toBe('in_progress');
    expect((await admin.patch(`/api/tasks/${t.task_id}`, { due_date: '2026-13-01' })).status).toBe(400);
    const found = expectStatus(
      await admin.get('/api/search', { query: { query: 'REST task', type: 'tasks' } }),
      200,
    );
    expect(found.tasks.map((x: any) => x.id)).toContain(t.task_id);
    expect(found.messages).toBeUndefined();
    expect((await admin.get('/api/search', { query: { query: 'x', limit: 51 } })).status).toBe(400);
    const c = expectStatus(
      await admin.get('/api/containers', { query: { type: 'topics', project_id: projectId } }),
      200,
    );
    expect(c.topics.map((x: any) => x.id)).toEqual([topicId]);
    expect(c.channels).toBeUndefined();
    // And the bot, over REST with its key, sees what it sees over MCP.
    const viaRest = expectStatus(await bot.api.get('/api/containers'), 200);
    expect(viaRest.channels.map((x: any) => x.id)).toContain(channelId);
  });

  it("records every tools/call for the bot's managers, without secrets", async () => {
    const b = await w.bot(w.admin.api, { scopes: ['messages:read'] });
    const s = (await rawSession(srv.url, b.key))!;
    await call('search', { query: 'x' }, b.key, s);
    await call('read_messages', { channel_id: channelId }, b.key, s); // not a member: tool error
    await call('send_message', { channel_id: channelId, content: 'x' }, b.key, s); // scope: protocol error
    await call('nope', {}, b.key, s);
    const audit = expectStatus(await w.admin.api.get(`/api/bots/${b.id}/tool-calls`), 200);
    const rows = [...audit.items].reverse();
    expect(rows.map((r: any) => [r.tool, r.outcome, r.error_code])).toEqual([
      ['search', 'ok', null],
      ['read_messages', 'tool_error', 'not_found'],
      ['send_message', 'protocol_error', 'insufficient_scope'],
      ['nope', 'protocol_error', 'invalid_params'],
    ]);
    for (const r of rows) {
      expect(r).toMatchObject({ bot_id: b.id, key_id: b.keyId });
      expect(r.duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect(JSON.stringify(audit)).not.toContain(b.key);
    const filtered = expectStatus(
      await w.admin.api.get(`/api/bots/${b.id}/tool-calls`, { query: { tool: 'search' } }),
      200,
    );
    expect(filtered.items).toHaveLength(1);
    // Managers only: a plain member sees 403, another organization 404, the bot's own key is no user.
    expect((await member.api.get(`/api/bots/${b.id}/tool-calls`)).status).toBe(403);
    expect((await other.user.api.get(`/api/bots/${b.id}/tool-calls`)).status).toBe(404);
    expect((await b.api.get(`/api/bots/${b.id}/tool-calls`)).status).toBe(403);
  });
});
