import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from '../../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../../server/test/helpers/server.js';
import { World, type BotHandle, type UserHandle } from '../../../server/test/helpers/world.js';
import { WorkroomClient, WorkroomError } from '../src/index.js';

/** Every request the client makes, with its answer's status (a wrapper around the real fetch). */
function recordingFetch() {
  const seen: {
    method: string;
    url: string;
    idempotencyKey: string | undefined;
    status: number | 'error';
  }[] = [];
  const f: typeof fetch = async (input, init) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const entry = {
      method: init?.method ?? 'GET',
      url: String(input),
      idempotencyKey: headers['idempotency-key'],
      status: 'error' as number | 'error',
    };
    seen.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    return res;
  };
  return { seen, fetch: f };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('WorkroomClient against a real server', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle;
  let bot: BotHandle;
  let client: WorkroomClient;
  let channelId: string;
  let topicId: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    admin = org.admin;
    bot = await w.bot(admin.api);
    channelId = await w.channel(admin.api);
    expectStatus(await admin.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    const p = await w.project(admin.api);
    topicId = p.topicId;
    expectStatus(await admin.api.post(`/api/projects/${p.projectId}/members`, { bot_id: bot.id }), 201);
    client = new WorkroomClient({ baseUrl: srv.url, apiKey: bot.key });
  });
  afterAll(() => srv.close());

  it('auth() answers the bot identity', async () => {
    const me = await client.auth();
    expect(me.bot_id).toBe(bot.id);
    expect(await client.botId()).toBe(bot.id);
  });

  it('sends, updates and deletes a message; the user sees each step', async () => {
    const m = await client.sendMessage({ channelId, content: 'hello **world**' });
    expect(m).toMatchObject({
      channel_id: channelId,
      content: 'hello **world**',
      sender_type: 'bot',
      bot_id: bot.id,
    });
    const edited = await client.updateMessage(m.id, { content: 'edited', contentHtml: '<b>edited</b>' });
    expect(edited).toMatchObject({ id: m.id, content: 'edited', content_html: '<b>edited</b>' });
    expect(edited.edited_at).toBeTruthy();
    const list = expectStatus(await admin.api.get(`/api/channels/${channelId}/messages`), 200);
    expect(list.items.find((x: { id: string }) => x.id === m.id).content).toBe('edited');
    expect(await client.deleteMessage(m.id)).toMatchObject({ id: m.id, deleted: true });
    const after = expectStatus(await admin.api.get(`/api/channels/${channelId}/messages`), 200);
    expect(after.items.some((x: { id: string }) => x.id === m.id)).toBe(false);
    // Deleting again: a typed error with the server's code, status and request id.
    const err = await client.deleteMessage(m.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkroomError);
    expect(err).toMatchObject({ code: 'not_found', status: 404, attempts: 1 });
    expect((err as WorkroomError).requestId).toMatch(/\S+/);
  });

  it('sends into a topic and a DM; sendDm creates the DM room on first use', async () => {
    const t = await client.sendMessage({ topicId, content: 'in a topic' });
    expect(t.topic_id).toBe(topicId);
    const dm = await client.sendDm({ userId: admin.id, content: 'psst' });
    expect(dm.dm_room_id).toBeTruthy();
    const again = await client.sendMessage({ dmRoomId: dm.dm_room_id!, content: 'again' });
    expect(again.dm_room_id).toBe(dm.dm_room_id);
    const seen = expectStatus(await admin.api.get(`/api/dm-rooms/${dm.dm_room_id}/messages`), 200);
    expect(seen.items.map((x: { content: string }) => x.content)).toEqual(['again', 'psst']);
  });

  it('refuses a call without exactly one target before sending anything', async () => {
    await expect(client.sendMessage({ content: 'x' } as never)).rejects.toThrow(/exactly one/);
  });

  it('registers, lists and deletes custom commands', async () => {
    const c = await client.registerCommand({
      command: 'echo',
      description: 'Echo text',
      usageHint: '/echo <text>',
    });
    expect(c).toMatchObject({ command: 'echo', bot_id: bot.id, usage_hint: '/echo <text>' });
    expect((await client.listCommands()).items.map((x) => x.command)).toContain('echo');
    const dup = await client
      .registerCommand({ command: 'echo', description: 'again' })
      .catch((e: unknown) => e);
    expect(dup).toMatchObject({ code: 'conflict', status: 409 });
    expect(await client.deleteCommand('echo')).toMatchObject({ command: 'echo', deleted: true });
    expect((await client.listCommands()).items).toEqual([]);
  });

  it('runs every MCP tool through its REST twin', async () => {
    const task = await client.createTask({ topic_id: topicId, title: 'Write the SDK', priority: 'high' });
    expect(task).toMatchObject({
      topic_id: topicId,
      title: 'Write the SDK',
      priority: 'high',
      status: 'todo',
    });
    const moved = await client.updateTask({ task_id: task.task_id, status: 'in_progress' });
    expect(moved.status).toBe('in_progress');
    expect((await client.listTasks({ topic_id: topicId })).items.map((x) => x.task_id)).toContain(
      task.task_id,
    );
    await client.sendMessage({ channelId, content: 'needle in a haystack' });
    const read = await client.readMessages({ channel_id: channelId, limit: 1 });
    expect(read.items[0]!.content).toBe('needle in a haystack');
    const containers = await client.listChannels({ type: 'all' });
    expect(containers.channels!.map((c) => c.id)).toContain(channelId);
    const found = await client.search({ query: 'needle' });
    expect(found.messages!.map((m) => m.content)).toContain('needle in a haystack');
    expect((await client.getUserInfo({ user_id: admin.id })).email).toBe(admin.email);
    expect((await client.listUsers({ limit: 200 })).items.map((u) => u.id)).toContain(admin.id);
    // By name, with the tool's own arguments (as a model's tool call gives them).
    const viaName = (await client.callTool('create_task', { topic_id: topicId, title: 'By name' })) as {
      title: string;
    };
    expect(viaName.title).toBe('By name');
    const sent = (await client.callTool('send_message', { channel_id: channelId, content: 'by name' })) as {
      content: string;
    };
    expect(sent.content).toBe('by name');
  });

  it('reports a missing scope with the scope named', async () => {
    const readOnly = await w.bot(admin.api, { scopes: ['messages:read'] });
    expectStatus(await admin.api.post(`/api/channels/${channelId}/members`, { bot_id: readOnly.id }), 201);
    const c = new WorkroomClient({ baseUrl: srv.url, apiKey: readOnly.key });
    const err = await c.sendMessage({ channelId, content: 'nope' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'insufficient_scope', status: 403, scope: 'messages:write' });
  });

  it('a bad key is a 401 WorkroomError, not retried', async () => {
    const rec = recordingFetch();
    const c = new WorkroomClient({
      baseUrl: srv.url,
      apiKey: 'wrbk_00000000_live_' + '0'.repeat(48),
      fetch: rec.fetch,
    });
    await expect(c.auth()).rejects.toMatchObject({ code: 'unauthenticated', status: 401 });
    expect(rec.seen).toHaveLength(1);
  });

  it("a search over the server's time budget (503 search_timeout) is not retried", async () => {
    const search = srv.app.services.config.search;
    const budget = search.timeoutMs;
    search.timeoutMs = 0; // every search runs out of its budget at its first read
    try {
      const rec = recordingFetch();
      const c = new WorkroomClient({
        baseUrl: srv.url,
        apiKey: bot.key,
        fetch: rec.fetch,
        retry: { baseDelayMs: 10 },
      });
      await expect(c.search({ query: 'anything', type: 'messages' })).rejects.toMatchObject({
        code: 'search_timeout',
        status: 503,
        attempts: 1,
      });
      expect(rec.seen.map((r) => r.status)).toEqual([503]);
    } finally {
      search.timeoutMs = budget;
    }
  });

  it('a response lost after the server committed is retried with the same Idempotency-Key: one message', async () => {
    // A proxy in front of the real server that cuts the connection of the first POST after the server
    // answered (what a network failure looks like to the client).
    let cut = 0;
    const target = new URL(srv.url);
    const proxy = createServer((req, res) => {
      const up = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (upRes) => {
          if (req.method === 'POST' && cut === 0) {
            cut++;
            upRes.resume();
            upRes.on('end', () => req.socket.destroy());
            return;
          }
          res.writeHead(upRes.statusCode!, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on('error', () => res.destroy()); // a reset is part of what this proxy does, never uncaught
      req.on('error', () => up.destroy());
      req.pipe(up);
    });
    const rec = recordingFetch();
    try {
      const c = new WorkroomClient({
        baseUrl: await listen(proxy),
        apiKey: bot.key,
        fetch: rec.fetch,
        retry: { baseDelayMs: 20 },
      });
      const content = `exactly once ${Date.now()}`;
      const m = await c.sendMessage({ channelId, content });
      expect(m.content).toBe(content);
      expect(rec.seen.map((s) => s.status)).toEqual(['error', 201]);
      expect(rec.seen[0]!.idempotencyKey).toBeTruthy();
      expect(rec.seen[1]!.idempotencyKey).toBe(rec.seen[0]!.idempotencyKey);
      const list = expectStatus(
        await admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: 100 } }),
        200,
      );
      expect(list.items.filter((x: { content: string }) => x.content === content)).toHaveLength(1);
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('times out an attempt that gets no answer, retries it, then throws a timeout error', async () => {
    let hits = 0;
    const silent = createServer(() => void hits++); // accepts and never answers
    try {
      const c = new WorkroomClient({
        baseUrl: await listen(silent),
        apiKey: bot.key,
        timeoutMs: 150,
        retry: { maxRetries: 2, baseDelayMs: 10 },
      });
      const started = Date.now();
      const err = await c.readMessages({ channel_id: channelId }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'timeout', status: 0, attempts: 3 });
      expect(hits).toBe(3);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });

  it('does not repeat a POST without an Idempotency-Key after a network error', async () => {
    let hits = 0;
    const dropper = createServer((req) => {
      hits++;
      req.socket.destroy();
    });
    try {
      const c = new WorkroomClient({
        baseUrl: await listen(dropper),
        apiKey: bot.key,
        botId: bot.id,
        retry: { baseDelayMs: 10 },
      });
      await expect(c.registerCommand({ command: 'x', description: 'x' })).rejects.toMatchObject({
        code: 'network_error',
        attempts: 1,
      });
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => dropper.close(r));
    }
  });
});

describe('WorkroomClient and the rate limit', () => {
  let srv: TestServer;
  let w: World;
  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '1',
      WORKROOM_RATE_LIMIT_BOT_BURST: '1',
    });
    w = await World.create(srv.url);
  });
  afterAll(() => srv.close());

  it('a 429 is retried after Retry-After with the same Idempotency-Key, and posts once', async () => {
    const bot = await w.bot(w.admin.api);
    const channelId = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    const rec = recordingFetch();
    const c = new WorkroomClient({ baseUrl: srv.url, apiKey: bot.key, fetch: rec.fetch });
    await c.auth(); // takes the only token
    const started = Date.now();
    const m = await c.sendMessage({ channelId, content: 'after the wait' });
    expect(m.content).toBe('after the wait');
    const posts = rec.seen.filter((s) => s.method === 'POST' && s.url.endsWith('/messages'));
    expect(posts.map((s) => s.status)).toEqual([429, 201]);
    expect(posts[1]!.idempotencyKey).toBe(posts[0]!.idempotencyKey);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // Retry-After: 1
    const list = expectStatus(await w.admin.api.get(`/api/channels/${channelId}/messages`), 200);
    expect(list.items.filter((x: { content: string }) => x.content === 'after the wait')).toHaveLength(1);
  });

  it('gives up with retryAfter set when retries are off', async () => {
    const bot = await w.bot(w.admin.api);
    const c = new WorkroomClient({ baseUrl: srv.url, apiKey: bot.key, retry: { maxRetries: 0 } });
    await c.auth();
    const err = await c.auth().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkroomError);
    expect(err).toMatchObject({ code: 'rate_limited', status: 429, attempts: 1 });
    expect((err as WorkroomError).retryAfter).toBeGreaterThan(0);
  });
});
