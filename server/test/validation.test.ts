import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/** Bad input answers a clean 4xx naming the field, and changes nothing. */
describe('input validation and limits', () => {
  let srv: TestServer;
  let w: World;
  let channelId: string;
  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_MAX_BODY_BYTES: String(300_000) });
    w = await World.create(srv.url);
    channelId = await w.channel(w.admin.api);
  });
  afterAll(() => srv.close());

  const messages = async () =>
    expectStatus(await w.admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: 100 } }), 200)
      .items;

  it('malformed JSON → 400 invalid_json', async () => {
    const res = await w.admin.api.request('POST', `/api/channels/${channelId}/messages`, {
      raw: '{"content": "x"',
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('a JSON array or string body → 400 naming the body', async () => {
    for (const raw of ['[1,2]', '"text"', 'null']) {
      const res = await w.admin.api.request('POST', `/api/channels/${channelId}/messages`, { raw });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_input');
    }
  });

  it('a non-JSON content type → 415', async () => {
    const res = await w.admin.api.request('POST', `/api/channels/${channelId}/messages`, {
      raw: 'content=hi',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('missing field, wrong type, unknown field → 400 naming the field', async () => {
    const missing = await w.admin.api.post(`/api/channels/${channelId}/messages`, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'invalid_input', field: 'content' });
    expect(missing.body.error.message).toMatch(/^content: /);

    const wrongType = await w.admin.api.post(`/api/channels/${channelId}/messages`, { content: 42 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.field).toBe('content');

    const unknown = await w.admin.api.post(`/api/channels/${channelId}/messages`, {
      content: 'x',
      colour: 'red',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/colour/);
  });

  it('content and content_html: 50,000 characters each, not one more', async () => {
    const before = (await messages()).length;
    const over = await w.admin.api.post(`/api/channels/${channelId}/messages`, {
      content: 'a'.repeat(50_001),
    });
    expect(over.status).toBe(400);
    expect(over.body.error.field).toBe('content');
    expect(over.body.error.message).toMatch(/50000/);
    const htmlOver = await w.admin.api.post(`/api/channels/${channelId}/messages`, {
      content: 'x',
      content_html: 'a'.repeat(50_001),
    });
    expect(htmlOver.status).toBe(400);
    expect(htmlOver.body.error.field).toBe('content_html');
    expect((await messages()).length).toBe(before);

    const atLimit = await w.admin.api.post(`/api/channels/${channelId}/messages`, {
      content: 'é'.repeat(50_000),
      content_html: 'b'.repeat(50_000),
    });
    expect(atLimit.status).toBe(201);
    expect(atLimit.body.content).toHaveLength(50_000);
  });

  it('content_html is sanitized on the server', async () => {
    const m = expectStatus(
      await w.admin.api.post(`/api/channels/${channelId}/messages`, {
        content: 'x',
        content_html:
          '<p onclick="evil()">Hi <script>alert(1)</script><a href="javascript:alert(1)">x</a><a href="https://ok.test">ok</a><iframe src="https://x"></iframe></p>',
      }),
      201,
    );
    expect(m.content_html).not.toMatch(/script|onclick|javascript:|iframe/);
    expect(m.content_html).toContain('href="https://ok.test"');
    expect(m.content_html).toContain('rel="noopener noreferrer nofollow"');
  });

  it('a body over WORKROOM_MAX_BODY_BYTES → 413, nothing written', async () => {
    const before = (await messages()).length;
    const res = await w.admin.api.post(`/api/channels/${channelId}/messages`, {
      content: 'x',
      content_html: 'y'.repeat(400_000),
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect((await messages()).length).toBe(before);
  });

  it('read limit: default 20, max 100', async () => {
    for (let i = 0; i < 25; i++)
      expectStatus(await w.admin.api.post(`/api/channels/${channelId}/messages`, { content: `m${i}` }), 201);
    expect(
      expectStatus(await w.admin.api.get(`/api/channels/${channelId}/messages`), 200).items,
    ).toHaveLength(20);
    const over = await w.admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: 101 } });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ field: 'limit' });
    expect(over.body.error.message).toMatch(/100/);
    for (const bad of ['0', '-1', '2.5', 'ten']) {
      expect(
        (await w.admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: bad } })).status,
      ).toBe(400);
    }
    const newestFirst = expectStatus(
      await w.admin.api.get(`/api/channels/${channelId}/messages`, { query: { limit: 2 } }),
      200,
    ).items;
    expect(newestFirst[0].content).toBe('m24');
    expect(newestFirst[1].content).toBe('m23');
  });

  it('invalid ids → 400; unknown ids → 404; unknown routes → 404; wrong method → 405', async () => {
    expect((await w.admin.api.get('/api/channels/not-a-uuid')).status).toBe(400);
    expect((await w.admin.api.get('/api/channels/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const noRoute = await w.admin.api.get('/api/nothing-here');
    expect(noRoute.status).toBe(404);
    expect(noRoute.body.error.code).toBe('not_found');
    const wrongMethod = await w.admin.api.put('/api/channels', {});
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toContain('POST');
  });

  it('missing or bad credentials → 401 with WWW-Authenticate', async () => {
    for (const token of [
      undefined,
      'garbage',
      'wrut_' + '0'.repeat(64),
      'wrbk_12345678_live_' + '0'.repeat(48),
      'wrbk_bad',
    ]) {
      const res = await w.anon.get('/api/channels', { token });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body.error.code).toBe('unauthenticated');
    }
  });

  it('duplicates → 409; the failed request leaves nothing behind', async () => {
    const email = `${uniq('dup')}@test.local`;
    expectStatus(
      await w.admin.api.post('/api/users', { email, display_name: 'A', password: 'password-1' }),
      201,
    );
    const again = await w.admin.api.post('/api/users', {
      email: email.toUpperCase(),
      display_name: 'B',
      password: 'password-1',
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    const name = uniq('dept');
    const failed = await w.admin.api.post('/api/users', {
      email,
      display_name: 'C',
      password: 'password-1',
      department: name,
    });
    expect(failed.status).toBe(409);
    const users = expectStatus(await w.admin.api.get('/api/users', { query: { department: name } }), 200);
    expect(users.items).toHaveLength(0);
  });

  it('tasks-style dates and enums are validated (role, events, scopes, key type, expiry)', async () => {
    const role = await w.admin.api.post('/api/users', {
      email: `${uniq('r')}@t.local`,
      display_name: 'R',
      password: 'password-1',
      role: 'king',
    });
    expect(role.status).toBe(400);
    expect(role.body.error.field).toBe('role');
    const short = await w.admin.api.post('/api/users', {
      email: `${uniq('r')}@t.local`,
      display_name: 'R',
      password: 'short',
    });
    expect(short.body.error.field).toBe('password');
    const badEvent = await w.admin.api.post('/api/bots', { name: 'b', events: ['message.exploded'] });
    expect(badEvent.status).toBe(400);
    expect(badEvent.body.error.field).toMatch(/^events/);
    const badUrl = await w.admin.api.post('/api/bots', { name: 'b', webhook_url: 'ftp://x.test/hook' });
    expect(badUrl.body.error.field).toBe('webhook_url');
    const bot = expectStatus(await w.admin.api.post('/api/bots', { name: 'b' }), 201);
    for (const [body, field] of [
      [{ scopes: ['messages:destroy'] }, 'scopes.0'],
      [{ key_type: 'prod' }, 'key_type'],
      [{ expires_in_days: 0 }, 'expires_in_days'],
      [{ expires_in_days: 1.5 }, 'expires_in_days'],
      [{ expires_in_days: '7' }, 'expires_in_days'],
      [{ scopes: 'messages:read' }, 'scopes'],
    ] as const) {
      const res = await w.admin.api.post(`/api/bots/${bot.bot_id}/api-keys`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.field).toBe(field);
    }
    const keys = expectStatus(await w.admin.api.get(`/api/bots/${bot.bot_id}/api-keys`), 200);
    expect(keys.items).toHaveLength(0);
  });

  it('a key issued with expires_in_days expires that many days later; without it, never', async () => {
    const bot = expectStatus(await w.admin.api.post('/api/bots', { name: 'exp' }), 201);
    const k = expectStatus(
      await w.admin.api.post(`/api/bots/${bot.bot_id}/api-keys`, { expires_in_days: 30 }),
      201,
    );
    const days = (Date.parse(k.expires_at) - Date.parse(k.created_at)) / 86_400_000;
    expect(days).toBe(30);
    const forever = expectStatus(
      await w.admin.api.post(`/api/bots/${bot.bot_id}/api-keys`, { scopes: [] }),
      201,
    );
    expect(forever.expires_at).toBeNull();
    expect(forever.scopes).toBeNull();
  });
});
