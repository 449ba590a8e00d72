import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectStatus } from '../../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../../server/test/helpers/server.js';
import { World, type BotHandle, type UserHandle } from '../../../server/test/helpers/world.js';
import { WebhookReceiver, WorkroomClient, type WebhookEvent } from '../src/index.js';

/**
 * Server → SDK end to end: the real server's webhook delivery signs and sends events to a real
 * WebhookReceiver, which verifies them with its default rule.
 */
describe('deliveries from a real server to the receiver', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_WEBHOOK_ALLOWED_RANGES: '127.0.0.0/8',
      WORKROOM_WEBHOOK_RETRY_DELAYS: '200ms,200ms',
      WORKROOM_WEBHOOK_TIMEOUT: '2s',
    });
    w = await World.create(srv.url);
    admin = (await w.org()).admin;
  });
  afterAll(() => srv.close());

  /** A bot whose webhook is `url`, subscribed to message.created, in a new channel; its secret. */
  async function botAt(url: string): Promise<{ bot: BotHandle; secret: string; channelId: string }> {
    const bot = await w.bot(admin.api, {}, { webhook_url: url, events: ['message.created'] });
    const { secret } = expectStatus(await admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    const channelId = await w.channel(admin.api);
    expectStatus(await admin.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    return { bot, secret, channelId };
  }

  it('a message.created and a slash command arrive signed, verified and typed', async () => {
    // The receiver needs the bot's secret and the bot the receiver's URL: register, start, then point.
    const { bot, secret, channelId } = await botAt('http://127.0.0.1:9/webhook');
    const receiver = new WebhookReceiver({ port: 0, host: '127.0.0.1', secret });
    const messages: WebhookEvent<'message.created'>[] = [];
    const commands: string[] = [];
    receiver.on('message.created', (e) => void messages.push(e));
    const client = new WorkroomClient({ baseUrl: srv.url, apiKey: bot.key });
    receiver.command('echo', (cmd) => {
      commands.push(cmd.args);
      return `echo: ${cmd.args}`;
    });
    // Long work: no reply in the answer, a reply through the response URL once done.
    receiver.command('report', (cmd) => {
      setTimeout(() => void client.respondToCommand(cmd, { content: `report on ${cmd.args} ready` }), 200);
    });
    await receiver.start();
    const webhook_url = `http://127.0.0.1:${receiver.port}/webhook`;
    expectStatus(await admin.api.patch(`/api/bots/${bot.id}`, { webhook_url }), 200);
    try {
      await client.registerCommand({ command: 'echo', description: 'Echo' });
      await client.registerCommand({ command: 'report', description: 'A slow report' });
      const posted = expectStatus(
        await admin.api.post(`/api/channels/${channelId}/messages`, { content: 'héllo 👋 "quoted"' }),
        201,
      );
      await vi.waitFor(() => expect(messages).toHaveLength(1), { timeout: 10_000 });
      expect(messages[0]).toMatchObject({
        event_type: 'message.created',
        bot_id: bot.id,
        data: {
          message_id: posted.id,
          content: 'héllo 👋 "quoted"',
          channel_id: channelId,
          sender_type: 'user',
        },
      });
      expectStatus(
        await admin.api.post('/api/commands/execute', { text: '/echo hi there', channel_id: channelId }),
        202,
      );
      await vi.waitFor(() => expect(commands).toEqual(['hi there']), { timeout: 10_000 });
      // The handler's return value becomes the bot's reply in the channel.
      await vi.waitFor(
        async () => {
          const list = expectStatus(await admin.api.get(`/api/channels/${channelId}/messages`), 200);
          expect(list.items.map((m: { content: string }) => m.content)).toContain('echo: hi there');
        },
        { timeout: 10_000, interval: 200 },
      );
      expectStatus(
        await admin.api.post('/api/commands/execute', { text: '/report Q3', channel_id: channelId }),
        202,
      );
      await vi.waitFor(
        async () => {
          const list = expectStatus(await admin.api.get(`/api/channels/${channelId}/messages`), 200);
          expect(list.items[0]).toMatchObject({
            content: 'report on Q3 ready',
            sender_type: 'bot',
            bot_id: bot.id,
          });
        },
        { timeout: 10_000, interval: 200 },
      );
    } finally {
      await receiver.stop();
    }
  });

  it('a delivery the server retries (its first answer lost) is handled once', async () => {
    // A relay in front of the receiver: it forwards every attempt, but answers the server's first one
    // with 503, as if the receiver's 200 had been lost; the server then retries the same webhook-id.
    let receiverPort = 0; // known once the receiver, which needs the bot's secret, has started
    const attempts: string[] = [];
    const relay = createServer((req, res) => {
      attempts.push(String(req.headers['webhook-id']));
      const up = httpRequest(
        { host: '127.0.0.1', port: receiverPort, path: req.url, method: req.method, headers: req.headers },
        (upRes) => {
          upRes.resume();
          upRes.on('end', () => {
            res.writeHead(attempts.length === 1 ? 503 : upRes.statusCode!);
            res.end();
          });
        },
      );
      // A reset on either side (the server's time-out under load, the receiver stopping) ends the
      // exchange; without listeners it would be an uncaught `read ECONNRESET` in the test run.
      up.on('error', () => res.destroy());
      req.on('error', () => up.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const { secret, channelId } = await botAt(
      `http://127.0.0.1:${(relay.address() as AddressInfo).port}/webhook`,
    );
    const real = new WebhookReceiver({ port: 0, host: '127.0.0.1', secret });
    let handled = 0;
    real.on('message.created', () => void handled++);
    await real.start();
    receiverPort = real.port!;
    try {
      expectStatus(
        await admin.api.post(`/api/channels/${channelId}/messages`, { content: 'once only' }),
        201,
      );
      await vi.waitFor(() => expect(attempts.length).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
      await real.idle();
      expect(new Set(attempts).size).toBe(1); // one event, one webhook-id, two attempts
      expect(handled).toBe(1);
    } finally {
      await real.stop();
      relay.closeAllConnections();
      await new Promise((r) => relay.close(r));
    }
  });
});
