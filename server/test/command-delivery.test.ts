import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

interface Received {
  body: string;
  headers: Record<string, string>;
}

/**
 * A bot's webhook on 127.0.0.1. `answer` decides per request; requests of the durable delivery worker
 * (which also carries command.invoked, with its own webhook-id) are recorded apart and answered 200.
 */
class Receiver {
  readonly direct: Received[] = [];
  readonly other: Received[] = [];
  answer: (r: Received, res: ServerResponse) => void = (_r, res) => res.end();
  server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = {
          body: Buffer.concat(chunks).toString('utf8'),
          headers: req.headers as Record<string, string>,
        };
        const env = JSON.parse(r.body);
        if (env.event_type === 'command.invoked' && r.headers['webhook-id'] === env.data.invocation_id) {
          this.direct.push(r);
          this.answer(r, res);
        } else {
          this.other.push(r);
          res.end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  json(value: unknown, status = 200) {
    this.answer = (_r, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('slash commands reach their bot (command.invoked at once, replies, response URL)', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let admin: UserHandle;
  let member: UserHandle;
  let other: UserHandle;
  let bot: BotHandle;
  let secret: string;
  let channel: string;
  const live: LiveClient[] = [];

  const execute = (text: string, extra: Record<string, unknown> = { channel_id: channel }) =>
    member.api.post('/api/commands/execute', { text, ...extra });
  const connect = async (u: UserHandle) => {
    const c = await LiveClient.connect(srv.url, u.token);
    live.push(c);
    return c;
  };

  beforeAll(async () => {
    rx = new Receiver();
    await rx.start();
    srv = await startTestServer({
      WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      WORKROOM_WEBHOOK_TIMEOUT: '1s',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    admin = org.admin;
    member = await w.user({ organization_id: org.id });
    other = await w.user({ organization_id: org.id });
    bot = await w.bot(admin.api, {}, { webhook_url: rx.url });
    secret = expectStatus(await admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201).secret;
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'weather', description: 'Weather' }),
      201,
    );
    channel = await w.channel(member.api);
    expectStatus(await member.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    expectStatus(await member.api.post(`/api/channels/${channel}/members`, { user_id: other.id }), 201);
  });
  afterAll(async () => {
    await Promise.all(live.map((c) => c.close()));
    await srv.close();
    await rx.close();
  });

  it('a registered command is in GET /api/commands at once', async () => {
    const list = expectStatus(await member.api.get('/api/commands'), 200);
    expect(list.items).toContainEqual(expect.objectContaining({ command: 'weather', bot_id: bot.id }));
  });

  it('the bot gets a signed command.invoked at once; its JSON answer is posted as its reply', async () => {
    rx.json({ content: 'Sunny in Berlin' });
    const watcher = await connect(other);
    const res = await execute('/weather Berlin');
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      status: 'dispatched',
      delivery: { status: 'delivered', http_status: 200 },
      reply: { ephemeral: false, content: 'Sunny in Berlin' },
      reply_error: null,
    });
    // The user never sees the response URL: it lets one post as the bot.
    expect(res.text).not.toContain('/api/commands/responses/');

    const r = rx.direct.find((x) => x.headers['webhook-id'] === res.body.invocation_id)!;
    expect(r).toBeDefined();
    // All three signatures verify with the bot's secret.
    expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
    const hmac = (t: string) => `sha256=${createHmac('sha256', secret).update(t).digest('hex')}`;
    expect(r.headers['x-workroom-signature']).toBe(hmac(r.body));
    const env = JSON.parse(r.body);
    const { signature, ...unsigned } = env;
    expect(signature).toBe(hmac(JSON.stringify(unsigned)));
    expect(env).toMatchObject({
      event_type: 'command.invoked',
      bot_id: bot.id,
      event_id: res.body.invocation_id,
      data: {
        command: 'weather',
        args: 'Berlin',
        text: '/weather Berlin',
        user_id: member.id,
        channel_id: channel,
        invocation_id: res.body.invocation_id,
      },
    });
    expect(env.data.response_url).toMatch(/\/api\/commands\/responses\/[\w-]+\.[\w-]+$/);
    expect(Date.parse(env.data.response_url_expires_at) - Date.now()).toBeGreaterThan(29 * 60_000);

    // The reply is a real message of the bot in the channel, and other clients hear of it.
    const msgs = expectStatus(await member.api.get(`/api/channels/${channel}/messages`), 200).items;
    expect(msgs[0]).toMatchObject({
      id: res.body.reply.message_id,
      content: 'Sunny in Berlin',
      sender_type: 'bot',
    });
    await watcher.waitFor((m) => m.type === 'event' && m.event.data.message_id === res.body.reply.message_id);
    // Sent once: the durable delivery path does not send command.invoked a second time (it would run twice).
    // The sentinel: the bot subscribes to message.created and a later message reaches it through the
    // durable path; the fan-out takes events in outbox order, so it has passed the command's by then.
    expectStatus(await admin.api.patch(`/api/bots/${bot.id}`, { events: ['message.created'] }), 200);
    const sentinel = expectStatus(
      await member.api.post(`/api/channels/${channel}/messages`, { content: 'sentinel' }),
      201,
    );
    await expect
      .poll(() => rx.other.some((x) => JSON.parse(x.body).data?.message_id === sentinel.id))
      .toBe(true);
    expectStatus(await admin.api.patch(`/api/bots/${bot.id}`, { events: [] }), 200);
    const rows = expectStatus(
      await admin.api.get(`/api/bots/${bot.id}/deliveries`, { query: { limit: '100' } }),
      200,
    ).items as { event_type: string }[];
    expect(rows.map((d) => d.event_type)).not.toContain('command.invoked');
    expect(rx.direct.filter((x) => x.headers['webhook-id'] === res.body.invocation_id)).toHaveLength(1);
    expect(rx.other.map((x) => JSON.parse(x.body).event_type)).not.toContain('command.invoked');
  });

  it('an ephemeral answer reaches only the invoker’s connections and is stored nowhere', async () => {
    rx.json({ content: 'only for you', ephemeral: true });
    const mine = [await connect(member), await connect(member)];
    const theirs = await connect(other);
    const before = expectStatus(await member.api.get(`/api/channels/${channel}/messages`), 200).items.length;
    const res = expectStatus(await execute('/weather secret'), 202);
    expect(res.reply).toMatchObject({
      ephemeral: true,
      content: 'only for you',
      message_id: null,
      delivered_to: 2,
    });
    for (const c of mine) {
      const m = await c.waitFor((x) => x.type === 'ephemeral');
      expect(m.message).toMatchObject({
        content: 'only for you',
        invocation_id: res.invocation_id,
        bot_id: bot.id,
        channel_id: channel,
        command: 'weather',
      });
    }
    // A message after it reaches `theirs`: by then an ephemeral message would have arrived too.
    const after = expectStatus(
      await other.api.post(`/api/channels/${channel}/messages`, { content: 'marker' }),
      201,
    );
    await theirs.waitFor((m) => m.type === 'event' && m.event.data.message_id === after.id);
    expect(theirs.messages.some((m) => m.type === 'ephemeral')).toBe(false);
    const now = expectStatus(await member.api.get(`/api/channels/${channel}/messages`), 200).items;
    expect(now.length).toBe(before + 1); // only the marker
    // Without a container, every reply is ephemeral.
    rx.json({ content: 'no place to post' });
    const nowhere = expectStatus(await execute('/weather', {}), 202);
    expect(nowhere.reply).toMatchObject({ ephemeral: true, content: 'no place to post', delivered_to: 2 });
  });

  it('the bot answers later through the response URL (5 uses, 30 minutes, forgery refused)', async () => {
    rx.answer = (_r, res) => res.writeHead(204).end();
    const res = expectStatus(await execute('/weather later'), 202);
    expect(res).toMatchObject({ delivery: { status: 'delivered', http_status: 204 }, reply: null });
    const env = JSON.parse(rx.direct.find((x) => x.headers['webhook-id'] === res.invocation_id)!.body);
    const url = new URL(env.data.response_url);
    const path = url.pathname;
    expect(url.origin).toBe(new URL(srv.app.services.config.publicUrl).origin);

    const later = expectStatus(await w.anon.post(path, { content: 'Rain expected' }), 200);
    expect(later).toMatchObject({
      ephemeral: false,
      content: 'Rain expected',
      invocation_id: res.invocation_id,
    });
    const msgs = expectStatus(await member.api.get(`/api/channels/${channel}/messages`), 200).items;
    expect(msgs[0]).toMatchObject({ id: later.message_id, sender_id: bot.id, content: 'Rain expected' });

    const c = await connect(member);
    const eph = expectStatus(await w.anon.post(path, { content: 'psst', ephemeral: true }), 200);
    expect(eph).toMatchObject({ ephemeral: true, delivered_to: 3, responses_left: 3 }); // 2 earlier + this one
    await c.waitFor((m) => m.type === 'ephemeral' && m.message.content === 'psst');

    // Bad bodies answer 400 and use nothing up.
    const bad = await w.anon.post(path, { content: 'x', extra: 1 });
    expect(bad.status).toBe(400);
    expect((await w.anon.post(path, { content: '' })).status).toBe(400);
    expect((await w.anon.post(path, { content: 'x', ephemeral: 'yes' })).body.error.field).toBe('ephemeral');
    expectStatus(await w.anon.post(path, { content: 'three' }), 200);
    expectStatus(await w.anon.post(path, { content: 'four' }), 200);
    expect(expectStatus(await w.anon.post(path, { content: 'five' }), 200).responses_left).toBe(0);
    const sixth = await w.anon.post(path, { content: 'six' });
    expect(sixth.status).toBe(409);

    // Forged, damaged and expired tokens look like no URL at all.
    const token = path.split('/').pop()!;
    const [payload, mac] = token.split('.');
    const forged = `${payload}.${mac!.slice(0, -2)}${mac!.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const t of [forged, 'nope', `${payload}`, `x.${mac}`]) {
      expect((await w.anon.post(`/api/commands/responses/${t}`, { content: 'x' })).status, t).toBe(404);
    }
    const old = srv.app.services.commands.tokens.issue(
      {
        invocationId: res.invocation_id,
        orgId: 'o',
        botId: bot.id,
        userId: member.id,
        command: 'weather',
        channelId: channel,
        topicId: null,
        dmRoomId: null,
      },
      Date.now() - 31 * 60_000,
    );
    expect((await w.anon.post(`/api/commands/responses/${old.token}`, { content: 'x' })).status).toBe(404);
  });

  it('a bot that fails, hangs, cannot be reached or gives a bad answer is reported clearly, never a 5xx', async () => {
    rx.json({ error: 'boom' }, 500);
    const failed = expectStatus(await execute('/weather'), 202);
    expect(failed).toMatchObject({ delivery: { status: 'failed', http_status: 500 }, reply: null });
    expect(failed.delivery.message).toMatch(/HTTP 500/);

    rx.answer = () => undefined; // never answers
    const t0 = Date.now();
    const hung = expectStatus(await execute('/weather'), 202);
    expect(hung.delivery).toMatchObject({ status: 'timeout', http_status: null });
    expect(hung.delivery.message).toMatch(/reached/);
    expect(Date.now() - t0).toBeLessThan(4000); // the 1 s webhook time-out, not the retry machinery

    rx.json({ content: '' });
    const invalid = expectStatus(await execute('/weather'), 202);
    expect(invalid.delivery.status).toBe('delivered');
    expect(invalid.reply_error).toMatch(/content/);
    rx.answer = (_r, res) => res.end('{"content": "unterminated');
    expect(expectStatus(await execute('/weather'), 202).reply_error).toMatch(/JSON/);
    rx.answer = (_r, res) => res.end('ok');
    expect(expectStatus(await execute('/weather'), 202)).toMatchObject({ reply: null, reply_error: null });

    // No webhook URL; no signing secret; an address nobody listens on.
    const quiet = await w.bot(admin.api);
    expectStatus(
      await quiet.api.post(`/api/bots/${quiet.id}/commands`, { command: 'quiet', description: 'q' }),
      201,
    );
    const q = expectStatus(await execute('/quiet', {}), 202);
    expect(q.delivery).toMatchObject({ status: 'no_webhook' });
    const unsigned = await w.bot(admin.api, {}, { webhook_url: rx.url });
    expectStatus(
      await unsigned.api.post(`/api/bots/${unsigned.id}/commands`, { command: 'unsigned', description: 'u' }),
      201,
    );
    const u = expectStatus(await execute('/unsigned', {}), 202);
    expect(u.delivery.status).toBe('no_secret');
    expect(u.delivery.message).toMatch(/webhook-secret/);
    const gone = await w.bot(admin.api, {}, { webhook_url: 'http://127.0.0.1:9/hook' });
    expectStatus(await admin.api.post(`/api/bots/${gone.id}/webhook-secret`), 201);
    expectStatus(
      await gone.api.post(`/api/bots/${gone.id}/commands`, { command: 'gone', description: 'g' }),
      201,
    );
    const g = expectStatus(await execute('/gone', {}), 202);
    expect(g.delivery.status).toBe('failed');
    expect(g.delivery.message).toMatch(/could not be reached/);
  });
});
