import { randomBytes } from 'node:crypto';
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/** GET /api/realtime: authentication, bad input of every kind, limits. Nothing may crash the server. */
describe('realtime: protocol, authentication and abuse', () => {
  let srv: TestServer;
  let w: World;
  let user: UserHandle;
  let bot: BotHandle;
  let channel: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    user = await w.user({ organization_id: org.id });
    bot = await w.bot(org.admin.api);
    channel = await w.channel(user.api);
  });
  afterAll(() => srv.close());

  const healthy = async () => expect((await w.anon.get('/api/health')).status).toBe(200);

  /** A raw TCP connection that completed the WebSocket handshake (to send bytes no client library would). */
  async function rawUpgrade(): Promise<{ socket: Socket; closed: Promise<Buffer> }> {
    const { port } = new URL(srv.url);
    const socket = tcpConnect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const closed = new Promise<Buffer>((resolve) => socket.on('close', () => resolve(Buffer.concat(chunks))));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      'GET /api/realtime HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await new Promise<void>((resolve) =>
      socket.on('data', (d: Buffer) => {
        chunks.push(d);
        if (Buffer.concat(chunks).includes('\r\n\r\n')) resolve();
      }),
    );
    expect(Buffer.concat(chunks).toString()).toMatch(/^HTTP\/1\.1 101/);
    return { socket, closed };
  }

  it('a valid token gets ready and then events; ping is answered', async () => {
    const c = await LiveClient.connect(srv.url, user.token);
    expect(c.messages[0]).toEqual({ type: 'ready', seq: expect.any(Number) });
    c.send({ type: 'ping' });
    await c.waitFor((m) => m.type === 'pong');
    expectStatus(await user.api.post(`/api/channels/${channel}/messages`, { content: 'hi' }), 201);
    const ev = await c.waitFor((m) => m.type === 'event');
    expect(ev.seq).toBeGreaterThan(c.messages[0].seq);
    await c.close();
  });

  it('bad or missing credentials close with 4401, a bot key with 4403', async () => {
    const bad = new LiveClient(srv.url);
    await bad.opened();
    bad.send({ type: 'auth', token: 'not-a-token' });
    expect((await bad.waitClosed()).code).toBe(4401);

    const botKey = new LiveClient(srv.url);
    await botKey.opened();
    botKey.send({ type: 'auth', token: bot.key });
    const closed = await botKey.waitClosed();
    expect(closed.code).toBe(4403);
    expect(closed.reason).toMatch(/user token/);

    // A logged-out token is refused.
    const other = await w.user({ organization_id: (await w.org()).id });
    expectStatus(await other.api.post('/api/auth/logout', {}), 200);
    const gone = new LiveClient(srv.url);
    await gone.opened();
    gone.send({ type: 'auth', token: other.token });
    expect((await gone.waitClosed()).code).toBe(4401);

    // Authorization header on the upgrade (non-browser clients), with last_seq in the query.
    const viaHeader = new LiveClient(srv.url, { headers: { authorization: `Bearer ${user.token}` } });
    const ready = await viaHeader.waitFor((m) => m.type === 'ready');
    expect(ready.seq).toBeGreaterThan(0);
    await viaHeader.close();
    const badHeader = new LiveClient(srv.url, { headers: { authorization: 'Bearer nope' } });
    expect((await badHeader.waitClosed()).code).toBe(4401);
    const badQuery = new LiveClient(srv.url, {
      headers: { authorization: `Bearer ${user.token}` },
      query: '?last_seq=-1',
    });
    expect((await badQuery.waitClosed()).code).toBe(4400);
    await healthy();
  });

  it('a first message that is not a valid auth message closes with 4400', async () => {
    for (const first of ['hello', '{"type":"ping"}', '{"type":"auth"}', '{"type":"auth","token":5}', '[]']) {
      const c = new LiveClient(srv.url);
      await c.opened();
      c.send(first);
      const closed = await c.waitClosed();
      expect(closed.code, first).toBe(4400);
      expect(closed.reason.length).toBeGreaterThan(0);
    }
    const bin = new LiveClient(srv.url);
    await bin.opened();
    bin.ws.send(Buffer.from([1, 2, 3]));
    expect((await bin.waitClosed()).code).toBe(4400);
    await healthy();
  });

  it('after auth, bad messages get an error answer and the connection stays', async () => {
    const c = await LiveClient.connect(srv.url, user.token);
    c.send('not json');
    c.send({ type: 'auth', token: user.token });
    c.ws.send(Buffer.from([0xff, 0x00]));
    await c.waitFor(() => c.messages.filter((m) => m.type === 'error').length === 3);
    expect(c.messages.filter((m) => m.type === 'error').map((m) => m.code)).toEqual([
      'bad_message',
      'bad_message',
      'bad_message',
    ]);
    c.send({ type: 'ping' });
    await c.waitFor((m) => m.type === 'pong');
    expect(c.closed).toBeUndefined();
    await c.close();
  });

  it('an oversized frame closes that connection with 1009; garbage frames end the connection only', async () => {
    const big = await LiveClient.connect(srv.url, user.token);
    big.send('x'.repeat(64 * 1024));
    expect((await big.waitClosed()).code).toBe(1009);

    // Bytes that are no valid frame (reserved bits and opcode set, unmasked).
    const g = await rawUpgrade();
    g.socket.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x01]));
    const answer = await g.closed;
    // The server answered with a close frame (opcode 8) before ending the connection.
    expect(answer.subarray(answer.indexOf('\r\n\r\n') + 4)[0]).toBe(0x88);

    // Half a frame, then the client disappears.
    const h = await rawUpgrade();
    h.socket.write(Buffer.from([0x81, 0xfe, 0x10]));
    h.socket.destroy();
    await h.closed;

    // A non-upgrade path refuses the upgrade; a plain GET of the endpoint is not an upgrade.
    const wrong = new LiveClient(srv.url.replace(/\/?$/, '') + '/api/elsewhere');
    expect((await wrong.waitClosed()).code).toBe(1006);
    await healthy();
    const still = await LiveClient.connect(srv.url, user.token);
    await still.close();
  });

  it('a user has at most 10 connections at once', async () => {
    const u = await w.user({ organization_id: (await w.org()).id });
    const ten = await Promise.all(Array.from({ length: 10 }, () => LiveClient.connect(srv.url, u.token)));
    const eleventh = new LiveClient(srv.url);
    await eleventh.opened();
    eleventh.send({ type: 'auth', token: u.token });
    const closed = await eleventh.waitClosed();
    expect(closed.code).toBe(4429);
    await ten[0]!.close();
    // The count follows closes: one closed, one fits again.
    const again = await LiveClient.connect(srv.url, u.token);
    await again.close();
    await Promise.all(ten.map((c) => c.close()));
  });

  it('a resume point the server cannot serve answers reset, then ready and live events', async () => {
    const c = await LiveClient.connect(srv.url, user.token, 10 ** 12);
    const i = c.messages.findIndex((m) => m.type === 'reset');
    expect(i).toBe(0);
    expect(c.messages[1]).toMatchObject({ type: 'ready' });
    expectStatus(await user.api.post(`/api/channels/${channel}/messages`, { content: 'after reset' }), 201);
    await c.waitFor((m) => m.type === 'event' && m.event.data.content === 'after reset');
    await c.close();
  });
});
