import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxReader } from '../src/events/outbox-reader.js';
import { ReaderFeed } from '../src/realtime/feed.js';
import { RealtimeHub } from '../src/realtime/hub.js';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Heartbeats, the auth deadline and shutdown. In production the heartbeat is every 30 s and a client
 * has 5 s to authenticate (WORKROOM_REALTIME_AUTH_TIMEOUT; DEFAULT_LIMITS in realtime/protocol.ts);
 * here a second hub with short timers runs on the test server's real services and database, on its
 * own port.
 */
describe('realtime: heartbeats, auth deadline, shutdown', () => {
  let srv: TestServer;
  let w: World;
  let user: UserHandle;
  let hub: RealtimeHub;
  let reader: OutboxReader;
  let http: Server;
  let url: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    user = await w.user({ organization_id: (await w.org()).id });
    const s = srv.app.services;
    reader = new OutboxReader(s.storage, s.bus, s.log);
    reader.start();
    hub = new RealtimeHub(s, new ReaderFeed(reader), { heartbeatMs: 150, authTimeoutMs: 300 });
    await hub.start();
    http = createServer((_req, res) => res.writeHead(404).end());
    hub.attach(http);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await hub.stop();
    await reader.stop();
    await new Promise((resolve) => http.close(resolve));
    await srv.close();
  });

  it('a client that sends no auth message in time is closed with 4401', async () => {
    const c = new LiveClient(url);
    await c.opened();
    const closed = await c.waitClosed(3000);
    expect(closed.code).toBe(4401);
    expect(closed.reason).toMatch(/no auth message/);
  });

  it('a connection that stops answering pings is ended; a live one stays', async () => {
    const alive = await LiveClient.connect(url, user.token);
    // A client whose pongs never come (a dead peer, as the server sees it).
    const dead = new WebSocket(`${url.replace('http', 'ws')}/api/realtime`, { autoPong: false });
    await new Promise((resolve) => dead.once('open', resolve));
    dead.send(JSON.stringify({ type: 'auth', token: user.token }));
    const closedCode = await new Promise<number>((resolve) => dead.once('close', (code) => resolve(code)));
    expect(closedCode).toBe(1006); // terminated, no close frame: the peer is taken for dead
    await new Promise((r) => setTimeout(r, 500)); // several heartbeats later
    expect(alive.closed).toBeUndefined();
    alive.send({ type: 'ping' });
    await alive.waitFor((m) => m.type === 'pong');
    await alive.close();
  });

  it('a session that ends (logout) ends the stream at the next heartbeat', async () => {
    const u = await w.user({ organization_id: (await w.org()).id });
    const c = await LiveClient.connect(url, u.token);
    expectStatus(await u.api.post('/api/auth/logout', {}), 200);
    const closed = await c.waitClosed(3000);
    expect(closed.code).toBe(4401);
    expect(closed.reason).toMatch(/session ended/);
  });

  it('the server shuts down promptly with clients connected; they get 1001', async () => {
    const other = await startTestServer();
    const ow = await World.create(other.url);
    const c = await LiveClient.connect(other.url, ow.admin.token);
    const t0 = Date.now();
    await other.close();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect((await c.waitClosed()).code).toBe(1001);
  });
  it('connections that have not authenticated are bounded in number (503 beyond)', async () => {
    const s = srv.app.services;
    const small = new RealtimeHub(s, new ReaderFeed(reader), { maxUnauthenticated: 2 });
    await small.start();
    const server = createServer((_req, res) => res.writeHead(404).end());
    small.attach(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const a = new LiveClient(base);
      const b = new LiveClient(base);
      await Promise.all([a.opened(), b.opened()]);
      const refused = new LiveClient(base);
      const status = await new Promise<number>((resolve) =>
        refused.ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
      );
      expect(status).toBe(503);
      // Once one of them authenticates, there is room again.
      a.send({ type: 'auth', token: user.token });
      await a.waitFor((m) => m.type === 'ready');
      const c = await LiveClient.connect(base, user.token);
      await Promise.all([a.close(), b.close(), c.close()]);
    } finally {
      await small.stop();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
