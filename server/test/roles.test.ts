import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookSecretOf } from '../src/operations/bots/keys.js';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/** Role rules: system_admin everything; org_admin its org; dept_admin its department; member its own. */
describe('roles and bot management rules', () => {
  let srv: TestServer;
  let w: World;
  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
  });
  afterAll(() => srv.close());

  const newUser = (fields: Record<string, unknown> = {}) => ({
    email: `${uniq('u')}@t.local`,
    display_name: 'N',
    password: 'password-1',
    ...fields,
  });

  it('only a system_admin creates organizations and system_admins', async () => {
    const org = await w.org();
    expect((await org.admin.api.post('/api/organizations', { name: 'x' })).status).toBe(403);
    expect((await org.admin.api.post('/api/users', newUser({ role: 'system_admin' }))).status).toBe(403);
    expect((await w.admin.api.post('/api/users', newUser({ role: 'system_admin' }))).status).toBe(201);
  });

  it('org_admin manages users of its organization only', async () => {
    const a = await w.org();
    const b = await w.org();
    const u = expectStatus(
      await a.admin.api.post('/api/users', newUser({ role: 'dept_admin', department: 'Sales' })),
      201,
    );
    expect(u.role).toBe('dept_admin');
    // naming another organization looks like it does not exist
    const other = await a.admin.api.post('/api/users', newUser({ organization_id: b.id }));
    expect(other.status).toBe(404);
    // system_admin may name any organization
    const viaSys = expectStatus(
      await w.admin.api.post('/api/users', newUser({ organization_id: b.id })),
      201,
    );
    expect(viaSys.org_id).toBe(b.id);
  });

  it('dept_admin creates users in its own department only, never org_admins', async () => {
    const org = await w.org();
    const dept = await w.user({ role: 'dept_admin', department: 'Ops', organization_id: org.id });
    const created = expectStatus(await dept.api.post('/api/users', newUser()), 201);
    expect(created.department).toBe('Ops');
    expect((await dept.api.post('/api/users', newUser({ department: 'Finance' }))).status).toBe(403);
    expect(
      (await dept.api.post('/api/users', newUser({ role: 'org_admin', department: 'Ops' }))).status,
    ).toBe(403);
    // and may manage that user, but not one of another department
    expectStatus(await dept.api.patch(`/api/users/${created.id}`, { display_name: 'Renamed' }), 200);
    const outsider = expectStatus(
      await org.admin.api.post('/api/users', newUser({ department: 'Finance' })),
      201,
    );
    expect((await dept.api.patch(`/api/users/${outsider.id}`, { display_name: 'Nope' })).status).toBe(403);
    // nor move its own user into another department (existing or new): that user would leave its reach
    for (const department of ['Finance', `New ${Date.now()}`]) {
      const moved = await dept.api.patch(`/api/users/${created.id}`, { department });
      expect(moved.status, department).toBe(403);
    }
    const depts = expectStatus(await org.admin.api.get('/api/departments'), 200).items as { name: string }[];
    expect(depts.map((d) => d.name).sort()).toEqual(['Finance', 'Ops']);
    expect(expectStatus(await org.admin.api.get(`/api/users/${created.id}`), 200).department).toBe('Ops');
  });

  it('a member creates nobody and changes only itself (not its role)', async () => {
    const m = await w.user();
    expect((await m.api.post('/api/users', newUser())).status).toBe(403);
    expectStatus(await m.api.patch(`/api/users/${m.id}`, { display_name: 'Me' }), 200);
    expect((await m.api.patch(`/api/users/${m.id}`, { role: 'org_admin' })).status).toBe(403);
    const other = await w.user();
    expect((await m.api.patch(`/api/users/${other.id}`, { display_name: 'X' })).status).toBe(403);
  });

  it('deactivating a user revokes its tokens at once', async () => {
    const org = await w.org();
    const u = await w.user({ organization_id: org.id });
    expectStatus(await u.api.get('/api/auth/me'), 200);
    expectStatus(await org.admin.api.patch(`/api/users/${u.id}`, { status: 'deactivated' }), 200);
    expect((await u.api.get('/api/auth/me')).status).toBe(401);
    expect(
      (await w.anon.post('/api/auth/login', { email: u.email, password: 'user-password-1' })).status,
    ).toBe(401);
  });

  it('custom bots: managed by the registering user and org admins, not other members', async () => {
    const org = await w.org();
    const owner = await w.user({ organization_id: org.id });
    const other = await w.user({ organization_id: org.id });
    const bot = expectStatus(
      await owner.api.post('/api/bots', { name: 'mine', webhook_url: 'https://hooks.test/x' }),
      201,
    );
    expect(bot.type).toBe('custom');
    // other members see it, without its webhook URL, and cannot manage it
    const seen = expectStatus(await other.api.get(`/api/bots/${bot.bot_id}`), 200);
    expect(seen.webhook_url).toBeNull();
    expect((await other.api.patch(`/api/bots/${bot.bot_id}`, { name: 'stolen' })).status).toBe(403);
    expect((await other.api.post(`/api/bots/${bot.bot_id}/api-keys`, {})).status).toBe(403);
    expect((await other.api.post(`/api/bots/${bot.bot_id}/webhook-secret`)).status).toBe(403);
    expect((await other.api.delete(`/api/bots/${bot.bot_id}`)).status).toBe(403);
    // the owner and the org admin can
    expectStatus(await owner.api.patch(`/api/bots/${bot.bot_id}`, { description: 'd' }), 200);
    expectStatus(await org.admin.api.post(`/api/bots/${bot.bot_id}/api-keys`, {}), 201);
    expect(expectStatus(await owner.api.get(`/api/bots/${bot.bot_id}`), 200).webhook_url).toBe(
      'https://hooks.test/x',
    );
  });

  it('platform bots: only a system_admin registers and manages them; every organization sees them', async () => {
    const org = await w.org();
    expect((await org.admin.api.post('/api/bots', { name: 'p', type: 'platform' })).status).toBe(403);
    const p = expectStatus(
      await w.admin.api.post('/api/bots', { name: uniq('standup'), type: 'platform' }),
      201,
    );
    expect(p.type).toBe('platform');
    const list = expectStatus(await org.admin.api.get('/api/bots'), 200);
    expect(list.items.map((b: any) => b.bot_id)).toContain(p.bot_id);
    expect((await org.admin.api.patch(`/api/bots/${p.bot_id}`, { name: 'x' })).status).toBe(403);
    expect((await org.admin.api.post(`/api/bots/${p.bot_id}/api-keys`, {})).status).toBe(403);
    expectStatus(await w.admin.api.post(`/api/bots/${p.bot_id}/api-keys`, {}), 201);
    expect(
      (await w.anon.post('/api/bots', { name: 'sys', type: 'system' }, { token: w.admin.token })).status,
    ).toBe(400);
  });

  it('webhook secret: Standard Webhooks form, shown once, rotated on re-create', async () => {
    const bot = expectStatus(await w.admin.api.post('/api/bots', { name: 'signer' }), 201);
    const s1 = expectStatus(await w.admin.api.post(`/api/bots/${bot.bot_id}/webhook-secret`), 201);
    expect(s1.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s1.secret.slice(6), 'base64')).toHaveLength(32);
    const s2 = expectStatus(await w.admin.api.post(`/api/bots/${bot.bot_id}/webhook-secret`), 201);
    expect(s2.secret).not.toBe(s1.secret);
    const view = expectStatus(await w.admin.api.get(`/api/bots/${bot.bot_id}`), 200);
    expect(JSON.stringify(view)).not.toContain(s2.secret.slice(6, 20));
    // At rest it is encrypted, and it reads back as the latest one (what the webhook signer will use).
    const stored = await srv.app.services.storage.stores.bots.getWebhookSecret(bot.bot_id);
    expect(stored?.secret_encrypted).toMatch(/^v1:/);
    expect(stored?.secret_encrypted).not.toContain(s2.secret.slice(6));
    expect(await webhookSecretOf(srv.app.services, bot.bot_id)).toBe(s2.secret);
  });

  it('deleting a bot kills its keys at once', async () => {
    const bot = await w.bot(w.admin.api);
    expectStatus(await bot.api.post('/api/bots/auth'), 200);
    expectStatus(await w.admin.api.delete(`/api/bots/${bot.id}`), 200);
    expect((await bot.api.post('/api/bots/auth')).status).toBe(401);
    expect((await w.admin.api.get(`/api/bots/${bot.id}`)).status).toBe(404);
  });

  it('a disabled bot cannot authenticate until enabled again', async () => {
    const bot = await w.bot(w.admin.api);
    expectStatus(await w.admin.api.patch(`/api/bots/${bot.id}`, { status: 'disabled' }), 200);
    expect((await bot.api.post('/api/bots/auth')).status).toBe(401);
    expectStatus(await w.admin.api.patch(`/api/bots/${bot.id}`, { status: 'active' }), 200);
    expectStatus(await bot.api.post('/api/bots/auth'), 200);
  });

  it('user-token endpoints refuse bot keys and vice versa', async () => {
    const bot = await w.bot(w.admin.api);
    expect((await bot.api.post('/api/bots', { name: 'x' })).status).toBe(403);
    expect((await bot.api.get(`/api/bots/${bot.id}/api-keys`)).status).toBe(403);
    expect((await w.admin.api.post('/api/bots/auth')).status).toBe(403);
  });

  it('channels: private ones are invisible to non-members; posting needs membership', async () => {
    const org = await w.org();
    const a = await w.user({ organization_id: org.id });
    const b = await w.user({ organization_id: org.id });
    const priv = await w.channel(a.api, { is_private: true });
    const pub = await w.channel(a.api);
    expect((await b.api.get(`/api/channels/${priv}`)).status).toBe(404);
    expect((await b.api.get(`/api/channels/${priv}/messages`)).status).toBe(404);
    expectStatus(await b.api.get(`/api/channels/${pub}/messages`), 200);
    expect((await b.api.post(`/api/channels/${pub}/messages`, { content: 'hi' })).status).toBe(403);
    // joining a public channel yourself is allowed; then posting works
    expectStatus(await b.api.post(`/api/channels/${pub}/members`, { user_id: b.id }), 201);
    expectStatus(await b.api.post(`/api/channels/${pub}/messages`, { content: 'hi' }), 201);
    // a private channel needs a member to add you
    expect((await b.api.post(`/api/channels/${priv}/members`, { user_id: b.id })).status).toBe(404);
    expectStatus(await a.api.post(`/api/channels/${priv}/members`, { user_id: b.id }), 201);
    expectStatus(await b.api.get(`/api/channels/${priv}/messages`), 200);
    // the org admin sees everything in its org
    expectStatus(await org.admin.api.get(`/api/channels/${priv}`), 200);
  });

  it('bots reach only containers they were added to', async () => {
    const org = await w.org();
    const chan = await w.channel(org.admin.api);
    const { projectId, topicId } = await w.project(org.admin.api);
    const bot = await w.bot(org.admin.api);
    expect((await bot.api.get(`/api/channels/${chan}/messages`)).status).toBe(404);
    expect((await bot.api.post(`/api/topics/${topicId}/messages`, { content: 'x' })).status).toBe(404);
    expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { bot_id: bot.id }), 201);
    expectStatus(await org.admin.api.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    const m = expectStatus(
      await bot.api.post(`/api/channels/${chan}/messages`, { content: 'hello from bot' }),
      201,
    );
    expect(m).toMatchObject({ sender_type: 'bot', sender_id: bot.id, bot_id: bot.id });
    expectStatus(await bot.api.post(`/api/topics/${topicId}/messages`, { content: 'x' }), 201);
    const list = expectStatus(await bot.api.get('/api/channels'), 200);
    expect(list.items.map((c: any) => c.id)).toEqual([chan]);
  });

  it('a bot key without the scope is refused with 403 insufficient_scope naming it', async () => {
    const org = await w.org();
    const chan = await w.channel(org.admin.api);
    const bot = await w.bot(org.admin.api, { scopes: ['messages:read'] });
    expectStatus(await org.admin.api.post(`/api/channels/${chan}/members`, { bot_id: bot.id }), 201);
    expectStatus(await bot.api.get(`/api/channels/${chan}/messages`), 200);
    const res = await bot.api.post(`/api/channels/${chan}/messages`, { content: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'messages:write' });
    expect(res.body.error.message).toContain('messages:write');
  });

  it('DM rooms are reused for the same members and private to them', async () => {
    const org = await w.org();
    const a = await w.user({ organization_id: org.id });
    const b = await w.user({ organization_id: org.id });
    const r1 = expectStatus(await a.api.post('/api/dm-rooms', { user_ids: [b.id] }), 201);
    const r2 = expectStatus(await b.api.post('/api/dm-rooms', { user_ids: [a.id] }), 201);
    expect(r2.id).toBe(r1.id);
    expectStatus(await a.api.post(`/api/dm-rooms/${r1.id}/messages`, { content: 'psst' }), 201);
    expect((await org.admin.api.get(`/api/dm-rooms/${r1.id}/messages`)).status).toBe(404);
    expect(expectStatus(await b.api.get(`/api/dm-rooms/${r1.id}/messages`), 200).items[0].content).toBe(
      'psst',
    );
  });
});
