import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/**
 * Agent grants on two instances of one PostgreSQL database (behind a load balancer): the write budget
 * is one bucket for both, dry runs on either spend none of it, and a change of grants on one applies
 * on the other from the next request. SQLite is one process's file, so this runs on PostgreSQL only.
 */
describe.skipIf(!process.env.DATABASE_URL)('agent grants across two instances', () => {
  let a: TestServer;
  let b: TestServer;
  let w: World;
  let botId: string;
  let channel: string;
  const encryptionKey = randomBytes(32).toString('base64');

  beforeAll(async () => {
    a = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey });
    b = await startTestServer({ WORKROOM_ENCRYPTION_KEY: encryptionKey, ...sameDatabaseAs(a) });
    w = await World.create(a.url);
    botId = expectStatus(await w.admin.api.post('/api/bots', { name: uniq('agent') }), 201).bot_id;
    channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: botId }), 201);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('writes_per_hour is one budget for both instances; dry runs on either spend none of it', async () => {
    const k = expectStatus(
      await w.admin.api.post(`/api/bots/${botId}/api-keys`, { grants: { writes_per_hour: 4 } }),
      201,
    );
    const post = (srv: TestServer, content: string, dry = false) =>
      w.anon
        .as(k.key)
        .post(
          new URL(`/api/channels/${channel}/messages`, srv.url).href,
          { content },
          dry ? { headers: { 'x-dry-run': 'true' } } : {},
        );
    for (let i = 0; i < 6; i++) expect((await post(i % 2 ? a : b, `dry ${i}`, true)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(i % 2 ? a : b, `real ${i}`)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 429, 429]);
    const refused = await post(a, 'again');
    expect([refused.status, refused.body.error.code, refused.body.error.grant]).toEqual([
      429,
      'write_budget_exceeded',
      'writes_per_hour',
    ]);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const list = expectStatus(await w.admin.api.get(`/api/channels/${channel}/messages`), 200);
    const contents = (list.items as { content: string }[]).map((m) => m.content);
    expect(contents.filter((c) => c.startsWith('real')).sort()).toEqual([
      'real 0',
      'real 1',
      'real 2',
      'real 3',
    ]);
    expect(contents.some((c) => c.startsWith('dry'))).toBe(false);
  });

  it('grants changed through one instance apply on the other from the next request', async () => {
    const k = expectStatus(await w.admin.api.post(`/api/bots/${botId}/api-keys`, {}), 201);
    const send = (srv: TestServer) =>
      w.anon.as(k.key).post(new URL(`/api/channels/${channel}/messages`, srv.url).href, { content: 'x' });
    expect((await send(b)).status).toBe(201);
    expectStatus(
      await w.anon
        .as(w.admin.token)
        .patch(new URL(`/api/bots/${botId}/api-keys/${k.id}`, a.url).href, { grants: { read_only: true } }),
      200,
    );
    const r = await send(b);
    expect([r.status, r.body.error.grant]).toEqual([403, 'read_only']);
  });
});
