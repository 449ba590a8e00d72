import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { TestBotSocket } from './helpers/bot-socket.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Socket delivery (docs/SOCKET.md) end to end: a real server, bots that open `GET /api/bots/socket`
 * with their keys and no webhook URL, the default SSRF guard (private URLs not allowed), and a lease
 * of 2 s so that unacknowledged deliveries come back within the test.
 */
describe('socket delivery', () => {
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let channel: string;
  const sockets: TestBotSocket[] = [];

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_SOCKET_LEASE: '2s' });
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.drop()));
    await srv.close();
  });

  /** A bot of `owner` with no webhook URL, subscribed to message.created, member of `channel`. */
  async function socketBot(key: Record<string, unknown> = {}): Promise<BotHandle> {
    const bot = await w.bot(owner.api, key, { events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    return bot;
  }
  const connect = async (bot: BotHandle, opts: { autoAck?: boolean; path?: string } = {}) => {
    const s = await TestBotSocket.connect(srv.url, bot.key, opts);
    sockets.push(s);
    return s;
  };
  const post = async (content: string) =>
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content }), 201).id as string;
  const deliveries = async (bot: { id: string }) =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`), 200).items as any[];
  const delivery = async (bot: { id: string }, id: string) =>
    (await deliveries(bot)).find((d) => d.id === id);
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => ({ status: 101, body: '' }),
      (e: { status?: number; body?: string }) => ({ status: e.status, body: e.body ?? '' }),
    );

  it('refuses a missing or bad key, a user token, a key without messages:read and another bot', async () => {
    const bot = await socketBot();
    expect((await refusal(TestBotSocket.connect(srv.url, undefined))).status).toBe(401);
    expect((await refusal(TestBotSocket.connect(srv.url, 'wrk_bot_nonsense'))).status).toBe(401);
    expect((await refusal(TestBotSocket.connect(srv.url, owner.token))).status).toBe(401);
    const scoped = await socketBot({ scopes: ['tasks:read'] });
    const r = await refusal(TestBotSocket.connect(srv.url, scoped.key));
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.message).toContain('messages:read');
    // A key of another organization's bot cannot open this bot's socket (nor the other way round).
    const org2 = await w.org();
    const foreign = await w.bot(org2.admin.api);
    for (const [key, id] of [
      [foreign.key, bot.id],
      [bot.key, foreign.id],
    ] as const) {
      expect(
        (await refusal(TestBotSocket.connect(srv.url, key, { path: `/api/bots/${id}/socket` }))).status,
      ).toBe(403);
    }
    // Its own id in the path is fine; the server is still up after all of it.
    const own = await connect(bot, { path: `/api/bots/${bot.id}/socket` });
    expect(own.frames[0]).toMatchObject({ type: 'ready', bot_id: bot.id, lease_ms: 2000 });
  });

  it('a bot with no URL and the default SSRF guard gets its events over the socket; the ack delivers', async () => {
    const bot = await socketBot();
    const s = await connect(bot);
    const messageId = await post('hello socket');
    const f = await s.eventWith('hello socket');
    expect(f).toMatchObject({
      type: 'event',
      attempt: 1,
      event_type: 'message.created',
      bot_id: bot.id,
      data: { message_id: messageId, channel_id: channel, sender_id: owner.id, content: 'hello socket' },
    });
    expect(typeof f.delivery_id).toBe('string');
    expect(typeof f.event_id).toBe('string');
    s.ack(f.delivery_id!);
    await expect
      .poll(async () => (await delivery(bot, f.delivery_id!))?.state, { timeout: 10_000 })
      .toBe('delivered');
    const d = await delivery(bot, f.delivery_id!);
    expect(d.attempts).toBe(1);
    expect(d.attempt_log).toEqual([
      expect.objectContaining({
        attempt: 1,
        status: null,
        error: null,
        response_snippet: 'acked over the socket',
      }),
    ]);
    // A redelivery from the log goes over the socket too, with the same id (a new round of attempts).
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/deliveries/${f.delivery_id}/redeliver`), 202);
    const again = await s.until((x) => x.events.filter((e) => e.delivery_id === f.delivery_id)[1]);
    expect(again.attempt).toBe(1);
    s.ack(again.delivery_id!);
    await expect
      .poll(async () => (await delivery(bot, f.delivery_id!))?.state, { timeout: 10_000 })
      .toBe('delivered');
  });

  it('an unacked delivery comes again after the lease with the same id; an acked one never does', async () => {
    const bot = await socketBot();
    const s = await connect(bot);
    await post('acked');
    const a = await s.eventWith('acked');
    s.ack(a.delivery_id!);
    await post('not acked');
    const b = await s.eventWith('not acked');
    expect(b.attempt).toBe(1);
    // The sentinel: the unacked one's second attempt comes after its lease (2 s); the acked one,
    // sent before it, would have come back by then too.
    const again = await s.until((x) =>
      x.events.find((f) => f.delivery_id === b.delivery_id && f.attempt === 2),
    );
    expect(again.data.content).toBe('not acked');
    s.ack(b.delivery_id!);
    await expect
      .poll(async () => (await delivery(bot, b.delivery_id!))?.state, { timeout: 10_000 })
      .toBe('delivered');
    expect(s.events.filter((f) => f.delivery_id === a.delivery_id)).toHaveLength(1);
    const d = await delivery(bot, b.delivery_id!);
    expect(d.attempt_log.map((x: any) => x.error)).toEqual(['lease expired: no ack within 2 s', null]);
  });

  it('a dropped socket returns its unacked deliveries: the next socket gets them with the same id', async () => {
    const bot = await socketBot();
    const first = await connect(bot);
    await post('in flight');
    const f = await first.eventWith('in flight');
    await first.drop();
    const second = await connect(bot);
    const again = await second.eventWith('in flight');
    expect(again.delivery_id).toBe(f.delivery_id);
    expect(again.attempt).toBe(2);
    second.ack(again.delivery_id!);
    await expect
      .poll(async () => (await delivery(bot, f.delivery_id!))?.state, { timeout: 10_000 })
      .toBe('delivered');
    const d = await delivery(bot, f.delivery_id!);
    expect(d.attempt_log.map((x: any) => [x.attempt, x.error, x.response_snippet])).toEqual([
      [1, 'socket closed before the ack', null],
      [2, null, 'acked over the socket'],
    ]);
  });

  it('events while no socket is connected wait, and come as soon as one connects', async () => {
    const bot = await socketBot();
    await post('while away');
    await expect
      .poll(async () => (await deliveries(bot))[0]?.last_error, { timeout: 10_000 })
      .toContain('waiting for a socket');
    const [waiting] = await deliveries(bot);
    expect(waiting).toMatchObject({ state: 'pending', attempts: 0 });
    // The retry delay is 60 s: only the socket's connection can bring it now.
    const s = await connect(bot, { autoAck: true });
    const f = await s.eventWith('while away');
    expect(f.delivery_id).toBe(waiting.id);
    expect(f.attempt).toBe(1);
    await expect
      .poll(async () => (await delivery(bot, f.delivery_id!))?.state, { timeout: 10_000 })
      .toBe('delivered');
  });

  it('two sockets of one bot share its deliveries; each delivery goes to one of them', async () => {
    const bot = await socketBot();
    const a = await connect(bot, { autoAck: true });
    const b = await connect(bot, { autoAck: true });
    const n = 20;
    for (let i = 0; i < n; i++) await post(`share ${i}`);
    await expect.poll(() => a.events.length + b.events.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(n);
    expect(a.events.length).toBeGreaterThan(0);
    expect(b.events.length).toBeGreaterThan(0);
    const ids = [...a.events, ...b.events].map((f) => f.delivery_id);
    expect(new Set(ids).size).toBe(n);
    await expect
      .poll(async () => (await deliveries(bot)).filter((d) => d.state === 'delivered').length, {
        timeout: 10_000,
      })
      .toBe(n);
  });

  it('a nack is a failed attempt, retried on the usual schedule', async () => {
    const bot = await socketBot();
    const s = await connect(bot);
    await post('nacked');
    const f = await s.eventWith('nacked');
    s.nack(f.delivery_id!, 'not today');
    await expect
      .poll(async () => (await delivery(bot, f.delivery_id!))?.attempt_log?.[0]?.error, { timeout: 10_000 })
      .toBe('nacked by the bot: not today');
    expect((await delivery(bot, f.delivery_id!)).state).toBe('pending');
  });

  it('answers slash commands over the socket: the ack carries the reply', async () => {
    const bot = await socketBot();
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'sockping', description: 'p' }),
      201,
    );
    const s = await connect(bot);
    void s
      .until((x) => x.events.find((f) => f.event_type === 'command.invoked'))
      .then((f) => s.ack(f.delivery_id!, { content: `pong: ${f.data.args}` }));
    const res = await owner.api.post('/api/commands/execute', {
      text: '/sockping hello',
      channel_id: channel,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      delivery: { status: 'delivered', http_status: null },
      reply: { ephemeral: false, content: 'pong: hello' },
      reply_error: null,
    });
    const cmd = s.events.find((f) => f.event_type === 'command.invoked')!;
    expect(cmd.delivery_id).toBe(res.body.invocation_id);
    expect(cmd.data).toMatchObject({ command: 'sockping', args: 'hello', user_id: owner.id });
  });

  it('a click on the bot’s message action reaches it over the socket; it answers by editing', async () => {
    const bot = await socketBot();
    const s = await connect(bot, { autoAck: true });
    const actions = [{ type: 'button', id: 'approve', label: 'Approve', value: 'yes' }];
    const m = expectStatus(
      await bot.api.post(`/api/channels/${channel}/messages`, { content: 'ok?', actions }),
      201,
    );
    expectStatus(await owner.api.post(`/api/messages/${m.id}/actions`, { action_id: 'approve' }), 202);
    const f = await s.until((x) => x.events.find((e) => e.event_type === 'action.invoked'));
    expect(f.data).toMatchObject({ message_id: m.id, action_id: 'approve', value: 'yes' });
    expectStatus(await bot.api.put(`/api/messages/${m.id}`, { content: 'Approved', actions: null }), 200);
  });

  it('a malformed bot id in the path answers 400; the server stays up', async () => {
    expect(
      (await refusal(TestBotSocket.connect(srv.url, 'wrk_bot_x', { path: '/api/bots/%E0%A4%A/socket' })))
        .status,
    ).toBe(400);
    expectStatus(await w.anon.get('/api/health'), 200);
  });

  it('a bad frame is answered with an error, not a closed socket', async () => {
    const bot = await socketBot();
    const s = await connect(bot, { autoAck: true });
    s.ws.send('not json');
    s.send({ type: 'what' });
    await s.until((x) => x.frames.filter((f) => f.type === 'error').length >= 2 || undefined);
    s.send({ type: 'ping' });
    await s.until((x) => x.frames.find((f) => f.type === 'pong'));
    expect(s.closed).toBe(false);
  });
});

describe('socket heartbeats', () => {
  let srv: TestServer;
  afterAll(() => srv?.close());

  it('a peer that stops answering is cut off, and its unacked delivery goes to the next socket', async () => {
    srv = await startTestServer({ WORKROOM_SOCKET_HEARTBEAT: '200ms' });
    const w = await World.create(srv.url);
    const owner = await w.user({ role: 'member' });
    const channel = await w.channel(owner.api);
    const bot = await w.bot(owner.api, {}, { events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const silent = await TestBotSocket.connect(srv.url, bot.key);
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content: 'hb' }), 201);
    const f = await silent.eventWith('hb');
    // The bot's process hangs: nothing is read or answered any more (no pong), without a close.
    (silent.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    await expect.poll(() => srv.app.botSockets.socketsOf(bot.id), { timeout: 15_000 }).toBe(0);
    const next = await TestBotSocket.connect(srv.url, bot.key, { autoAck: true });
    const again = await next.eventWith('hb');
    expect(again.delivery_id).toBe(f.delivery_id);
    await next.close();
    silent.ws.terminate();
  });
});
