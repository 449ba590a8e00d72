import { McpError, ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { sdkClient, textOf, withSdkClient } from './helpers/mcp.js';
import { listChangedCounter, withStreamingSdkClient } from './helpers/sdk-stream.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle } from './helpers/world.js';

const NINE = [
  'create_task',
  'get_user_info',
  'list_channels',
  'list_tasks',
  'list_users',
  'read_messages',
  'search',
  'send_message',
  'update_task',
];

/** The official MCP SDK client against our hand-written server, as a real agent would use it. */
describe('MCP with the official SDK client', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let channelId: string;
  let projectId: string;
  let topicId: string;
  let member: { id: string; email: string };

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const admin = w.admin.api;
    bot = await w.bot(admin);
    channelId = await w.channel(admin, { name: uniq('launch-room') });
    expectStatus(await admin.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    ({ projectId, topicId } = await w.project(admin));
    expectStatus(await admin.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    const u = await w.user({ department: 'Rocket Engineering', role: 'member' });
    member = { id: u.id, email: u.email };
    expectStatus(
      await admin.post(`/api/channels/${channelId}/messages`, { content: 'Countdown starts at noon' }),
      201,
    );
  });
  afterAll(() => srv.close());

  it('initializes (the SDK 1.32 asks 2025-11-25 and gets it), pings, lists nine tools with input schemas', async () => {
    await withSdkClient(srv.url, bot.key, async (client, transport) => {
      expect(client.getServerVersion()).toMatchObject({ name: 'workroom' });
      expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });
      expect(client.getInstructions()).toContain('list_channels');
      expect(transport.sessionId).toMatch(/^wrms1\.[!-~]+$/);
      expect(transport.protocolVersion).toBe('2025-11-25');
      expect(await client.ping()).toEqual({});
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(NINE);
      for (const t of tools) {
        expect(t.description!.length).toBeGreaterThan(60);
        expect(t.inputSchema.type).toBe('object');
      }
      const send = tools.find((t) => t.name === 'send_message')!;
      expect(send.inputSchema.required).toEqual(['content']);
      expect(Object.keys(send.inputSchema.properties!)).toEqual(
        expect.arrayContaining(['content', 'channel_id', 'topic_id', 'dm_room_id']),
      );
      const read = tools.find((t) => t.name === 'read_messages')!;
      expect(read.inputSchema.properties!.limit).toMatchObject({ default: 20, maximum: 100 });
      const users = tools.find((t) => t.name === 'list_users')!;
      expect(users.inputSchema.properties!.limit).toMatchObject({ default: 50, maximum: 200 });
      const create = tools.find((t) => t.name === 'create_task')!;
      expect(create.inputSchema.required).toEqual(['topic_id', 'title']);
      expect(create.inputSchema.properties!.priority).toMatchObject({ default: 'medium' });
    });
  });

  it('calls every tool', async () => {
    await withSdkClient(srv.url, bot.key, async (client) => {
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError ?? false, textOf(r)).toBe(false);
        return textOf(r);
      };
      const sent = await call('send_message', {
        channel_id: channelId,
        content: 'T-minus 10 from the **bot**',
      });
      const messageId = /message_id: ([0-9a-f-]{36})/.exec(sent)![1]!;
      const list = expectStatus(await w.admin.api.get(`/api/channels/${channelId}/messages`), 200);
      expect(list.items[0]).toMatchObject({ id: messageId, sender_type: 'bot', bot_id: bot.id });

      const read = await call('read_messages', { channel_id: channelId, limit: 5 });
      expect(read).toContain(messageId);
      expect(read.indexOf('T-minus 10')).toBeLessThan(read.indexOf('Countdown starts'));

      const containers = await call('list_channels', {});
      expect(containers).toContain(`channel_id: ${channelId}`);
      expect(containers).toContain(`project_id: ${projectId}`);
      expect(containers).toContain(`topic_id: ${topicId}`);

      const created = await call('create_task', {
        topic_id: topicId,
        title: 'Fuel the rocket',
        due_date: '2030-01-31',
      });
      const taskId = /task_id: ([0-9a-f-]{36})/.exec(created)![1]!;
      expect(created).toContain('priority: medium');
      expect(created).toContain('status: todo');

      const updated = await call('update_task', {
        task_id: taskId,
        status: 'in_progress',
        assignee_id: member.id,
      });
      expect(updated).toContain('status: in_progress');
      expect(updated).toContain(`assignee_id: ${member.id}`);

      const tasks = await call('list_tasks', { topic_id: topicId, status: 'in_progress' });
      expect(tasks).toContain(taskId);
      expect(await call('list_tasks', { topic_id: topicId, status: 'done' })).not.toContain(taskId);

      const found = await call('search', { query: 'fuel' });
      expect(found).toContain(taskId);
      expect(await call('search', { query: 't-minus', type: 'messages' })).toContain(messageId);

      const info = await call('get_user_info', { email: member.email });
      for (const f of ['id', 'email', 'display_name', 'role', 'status', 'department'])
        expect(info).toContain(`${f}: `);
      expect(info).toContain(`id: ${member.id}`);
      expect(info).toContain('department: Rocket Engineering');

      const users = await call('list_users', { department: 'rocket', role: 'member' });
      expect(users).toContain(member.id);
      expect(users).toMatch(/^1 user:/);
    });
  });

  it('lists and reads resources', async () => {
    await withSdkClient(srv.url, bot.key, async (client) => {
      const { resources } = await client.listResources();
      const uris = resources.map((r) => r.uri);
      expect(uris).toContain(`workroom://channels/${channelId}`);
      expect(uris).toContain(`workroom://topics/${topicId}`);
      const r = await client.readResource({ uri: `workroom://channels/${channelId}` });
      expect((r.contents[0] as { text: string }).text).toContain('Countdown starts at noon');
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toContain('workroom://channels/{channel_id}');
      const err = await client
        .readResource({ uri: `workroom://channels/${crypto.randomUUID()}` })
        .catch((e) => e);
      expect(err).toBeInstanceOf(McpError);
      expect(err.code).toBe(-32002);
    });
  });

  it('refuses a tool outside the key scopes with -32003 naming the scope', async () => {
    const k = expectStatus(
      await w.admin.api.post(`/api/bots/${bot.id}/api-keys`, { scopes: ['messages:read'] }),
      201,
    );
    await withSdkClient(srv.url, k.key, async (client) => {
      const err = await client
        .callTool({ name: 'send_message', arguments: { channel_id: channelId, content: 'hi' } })
        .catch((e) => e);
      expect(err).toBeInstanceOf(McpError);
      expect(err.code).toBe(-32003);
      expect(err.message).toContain('messages:write');
      // search needs no scope; read_messages is covered.
      expect((await client.callTool({ name: 'search', arguments: { query: 'noon' } })).isError).toBeFalsy();
      expect(
        (await client.callTool({ name: 'read_messages', arguments: { channel_id: channelId } })).isError,
      ).toBeFalsy();
    });
  });

  it('receives resources/list_changed on its GET stream when the bot joins a channel', async () => {
    // The SDK opens its GET stream after notifications/initialized: this resolves once it is open.
    await withStreamingSdkClient(srv.url, bot.key, async (client) => {
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ResourceListChangedNotificationSchema, () => resolve()),
      );
      const other = await w.channel(w.admin.api);
      expectStatus(await w.admin.api.post(`/api/channels/${other}/members`, { bot_id: bot.id }), 201);
      await changed;
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`workroom://channels/${other}`);
    });
  });

  it('receives resources/list_changed when a new DM room of the bot appears, and lists it', async () => {
    await withStreamingSdkClient(srv.url, bot.key, async (client) => {
      const changes = listChangedCounter(srv, client, bot.id);
      const someone = await w.user();
      const dm = expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/dm-messages`, { user_id: someone.id, content: 'hello' }),
        201,
      );
      expect(await changes.settled((e) => JSON.stringify(e.data).includes(dm.id))).toBe(1);
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`workroom://dm-rooms/${dm.dm_room_id}`);
      // A second message in the same room is not a new resource: once its events are out (the end of
      // the check), the client has every notification the server sent, still one.
      const again = expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/dm-messages`, { user_id: someone.id, content: 'again' }),
        201,
      );
      expect(await changes.settled((e) => JSON.stringify(e.data).includes(again.id))).toBe(1);
      changes.stop();
    });
  });

  it('receives resources/list_changed when the bot joins a project and when a topic appears in it', async () => {
    await withStreamingSdkClient(srv.url, bot.key, async (client) => {
      const changes = listChangedCounter(srv, client, bot.id);
      const admin = w.admin.api;
      const project = expectStatus(await admin.post('/api/projects', { name: uniq('proj') }), 201);
      // Not the bot's project: the bot's joining it (the sentinel) is its first notification.
      expectStatus(await admin.post(`/api/projects/${project.id}/members`, { bot_id: bot.id }), 201);
      expect(
        await changes.settled(
          (e) => e.type === 'member.joined' && JSON.stringify(e.data).includes(project.id),
        ),
      ).toBe(1);
      const topic = expectStatus(
        await admin.post(`/api/projects/${project.id}/topics`, { name: uniq('topic') }),
        201,
      );
      // Topics have no event of their own: the bot's resources.changed is the one.
      const forBot = (e: { type: string; data: Record<string, unknown> }) =>
        e.type === 'resources.changed' && (e.data.bot_ids as string[]).includes(bot.id);
      expect(await changes.settled(forBot)).toBe(2);
      changes.stop();
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`workroom://topics/${topic.id}`);
    });
  });

  it('after the session is ended, its id answers 404', async () => {
    const { client, transport } = await sdkClient(srv.url, bot.key);
    const id = transport.sessionId!;
    await transport.terminateSession();
    await client.close();
    const r = await fetch(new URL('/api/mcp', srv.url), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${bot.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': id,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(r.status).toBe(404);
  });
});
