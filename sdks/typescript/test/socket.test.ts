import { connect, createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { expectStatus } from '../../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../../server/test/helpers/server.js';
import { World, type BotHandle, type UserHandle } from '../../../server/test/helpers/world.js';
import { SocketReceiver, UpgradeRefused, type WebhookEvent } from '../src/index.js';

/**
 * SocketReceiver against a real server: a bot with no webhook URL (and the server's default SSRF
 * guard) receives over its socket, acks by resolving, is not handed a delivery twice after a dropped
 * connection, and answers slash commands. The lease is 1 s so that an unacked delivery comes back.
 */
describe('SocketReceiver', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle;
  const receivers: SocketReceiver[] = [];

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_SOCKET_LEASE: '1s' });
    w = await World.create(srv.url);
    admin = (await w.org()).admin;
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await srv.close();
  });

  async function socketBot(): Promise<{ bot: BotHandle; channelId: string }> {
    const bot = await w.bot(admin.api, {}, { events: ['message.created'] });
    const channelId = await w.channel(admin.api);
    expectStatus(await admin.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    return { bot, channelId };
  }
  const receiver = (bot: BotHandle) => {
    const r = new SocketReceiver({
      baseUrl: srv.url,
      apiKey: bot.key,
      reconnectMinMs: 50,
      reconnectMaxMs: 500,
    });
    receivers.push(r);
    return r;
  };
  const post = async (channelId: string, content: string) =>
    expectStatus(await admin.api.post(`/api/channels/${channelId}/messages`, { content }), 201).id as string;
  const deliveries = async (bot: BotHandle) =>
    expectStatus(await admin.api.get(`/api/bots/${bot.id}/deliveries`), 200).items as any[];

  it('receives typed events; a resolved handler acks the delivery', async () => {
    const { bot, channelId } = await socketBot();
    const r = receiver(bot);
    const got: { e: WebhookEvent<'message.created'>; id: string }[] = [];
    r.on('message.created', (e, ctx) => void got.push({ e, id: ctx.webhookId! }));
    await r.start();
    expect(r.connected).toBe(true);
    const id = await post(channelId, 'hi sdk');
    await expect.poll(() => got.length, { timeout: 10_000 }).toBe(1);
    expect(got[0]!.e.data).toMatchObject({ message_id: id, content: 'hi sdk' });
    await expect
      .poll(async () => (await deliveries(bot)).find((d) => d.id === got[0]!.id)?.state, { timeout: 10_000 })
      .toBe('delivered');
  });

  it('a handler that has not resolved holds the ack: the delivery comes back after the lease, handled once', async () => {
    const { bot, channelId } = await socketBot();
    const r = receiver(bot);
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    r.on('message.created', async () => {
      calls++;
      await gate;
    });
    await r.start();
    await post(channelId, 'slow');
    await expect
      .poll(async () => (await deliveries(bot))[0]?.attempts, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(1);
    // The lease (1 s) runs out: attempt 2 reaches the receiver, which does not run the handler again.
    await expect
      .poll(async () => (await deliveries(bot))[0]?.attempt_log?.[0]?.error ?? null, { timeout: 15_000 })
      .toContain('lease expired');
    release();
    await expect.poll(async () => (await deliveries(bot))[0]?.state, { timeout: 15_000 }).toBe('delivered');
    expect(calls).toBe(1);
  });

  it('a dropped connection reconnects; what was not acked comes again and is acked, handled once', async () => {
    const { bot, channelId } = await socketBot();
    const r = receiver(bot);
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    r.on('message.created', async (e) => {
      seen.push(e.data.content);
      if (e.data.content === 'across a drop') await gate;
    });
    await r.start();
    await post(channelId, 'across a drop');
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    r.dropConnection();
    await expect.poll(() => r.connections, { timeout: 10_000 }).toBe(2);
    release();
    await post(channelId, 'after the drop');
    await expect
      .poll(async () => (await deliveries(bot)).map((d) => d.state), { timeout: 15_000 })
      .toEqual(['delivered', 'delivered']);
    expect(seen).toEqual(['across a drop', 'after the drop']);
  });

  it('answers a slash command with the handler’s reply; a throwing handler nacks', async () => {
    const { bot, channelId } = await socketBot();
    const r = receiver(bot);
    r.command('sdkecho', (cmd) => `echo: ${cmd.args}`);
    r.on('message.created', (e) => {
      if (e.data.content === 'boom') throw new Error('boom');
    });
    await r.start();
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'sdkecho', description: 'e' }),
      201,
    );
    const res = await admin.api.post('/api/commands/execute', {
      text: '/sdkecho hello',
      channel_id: channelId,
    });
    expect(res.body).toMatchObject({ delivery: { status: 'delivered' }, reply: { content: 'echo: hello' } });
    await post(channelId, 'boom');
    await expect
      .poll(async () => (await deliveries(bot))[0]?.attempt_log?.[0]?.error, { timeout: 10_000 })
      .toBe('nacked by the bot: boom');
  });

  it('a server that stops answering is taken for dead after two heartbeats: the receiver reconnects', async () => {
    // A stand-in server: says ready, then on the first connection reads nothing more (no pongs).
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    let accepted = 0;
    wss.on('connection', (ws) => {
      accepted++;
      ws.send(JSON.stringify({ type: 'ready', bot_id: 'b', lease_ms: 1000, heartbeat_ms: 100 }));
      if (accepted === 1) (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    });
    await new Promise((r) => wss.once('listening', r));
    const port = (wss.address() as AddressInfo).port;
    const r = new SocketReceiver({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'wrk_bot_test',
      heartbeatMs: 100,
      reconnectMinMs: 20,
      logger: { error: () => undefined, warn: () => undefined },
    });
    try {
      await r.start();
      await expect.poll(() => r.connections, { timeout: 10_000 }).toBe(2);
    } finally {
      await r.stop();
      for (const c of wss.clients) c.terminate();
      await new Promise((resolve) => wss.close(resolve));
    }
  });

  it('start() keeps trying while the server cannot be reached, and connects once it can', async () => {
    const { bot } = await socketBot();
    // A port nothing listens on yet; after a moment a relay to the server opens on it.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const target = new URL(srv.url);
    const relay = createServer((c) => {
      const u = connect(Number(target.port), target.hostname);
      c.pipe(u).pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    const warnings: string[] = [];
    const r = new SocketReceiver({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: bot.key,
      reconnectMinMs: 100,
      reconnectMaxMs: 200,
      logger: { warn: (m: string) => void warnings.push(m), error: () => {} },
    });
    receivers.push(r);
    const started = r.start({ timeoutMs: 20_000 });
    await expect.poll(() => warnings.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
    await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
    try {
      await started;
      expect(r.connected).toBe(true);
      expect(warnings[0]).toMatch(/^connect failed/);
      await r.stop();
    } finally {
      await new Promise((resolve) => relay.close(resolve));
    }
  });

  it('start() gives up after its time-out when the server stays unreachable', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const r = new SocketReceiver({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'wrk_bot_whatever',
      reconnectMinMs: 50,
      reconnectMaxMs: 100,
      logger: { warn: () => {}, error: () => {} },
    });
    const t0 = performance.now();
    const err = await r.start({ timeoutMs: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UpgradeRefused);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(350);
    expect(r.connected).toBe(false);
  });

  it('start() rejects when the key is refused', async () => {
    const r = new SocketReceiver({ baseUrl: srv.url, apiKey: 'wrk_bot_invalid' });
    const err = await r.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpgradeRefused);
    expect((err as UpgradeRefused).status).toBe(401);
  });
});
