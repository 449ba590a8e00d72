import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateBotKey } from '../src/operations/auth/authenticate.js';
import { withIdempotency } from '../src/operations/idempotency.js';
import { sendMessage } from '../src/operations/messages/messages.js';
import { runOperation } from '../src/operations/operation.js';
import { outsideRequest, write } from '../src/operations/write.js';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle } from './helpers/world.js';

/**
 * send_message is idempotent with a key on both of its surfaces: the REST twins (Idempotency-Key
 * header) and the MCP tool (Idempotency-Key header of a single request, or _meta.idempotency_key).
 */
describe('idempotent send_message', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle;
  let channelId: string;
  let session: string | undefined;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    channelId = await w.channel(w.admin.api);
    bot = await w.bot(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    session = await rawSession(srv.url, bot.key);
  });
  afterAll(() => srv.close());

  const count = async (content: string) =>
    expectStatus(
      await w.admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: 100 } }),
      200,
    ).items.filter((m: any) => m.content === content).length;

  it('REST: concurrent retries with one key create one message and answer it to all', async () => {
    const headers = { 'idempotency-key': 'rest-key-1' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        bot.api.post(`/api/channels/${channelId}/messages`, { content: 'once via REST' }, { headers }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(201);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await count('once via REST')).toBe(1);
    // the same key with another body is refused
    const other = await bot.api.post(
      `/api/channels/${channelId}/messages`,
      { content: 'different' },
      { headers },
    );
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
    expect(await count('different')).toBe(0);
  });

  const call = (args: Record<string, unknown>, opts: { header?: string; meta?: string; id?: number } = {}) =>
    rawMcp(srv.url, {
      key: bot.key,
      session,
      headers: opts.header ? { 'idempotency-key': opts.header } : {},
      body: {
        jsonrpc: '2.0',
        id: opts.id ?? 1,
        method: 'tools/call',
        params: {
          name: 'send_message',
          arguments: args,
          ...(opts.meta ? { _meta: { idempotency_key: opts.meta } } : {}),
        },
      },
    });
  const messageId = (text: string) => /message_id: ([0-9a-f-]{36})/.exec(text)?.[1];

  it('MCP: the Idempotency-Key header makes concurrent retries create one message', async () => {
    const args = { channel_id: channelId, content: 'once via MCP header' };
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call(args, { header: 'mcp-key-1', id: i })),
    );
    const ids = answers.map((a) => {
      expect(a.status).toBe(200);
      expect(a.body.result.isError).toBeUndefined();
      return messageId(a.body.result.content[0].text);
    });
    expect(ids[0]).toBeDefined();
    expect(new Set(ids).size).toBe(1);
    expect(await count('once via MCP header')).toBe(1);
  });

  it('MCP: _meta.idempotency_key works the same; a different body with the key is a tool error', async () => {
    const args = { channel_id: channelId, content: 'once via MCP meta' };
    const a = await call(args, { meta: 'mcp-meta-1' });
    const b = await call(args, { meta: 'mcp-meta-1' });
    expect(messageId(a.body.result.content[0].text)).toBe(messageId(b.body.result.content[0].text));
    expect(await count('once via MCP meta')).toBe(1);
    const c = await call({ channel_id: channelId, content: 'not the same' }, { meta: 'mcp-meta-1' });
    expect(c.body.result.isError).toBe(true);
    expect(c.body.result.content[0].text).toMatch(/idempotency_conflict/);
    expect(await count('not the same')).toBe(0);
    const bad = await call(args, { meta: 'has space' });
    expect(bad.body.result.isError).toBe(true);
  });

  it('without a key, every call creates a message', async () => {
    const args = { channel_id: channelId, content: 'twice' };
    await call(args);
    await call(args);
    expect(await count('twice')).toBe(2);
  });

  it('a request that dies after its write committed is replayed by a retry, not run again', async () => {
    // The server side of POST /api/channels/{id}/messages with a key, up to the point where the change
    // has committed, then the request dies before answering (as in a crash or a lost connection).
    const services = srv.app.services;
    const actor = await authenticateBotKey(services, bot.key);
    const input = { content: 'committed, then the request died', channel_id: channelId };
    const died = await withIdempotency(
      services,
      actor,
      'died-after-commit',
      { operation: sendMessage.name, input, statusOf: () => 201 },
      async (idempotency) => {
        await runOperation(sendMessage, { actor, services, requestId: 'test', idempotency }, { ...input });
        throw new Error('the process died before answering');
      },
    ).catch((e: Error) => e.message);
    expect(died).toBe('the process died before answering');
    expect(await count(input.content)).toBe(1);

    // The client retries with the same key: the answer is replayed, nothing is written twice.
    const retry = await bot.api.post(
      `/api/channels/${channelId}/messages`,
      { content: input.content },
      { headers: { 'idempotency-key': 'died-after-commit' } },
    );
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.content).toBe(input.content);
    expect(await count(input.content)).toBe(1);
  });

  it("a consumer woken by the request's events writes on its own, outside the request's record", async () => {
    const services = srv.app.services;
    const consumerWrites: Promise<unknown>[] = [];
    const unsubscribe = services.bus.subscribe((events) => {
      if (!events.some((e) => e.type === 'message.created')) return;
      // As a delivery worker would: its own write, started from the bus.
      consumerWrites.push(
        new Promise((r) => setImmediate(r)).then(() =>
          write(outsideRequest(services), async () => 'consumer'),
        ),
      );
    });
    try {
      const sent = await bot.api.post(
        `/api/channels/${channelId}/messages`,
        { content: 'woke a consumer' },
        { headers: { 'idempotency-key': 'consumer-1' } },
      );
      expect(sent.status).toBe(201);
      expect(consumerWrites.length).toBeGreaterThan(0);
      expect(await Promise.all(consumerWrites)).toEqual(consumerWrites.map(() => 'consumer'));
      const replay = await bot.api.post(
        `/api/channels/${channelId}/messages`,
        { content: 'woke a consumer' },
        { headers: { 'idempotency-key': 'consumer-1' } },
      );
      expect(replay.body).toEqual(sent.body);
    } finally {
      unsubscribe();
    }
  });
});
