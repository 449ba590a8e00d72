import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { TestBotSocket } from './helpers/bot-socket.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Socket delivery on two instances sharing one PostgreSQL database (docs/SOCKET.md, "Several
 * instances"): a bot with no webhook URL holds its socket on instance B while messages are posted on
 * instance A and on B. Both workers claim due deliveries; A leaves the bot's to B (which holds the
 * socket), so every event reaches the socket, is acked and recorded delivered.
 */
describe.skipIf(!process.env.DATABASE_URL)('socket delivery on two instances', () => {
  const instances: TestServer[] = [];
  let a: World;
  let owner: UserHandle;
  const sockets: TestBotSocket[] = [];

  beforeAll(async () => {
    const shared = { WORKROOM_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    const first = await startTestServer(shared);
    const db = first.app.services.config.database;
    if (db.kind !== 'postgres' || !db.schema) throw new Error('expected a PostgreSQL schema');
    instances.push(first, await startTestServer({ ...shared, WORKROOM_DATABASE_SCHEMA: db.schema }));
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
});
