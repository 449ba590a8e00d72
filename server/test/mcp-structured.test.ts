import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, textOf, withSdkClient } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle } from './helpers/world.js';

/**
 * Structured tool results (2025-06-18+): every tool declares an `outputSchema` generated from the
 * zod schema of its REST twin's response, and every successful call carries `structuredContent` that
 * validates against it — checked by the official SDK client's own validation and by Ajv directly.
 * 2025-03-26 clients get exactly the results they always got.
 */
describe('MCP structured tool results', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let channelId: string;
  let projectId: string;
  let topicId: string;
  let member: { id: string; email: string };
  const ajv = new AjvJsonSchemaValidator();

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const admin = w.admin.api;
    bot = await w.bot(admin);
    channelId = await w.channel(admin, { name: uniq('structured') });
    expectStatus(await admin.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    ({ projectId, topicId } = await w.project(admin));
    expectStatus(await admin.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    const u = await w.user({ department: 'Structured Output', role: 'member' });
    member = { id: u.id, email: u.email };
    expectStatus(
      await admin.post(`/api/channels/${channelId}/messages`, { content: 'hello structure' }),
      201,
    );
  });
  afterAll(() => srv.close());

  it('the SDK 1.32 (2025-11-25): nine output schemas; every tool result validates, text kept', async () => {
    await withSdkClient(srv.url, bot.key, async (client, transport) => {
      expect(transport.protocolVersion).toBe('2025-11-25');
      const { tools } = await client.listTools(); // the SDK caches a validator per outputSchema
      expect(tools).toHaveLength(9);
      const schemas = new Map(tools.map((t) => [t.name, t.outputSchema]));
      for (const t of tools) expect(t.outputSchema?.type, t.name).toBe('object');

      const call = async (name: string, args: Record<string, unknown>) => {
        // callTool throws when structuredContent is missing or does not validate against outputSchema.
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError ?? false, textOf(r)).toBe(false);
        expect(textOf(r).length).toBeGreaterThan(0);
        const check = ajv.getValidator(schemas.get(name)!)(r.structuredContent);
        expect(check.valid, `${name}: ${check.errorMessage}`).toBe(true);
        return r.structuredContent as any;
      };
      const sent = await call('send_message', { channel_id: channelId, content: 'structured **hi**' });
      expect(sent).toMatchObject({ channel_id: channelId, sender_type: 'bot', bot_id: bot.id });
      // The same object as the REST twin's body.
      const rest = expectStatus(await w.admin.api.get(`/api/channels/${channelId}/messages`), 200);
      expect(rest.items[0].id).toBe(sent.id);
      expect((await call('read_messages', { channel_id: channelId, limit: 5 })).items[0].id).toBe(sent.id);
      const containers = await call('list_channels', {});
      expect(containers.channels.map((c: { id: string }) => c.id)).toContain(channelId);
      const task = await call('create_task', {
        topic_id: topicId,
        title: 'Structure it',
        due_date: '2030-02-01',
      });
      expect(task).toMatchObject({ topic_id: topicId, status: 'todo', priority: 'medium' });
      const updated = await call('update_task', { task_id: task.id, status: 'done', assignee_id: member.id });
      expect(updated).toMatchObject({ id: task.id, status: 'done', assignee_id: member.id });
      expect((await call('list_tasks', { topic_id: topicId })).items[0].id).toBe(task.id);
      const found = await call('search', { query: 'structure' });
      expect(found.tasks.map((t: { id: string }) => t.id)).toContain(task.id);
      const user = await call('get_user_info', { user_id: member.id });
      const restUser = expectStatus(await w.admin.api.get(`/api/users/${member.id}`), 200);
      expect(user).toEqual(restUser);
      expect(
        (await call('list_users', { department: 'structured' })).items.map((u: { id: string }) => u.id),
      ).toEqual([member.id]);
    });
  });

  it('a tool error carries no structuredContent, only its text', async () => {
    await withSdkClient(srv.url, bot.key, async (client) => {
      await client.listTools();
      const r = await client.callTool({
        name: 'read_messages',
        arguments: { channel_id: '00000000-0000-4000-8000-000000000000' },
      });
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toBeUndefined();
      expect(textOf(r)).toMatch(/^Error \(/);
    });
  });

  async function rawSessionAt(v: string): Promise<string> {
    const r = await rawMcp(srv.url, {
      key: bot.key,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
    });
    expect(r.body.result.protocolVersion).toBe(v);
    return r.headers.get('mcp-session-id')!;
  }

  it('2025-06-18 (raw): outputSchema in tools/list and structuredContent in results', async () => {
    const sid = await rawSessionAt('2025-06-18');
    const h = { 'mcp-protocol-version': '2025-06-18' };
    const list = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: h,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    const schema = list.body.result.tools.find(
      (t: { name: string }) => t.name === 'get_user_info',
    ).outputSchema;
    const r = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      headers: h,
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_user_info', arguments: { email: member.email } },
      },
    });
    expect(r.body.result.structuredContent).toMatchObject({ id: member.id, email: member.email });
    expect(ajv.getValidator(schema)(r.body.result.structuredContent).valid).toBe(true);
  });

  // read_messages keeps each listed message's JSON between calls (transports/mcp/listed-json.ts): what a
  // client reads after an edit, a reaction, a deletion or a new message must be the change, every time.
  it('read_messages again after an edit, a reaction, a deletion and a new message: structuredContent is the REST body each time', async () => {
    const admin = w.admin.api;
    const room = await w.channel(admin, { name: uniq('relisted') });
    expectStatus(await admin.post(`/api/channels/${room}/members`, { bot_id: bot.id }), 201);
    const posted = [];
    for (let i = 0; i < 3; i++)
      posted.push(
        expectStatus(await admin.post(`/api/channels/${room}/messages`, { content: `m${i}` }), 201),
      );
    const sid = await rawSessionAt('2025-06-18');
    let id = 10;
    const both = async () => {
      const r = await rawMcp(srv.url, {
        key: bot.key,
        session: sid,
        headers: { 'mcp-protocol-version': '2025-06-18' },
        body: {
          jsonrpc: '2.0',
          id: id++,
          method: 'tools/call',
          params: { name: 'read_messages', arguments: { channel_id: room, limit: 10 } },
        },
      });
      const rest = expectStatus(await admin.get(`/api/channels/${room}/messages?limit=10`), 200);
      expect(r.body.result.structuredContent).toEqual({ items: rest.items });
      return r.body.result.structuredContent.items as {
        id: string;
        content: string;
        edited_at: string | null;
        reactions: { emoji: string; count: number }[];
      }[];
    };
    expect((await both()).map((m) => m.content)).toEqual(['m2', 'm1', 'm0']);
    expect((await both()).map((m) => m.content)).toEqual(['m2', 'm1', 'm0']);
    expectStatus(await admin.put(`/api/messages/${posted[1].id}`, { content: 'm1 edited' }), 200);
    const edited = await both();
    expect(edited[1]).toMatchObject({ content: 'm1 edited' });
    expect(edited[1]!.edited_at).not.toBeNull();
    expectStatus(await admin.post(`/api/messages/${posted[0].id}/reactions`, { emoji: '👍' }), 200);
    expect((await both())[2]!.reactions).toEqual([expect.objectContaining({ emoji: '👍', count: 1 })]);
    expectStatus(await admin.delete(`/api/messages/${posted[2].id}`), 200);
    expectStatus(await admin.post(`/api/channels/${room}/messages`, { content: 'm3' }), 201);
    expect((await both()).map((m) => m.content)).toEqual(['m3', 'm1 edited', 'm0']);
  });

  it('2025-03-26 (raw): exactly the results of before — no outputSchema, no structuredContent', async () => {
    const sid = await rawSessionAt('2025-03-26');
    const list = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    for (const t of list.body.result.tools) {
      expect(Object.keys(t).sort()).toEqual(['annotations', 'description', 'inputSchema', 'name']);
    }
    const r = await rawMcp(srv.url, {
      key: bot.key,
      session: sid,
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_user_info', arguments: { email: member.email } },
      },
    });
    expect(Object.keys(r.body.result)).toEqual(['content']);
    expect(r.body.result.content).toHaveLength(1);
    expect(r.body.result.content[0].text).toContain(`id: ${member.id}`);
  });
});
