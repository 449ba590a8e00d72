import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import type { CommandForwarder } from '../src/operations/commands/forward.js';
import { TestBotSocket } from './helpers/bot-socket.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Socket delivery on two instances sharing one PostgreSQL database (docs/SOCKET.md, "Several
 * instances"): a bot with no webhook URL holds its socket on instance B while messages are posted on
 * instance A and on B. Both workers claim due deliveries; A leaves the bot's to B (which holds the
 * socket), so every event reaches the socket, is acked and recorded delivered. A slash command sent
 * through one instance for a bot whose socket is on the other is forwarded there
 * (operations/commands/forward.ts) and answered with the outcome there.
 */
describe.skipIf(!process.env.DATABASE_URL)('socket delivery on two instances', () => {
  const instances: TestServer[] = [];
  let a: World;
  let owner: UserHandle;
  const sockets: TestBotSocket[] = [];

  beforeAll(async () => {
    // A short webhook time-out: the slash commands' time-out tests wait it out.
    const shared = { WORKROOM_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    // Webhook time-outs: 5 s on A (which holds the command bots' sockets), 1 s on B (where users send
    // the commands), so that B gives up on a forwarded command while A still waits for the bot's ack.
    const first = await startTestServer({ ...shared, WORKROOM_WEBHOOK_TIMEOUT: '5s' });
    instances.push(
      first,
      await startTestServer({
        ...shared,
        ...sameDatabaseAs(first),
        WORKROOM_WEBHOOK_TIMEOUT: '1s',
      }),
    );
    a = await World.create(first.url);
    owner = await a.user({ role: 'member' });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.drop()));
    // The first instance owns the schema: it closes last and drops it.
    for (const s of instances.slice().reverse()) await s.close();
  });

  it('every event posted on either instance reaches the bot’s socket on the other one, delivered', async () => {
    const [A, B] = instances as [TestServer, TestServer];
    const channel = await a.channel(owner.api);
    const bot = await a.bot(owner.api, {}, { events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const s = await TestBotSocket.connect(B.url, bot.key, { autoAck: true });
    sockets.push(s);
    const onB = new Api(B.url, owner.token);
    const n = 30;
    for (let i = 0; i < n; i++) {
      const api = i % 2 === 0 ? owner.api : onB;
      expectStatus(await api.post(`/api/channels/${channel}/messages`, { content: `c${i}` }), 201);
    }
    await expect
      .poll(() => new Set(s.events.map((f) => f.data?.content)).size, { timeout: 30_000, interval: 100 })
      .toBe(n);
    const deliveries = async () =>
      expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query: { limit: '100' } }), 200)
        .items as any[];
    await expect
      .poll(async () => (await deliveries()).filter((d) => d.state === 'delivered').length, {
        timeout: 30_000,
      })
      .toBe(n);
    // Each delivered once per attempt that reached the socket: no attempt ended "socket closed"
    // or "not sent" on A; A left the rows to B without recording attempts.
    for (const d of await deliveries()) {
      expect(d.attempt_log.every((x: any) => x.error === null)).toBe(true);
    }
    expect(A.app.botSockets.connected(bot.id)).toBe(false);
    expect(B.app.botSockets.connected(bot.id)).toBe(true);
  });

  describe('slash commands for a bot whose only socket is on the other instance', () => {
    let channel: string;
    let seq = 0;
    /** A bot with no webhook URL and a command, its socket on A; B knows it is there. */
    async function botOnA(opts: { autoAck?: boolean } = {}) {
      const [A, B] = instances as [TestServer, TestServer];
      channel ??= await a.channel(owner.api);
      const bot = await a.bot(owner.api);
      expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
      const command = `fwd${++seq}${randomBytes(3).toString('hex')}`;
      expectStatus(await bot.api.post(`/api/bots/${bot.id}/commands`, { command, description: 'c' }), 201);
      const s = await TestBotSocket.connect(A.url, bot.key, opts);
      sockets.push(s);
      await expect.poll(() => B.app.botSockets.connectedElsewhere(bot.id), { timeout: 10_000 }).toBe(true);
      return { bot, command, s };
    }
    const onB = () => new Api((instances[1] as TestServer).url, owner.token);
    const execute = (command: string, args: string) =>
      onB().post('/api/commands/execute', { text: `/${command} ${args}`, channel_id: channel });
    const messagesWith = async (content: string) =>
      (
        expectStatus(
          await owner.api.get(`/api/channels/${channel}/messages`, { query: { limit: '100' } }),
          200,
        ).items as any[]
      ).filter((m) => m.content === content);

    it('is answered over the socket: delivered, the reply posted once', async () => {
      const { bot, command, s } = await botOnA();
      void s
        .until((x) => x.events.find((f) => f.event_type === 'command.invoked'))
        .then((f) => s.ack(f.delivery_id!, { content: `pong: ${f.data.args}` }));
      const res = await execute(command, 'over there');
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        delivery: {
          status: 'delivered',
          http_status: null,
          message: 'The bot received the command over its socket',
        },
        reply: { ephemeral: false, content: 'pong: over there' },
        reply_error: null,
      });
      const posted = await messagesWith('pong: over there');
      expect(posted.map((m) => m.id)).toEqual([res.body.reply.message_id]);
      expect(posted[0].bot_id ?? posted[0].author?.bot_id ?? bot.id).toBe(bot.id);
      const cmd = s.events.find((f) => f.event_type === 'command.invoked')!;
      expect(cmd.delivery_id).toBe(res.body.invocation_id);
      expect(cmd.data).toMatchObject({ command, args: 'over there', user_id: owner.id });
      // The requester removed the forwarded command's row once answered.
      const [A, B] = instances as [TestServer, TestServer];
      expect(await B.app.services.storage.commandForwards!.read(res.body.invocation_id)).toBeUndefined();
      expect(A.app.botSockets.connected(bot.id)).toBe(true);
    });

    it('a bot that does not ack in time: timeout, and its late ack posts nothing', async () => {
      const [A] = instances as [TestServer, TestServer];
      const { command, s } = await botOnA();
      const t0 = performance.now();
      const res = await execute(command, 'slow');
      const waited = performance.now() - t0;
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ delivery: { status: 'timeout' }, reply: null });
      expect(res.body.delivery.message).toContain('did not acknowledge');
      // B's time-out (1 s) + the margin (2 s), well before A's own (5 s) ran out.
      expect(waited).toBeGreaterThanOrEqual(3000);
      expect(waited).toBeLessThan(5000);
      // A still waits for the ack; it comes now, after B answered: A must not post the reply.
      const forwarder = A.app.services.commands.forwarder as CommandForwarder;
      expect(forwarder.holding).toBe(1);
      const f = s.events.find((x) => x.event_type === 'command.invoked')!;
      s.ack(f.delivery_id!, { content: 'too late' });
      await expect.poll(() => forwarder.holding, { timeout: 10_000 }).toBe(0);
      expect(await messagesWith('too late')).toEqual([]);
    });

    it('the socket closed before the ack: failed', async () => {
      const { command, s } = await botOnA();
      void s.until((x) => x.events.find((f) => f.event_type === 'command.invoked')).then(() => s.drop());
      const res = await execute(command, 'bye');
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ delivery: { status: 'failed' }, reply: null });
      expect(res.body.delivery.message).toContain('socket closed');
    });

    it('a bot with no socket anywhere and no URL: no_webhook, as on one instance', async () => {
      const [A, B] = instances as [TestServer, TestServer];
      channel ??= await a.channel(owner.api);
      const bot = await a.bot(owner.api);
      expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
      expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'fwdnone', description: 'c' }),
        201,
      );
      expect(A.app.botSockets.connected(bot.id) || B.app.botSockets.connectedElsewhere(bot.id)).toBe(false);
      const res = await execute('fwdnone', 'x');
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ delivery: { status: 'no_webhook' }, reply: null });
    });
  });
});
