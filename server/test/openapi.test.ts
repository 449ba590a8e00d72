import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/**
 * The OpenAPI document describes what the server really does: every response of a scenario that
 * exercises the endpoints is validated against the schema the document declares for its path, method
 * and status.
 */
describe('OpenAPI document', () => {
  let srv: TestServer;
  let w: World;
  let doc: any;
  const exchanges: RecordedExchange[] = [];

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    Api.recorder = (x) => exchanges.push(x);
  });
  afterAll(async () => {
    Api.recorder = undefined;
    await srv.close();
  });

  it('is OpenAPI 3.1 with bearer auth and the error shape', () => {
    expect(doc.openapi).toBe('3.1.0');
    // The test server listens on PORT=0 without WORKROOM_PUBLIC_URL: its public URL names the port bound.
    expect(doc.servers).toEqual([{ url: `http://localhost:${new URL(srv.url).port}` }]);
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/api/bots/auth'].post).toBeDefined();
    expect(
      doc.paths['/api/bots/{botId}/api-keys'].post.requestBody.content['application/json'].schema.properties,
    ).toHaveProperty('expires_in_days');
    // path parameters are not repeated in the body
    expect(
      doc.paths['/api/bots/{botId}/api-keys'].post.requestBody.content['application/json'].schema.properties,
    ).not.toHaveProperty('bot_id');
    expect(doc.paths['/api/channels/{channelId}/messages'].get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(['channelId', 'limit']),
    );
  });

  it('every response of a full scenario matches the documented schema', async () => {
    // A scenario touching the management and bot endpoints, success and failure alike.
    const org = await w.org();
    const admin = org.admin.api;
    const u = await w.user({ organization_id: org.id, department: 'Ops' });
    await admin.get('/api/auth/me');
    await admin.get('/api/organizations');
    await admin.get('/api/users', { query: { department: 'op', limit: 5 } });
    await admin.get(`/api/users/${u.id}`);
    await admin.patch(`/api/users/${u.id}`, { display_name: 'Renamed' });
    const chan = await w.channel(admin);
    await admin.get('/api/channels');
    await admin.get(`/api/channels/${chan}`);
    await admin.patch(`/api/channels/${chan}`, { description: 'about' });
    await admin.post(`/api/channels/${chan}/members`, { user_id: u.id });
    await admin.get(`/api/channels/${chan}/members`);
    await admin.post(`/api/channels/${chan}/messages`, { content: 'hi', content_html: '<b>hi</b>' });
    await admin.get(`/api/channels/${chan}/messages`);
    await admin.delete(`/api/channels/${chan}/members/users/${u.id}`);
    const { projectId, topicId } = await w.project(admin);
    await admin.get('/api/projects');
    await admin.get(`/api/projects/${projectId}`);
    await admin.get(`/api/projects/${projectId}/topics`);
    await admin.post(`/api/topics/${topicId}/messages`, { content: 'topic msg' });
    await admin.get(`/api/topics/${topicId}/messages`);
    const dm = expectStatus(await admin.post('/api/dm-rooms', { user_ids: [u.id] }), 201);
    await admin.get('/api/dm-rooms');
    await admin.post(`/api/dm-rooms/${dm.id}/messages`, { content: 'dm' });
    await admin.get(`/api/dm-rooms/${dm.id}/messages`);
    const bot = await w.bot(
      admin,
      { scopes: ['messages:read'] },
      { name: uniq('b'), webhook_url: 'https://example.test/hook', events: ['message.created'] },
    );
    await admin.post(`/api/projects/${projectId}/members`, { bot_id: bot.id });
    await admin.post(`/api/channels/${chan}/members`, { bot_id: bot.id });
    await admin.delete(`/api/channels/${chan}/members/bots/${bot.id}`);
    await admin.get('/api/bots');
    await admin.get(`/api/bots/${bot.id}`);
    await admin.patch(`/api/bots/${bot.id}`, { description: 'd' });
    await admin.get(`/api/bots/${bot.id}/api-keys`);
    await admin.post(`/api/bots/${bot.id}/webhook-secret`);
    await bot.api.post('/api/bots/auth');
    await bot.api.get(`/api/topics/${topicId}/messages`);
    await bot.api.post(`/api/topics/${topicId}/messages`, { content: 'no scope' }); // 403
    await admin.delete(`/api/bots/${bot.id}/api-keys/${bot.keyId}`);
    await bot.api.post('/api/bots/auth'); // 401
    await admin.post('/api/channels', {}); // 400
    await admin.get('/api/channels/00000000-0000-4000-8000-000000000000'); // 404
    await admin.delete(`/api/bots/${bot.id}`);
    await w.admin.api.post('/api/organizations', { name: uniq('o') });
    await admin.post('/api/auth/logout');

    const { problems, validated } = checkAgainstOpenApi(doc, exchanges);
    expect(problems).toEqual([]);
    expect(validated).toBeGreaterThan(45);
    // error answers were validated too
    expect(exchanges.some((x) => x.status === 403)).toBe(true);
    expect(exchanges.some((x) => x.status === 401)).toBe(true);
  });
});
