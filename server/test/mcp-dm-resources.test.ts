import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/** A DM room a bot is part of is an MCP resource it can list and read, and a send_message target. */
describe('MCP: DM rooms as resources', () => {
  let srv: TestServer;
  let w: World;
  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
  });
  afterAll(() => srv.close());

  it('a bot that DMed a user lists, reads and answers in that DM room; others cannot', async () => {
    const org = await w.org();
    const user = await w.user({ organization_id: org.id });
    const bot = await w.bot(org.admin.api);
    const dm = expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/dm-messages`, {
        user_id: user.id,
        content: 'hello from the bot',
      }),
      201,
    );
    expect(dm.dm_room_id).toBeTruthy();
    const session = await rawSession(srv.url, bot.key);
    const rpc = async (method: string, params: unknown, key = bot.key, sid = session) =>
      (await rawMcp(srv.url, { key, session: sid, body: { jsonrpc: '2.0', id: 1, method, params } })).body;

    const list = await rpc('resources/list', {});
    const uri = `workroom://dm-rooms/${dm.dm_room_id}`;
    expect(list.result.resources.map((r: any) => r.uri)).toContain(uri);

    const read = await rpc('resources/read', { uri });
    expect(read.result.contents[0].uri).toBe(uri);
    expect(read.result.contents[0].text).toContain('hello from the bot');

    // the user answers; the bot reads it and replies with send_message in the room
    expectStatus(await user.api.post(`/api/dm-rooms/${dm.dm_room_id}/messages`, { content: 'hi bot' }), 201);
    const msgs = await rpc('tools/call', { name: 'read_messages', arguments: { dm_room_id: dm.dm_room_id } });
    expect(msgs.result.content[0].text).toContain('hi bot');
    const sent = await rpc('tools/call', {
      name: 'send_message',
      arguments: { dm_room_id: dm.dm_room_id, content: 'got it' },
    });
    expect(sent.result.isError).toBeUndefined();
    const seen = expectStatus(await user.api.get(`/api/dm-rooms/${dm.dm_room_id}/messages`), 200);
    expect(seen.items[0].content).toBe('got it');

    // another bot of the same organization neither lists nor reads it
    const other = await w.bot(org.admin.api);
    const otherSession = await rawSession(srv.url, other.key);
    const otherList = await rpc('resources/list', {}, other.key, otherSession);
    expect(otherList.result.resources.map((r: any) => r.uri)).not.toContain(uri);
    const otherRead = await rpc('resources/read', { uri }, other.key, otherSession);
    expect(otherRead.error).toBeDefined();
    expect(JSON.stringify(otherRead)).not.toContain('hello from the bot');
  });
});
