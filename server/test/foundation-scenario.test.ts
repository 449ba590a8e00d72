import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/** The scenario of the foundation issue, end to end over HTTP. */
describe('foundation scenario', () => {
  let srv: TestServer;
  let w: World;
  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
  });
  afterAll(() => srv.close());

  it('admin creates a user, channel, project with topic, bot; key auth, revoke, expiry', async () => {
    const admin = w.admin.api;
    const user = expectStatus(
      await admin.post('/api/users', {
        email: `${uniq('u')}@x.test`,
        display_name: 'Ann',
        password: 'password-1',
        department: 'Engineering',
      }),
      201,
    );
    expect(user).toMatchObject({ role: 'member', status: 'active', department: 'Engineering' });
    expect(user).not.toHaveProperty('password_hash');

    const channel = expectStatus(await admin.post('/api/channels', { name: uniq('general') }), 201);
    expect(channel.id).toMatch(/^[0-9a-f-]{36}$/);
    const project = expectStatus(await admin.post('/api/projects', { name: 'Apollo' }), 201);
    const topic = expectStatus(
      await admin.post(`/api/projects/${project.id}/topics`, { name: 'Launch' }),
      201,
    );
    expect(topic.project_id).toBe(project.id);

    const bot = expectStatus(
      await admin.post('/api/bots', { name: 'helper', events: ['message.created'] }),
      201,
    );
    expect(bot.bot_id).toMatch(/^[0-9a-f-]{36}$/);
    const key = expectStatus(
      await admin.post(`/api/bots/${bot.bot_id}/api-keys`, {
        key_type: 'test',
        scopes: ['messages:read', 'messages:write'],
      }),
      201,
    );
    expect(key.key).toMatch(new RegExp(`^wrbk_${bot.bot_id.slice(0, 8)}_test_[0-9a-f]{48}$`));
    expect(key.scopes).toEqual(['messages:read', 'messages:write']);
    expect(key.expires_at).toBeNull();

    const auth = expectStatus(await w.anon.post('/api/bots/auth', undefined, { token: key.key }), 200);
    expect(auth).toMatchObject({
      bot_id: bot.bot_id,
      scopes: ['messages:read', 'messages:write'],
      key_type: 'test',
    });

    // The listing never shows the key, and usage was recorded.
    const keys = expectStatus(await admin.get(`/api/bots/${bot.bot_id}/api-keys`), 200);
    expect(keys.items).toHaveLength(1);
    expect(JSON.stringify(keys)).not.toContain(key.key);
    expect(keys.items[0]).toMatchObject({ use_count: 1, state: 'active' });
    expect(keys.items[0].last_used_at).not.toBeNull();

    expectStatus(await admin.delete(`/api/bots/${bot.bot_id}/api-keys/${key.id}`), 200);
    const after = await w.anon.post('/api/bots/auth', undefined, { token: key.key });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toBe('Bearer');
    expect(after.body.error.code).toBe('unauthenticated');
  });

  it('an expired key answers 401', async () => {
    const bot = await w.bot(w.admin.api, { expires_in_days: 1 });
    expectStatus(await bot.api.post('/api/bots/auth'), 200);
    // Let a day pass for this key: move its expiry into the past.
    await srv.app.services.storage.stores.db
      .updateTable('bot_api_keys')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', bot.keyId)
      .execute();
    const res = await bot.api.post('/api/bots/auth');
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
    const keys = expectStatus(await w.admin.api.get(`/api/bots/${bot.id}/api-keys`), 200);
    expect(keys.items[0].state).toBe('expired');
  });

  it('logout revokes the token', async () => {
    const u = await w.user();
    expectStatus(await u.api.get('/api/auth/me'), 200);
    expectStatus(await u.api.post('/api/auth/logout'), 200);
    expect((await u.api.get('/api/auth/me')).status).toBe(401);
  });

  it('wrong password and unknown email look the same', async () => {
    const a = await w.anon.post('/api/auth/login', { email: 'admin@test.local', password: 'nope-nope' });
    const b = await w.anon.post('/api/auth/login', { email: 'nobody@test.local', password: 'nope-nope' });
    expect(a.status).toBe(401);
    expect(b.status).toBe(401);
    expect(a.body).toEqual(b.body);
  });

  it('health reports the database', async () => {
    const h = expectStatus(await w.anon.get('/api/health'), 200);
    expect(h).toMatchObject({ status: 'ok', database: 'ok', dialect: srv.dialect });
  });
});
