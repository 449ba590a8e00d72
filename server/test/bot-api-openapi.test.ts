import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * The OpenAPI document covers every bot-API endpoint and matches what they really answer: every
 * response of a scenario over those endpoints (successes and failures) is validated against the
 * schema the document declares for its path, method and status.
 */
describe('bot API in the OpenAPI document', () => {
  let srv: TestServer;
  let w: World;
  let doc: any;
  const exchanges: RecordedExchange[] = [];

  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_MAX_UPLOAD_BYTES: '4096',
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '1',
      WORKROOM_RATE_LIMIT_BOT_BURST: '1000',
    });
    w = await World.create(srv.url);
    doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
  });
  afterAll(async () => {
    Api.recorder = undefined;
    await srv.close();
  });

  const ENDPOINTS = [
    'post /api/bots/auth',
    'post /api/bots/{botId}/dm-messages',
    'post /api/bots/{botId}/api-keys',
    'delete /api/bots/{botId}/api-keys/{keyId}',
    'post /api/bots/{botId}/webhook-secret',
    'get /api/bots/{botId}/commands',
    'post /api/bots/{botId}/commands',
    'delete /api/bots/{botId}/commands/{commandName}',
    'put /api/messages/{id}',
    'delete /api/messages/{id}',
    'post /api/channels/{channelId}/bookmarks',
    'get /api/channels/{channelId}/bookmarks',
    'delete /api/channels/{channelId}/bookmarks/{messageId}',
    'get /api/channels/{channelId}/files',
    'post /api/channels/{channelId}/files',
    'get /api/files/{fileId}',
    'get /api/mentions/users',
    'get /api/hashtags/search',
    'get /api/hashtags/preview/{type}/{id}',
    'get /api/commands',
    'post /api/commands/execute',
  ];

  it('documents every endpoint of the spec’s REST table, with scopes and Idempotency-Key', () => {
    for (const e of ENDPOINTS) {
      const [method, path] = e.split(' ') as [string, string];
      expect(doc.paths[path]?.[method], e).toBeDefined();
    }
    const dm = doc.paths['/api/bots/{botId}/dm-messages'].post;
    expect(dm['x-bot-scope']).toBe('messages:write');
    expect(dm.parameters.map((p: any) => p.name)).toEqual(['botId', 'Idempotency-Key', 'X-Dry-Run']);
    expect(Object.keys(dm.requestBody.content['application/json'].schema.properties).sort()).toEqual([
      'actions',
      'content',
      'content_html',
      'user_id',
    ]);
    expect(doc.paths['/api/messages/{id}'].put.parameters.map((p: any) => p.name)).toContain(
      'Idempotency-Key',
    );
    expect(doc.paths['/api/bots/{botId}/commands'].get['x-bot-scope']).toBe('bots:commands:read');
    expect(doc.paths['/api/bots/{botId}/commands'].post['x-bot-scope']).toBe('bots:commands:write');
    const files = doc.paths['/api/channels/{channelId}/files'].get.parameters.map((p: any) => p.name);
    expect(files).toEqual(['channelId', 'q', 'type', 'sort', 'order', 'limit', 'offset']);
    expect(doc.paths['/api/commands/execute'].post.responses['202']).toBeDefined();
  });

  it('every response of a scenario over the bot API matches the documented schema', async () => {
    const org = await w.org();
    const admin = org.admin;
    const ann = await w.user({ organization_id: org.id });
    const bot = await w.bot(admin.api);
    const channel = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const { topicId } = await w.project(ann.api);
    const task = expectStatus(await ann.api.post(`/api/topics/${topicId}/tasks`, { title: 'T' }), 201);
    // Uploads go through fetch with FormData; record them by hand.
    const upload = async (token: string, data: Buffer) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(data)]), 'f.txt');
      const res = await fetch(`${srv.url}/api/channels/${channel}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      });
      const body = await res.json();
      exchanges.push({
        method: 'POST',
        path: `/api/channels/${channel}/files`,
        status: res.status,
        contentType: res.headers.get('content-type'),
        body,
      });
      return body as any;
    };

    Api.recorder = (x) => exchanges.push(x);
    const b = bot.api;
    const dm = expectStatus(
      await b.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id, content: 'hi' }),
      201,
    );
    await b.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id }); // 400
    await b.post(`/api/bots/${admin.id}/dm-messages`, { user_id: ann.id, content: 'x' }); // 403
    const idem = { headers: { 'idempotency-key': 'k1' } };
    await b.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id, content: 'once' }, idem); // 201
    await b.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id, content: 'twice' }, idem); // 409
    await b.put(`/api/messages/${dm.id}`, { content: 'edited' });
    await ann.api.put(`/api/messages/${dm.id}`, { content: 'not mine' }); // 403
    await b.delete(`/api/messages/${dm.id}`);
    await b.delete(`/api/messages/${dm.id}`); // 404
    await b.post(`/api/bots/${bot.id}/commands`, { command: 'go', description: 'Go' });
    await b.post(`/api/bots/${bot.id}/commands`, { command: 'go', description: 'Go' }); // 409
    await b.get(`/api/bots/${bot.id}/commands`);
    await ann.api.get(`/api/bots/${bot.id}/commands`);
    await ann.api.get('/api/commands');
    await ann.api.post('/api/commands/execute', { text: '/help' }); // 200
    await ann.api.post('/api/commands/execute', { text: '/go now', channel_id: channel }); // 202
    await ann.api.post('/api/commands/execute', { text: '/unknown' }); // 404
    await b.delete(`/api/bots/${bot.id}/commands/go`);
    const m = expectStatus(await ann.api.post(`/api/channels/${channel}/messages`, { content: 'm' }), 201);
    await ann.api.post(`/api/channels/${channel}/bookmarks`, { message_id: m.id });
    await ann.api.post(`/api/channels/${channel}/bookmarks`, { message_id: m.id }); // 409
    await ann.api.get(`/api/channels/${channel}/bookmarks`, { query: { sort: 'asc', limit: 10 } });
    await ann.api.delete(`/api/channels/${channel}/bookmarks/${m.id}`);
    await upload(ann.token, Buffer.from('hello'));
    await upload(bot.key, Buffer.alloc(5000)); // 413
    await ann.api.post(`/api/channels/${channel}/files`, { not: 'multipart' }); // 415
    await ann.api.get(`/api/channels/${channel}/files`, { query: { q: 'f', sort: 'size' } });
    await b.get(`/api/channels/${channel}/files`);
    await ann.api.get('/api/mentions/users', { query: { q: '', channel_id: channel } });
    await b.get('/api/mentions/users', { query: { q: 'a' } });
    await ann.api.get('/api/hashtags/search', { query: { q: 'T' } });
    await ann.api.get(`/api/hashtags/preview/channel/${channel}`);
    await ann.api.get(`/api/hashtags/preview/task/${task.task_id}`);
    await ann.api.get(`/api/hashtags/preview/project/${channel}`); // 404
    await ann.api.get(`/api/hashtags/preview/tag/${channel}`); // 400
    await admin.api.post(`/api/bots/${bot.id}/webhook-secret`);
    await admin.api.delete(`/api/bots/${bot.id}/api-keys/${bot.keyId}`);
    await b.get(`/api/bots/${bot.id}/commands`); // 401
    // 429: a bucket of one token.
    srv.app.services.config.rateLimits.bot.burst = 1;
    const fresh = await w.bot(admin.api);
    await fresh.api.post('/api/bots/auth');
    await fresh.api.post('/api/bots/auth'); // 429
    srv.app.services.config.rateLimits.bot.burst = 1000;
    Api.recorder = undefined;

    const { problems, statuses } = checkAgainstOpenApi(doc, exchanges);
    expect(problems).toEqual([]);
    expect([...statuses].sort()).toEqual([200, 201, 202, 400, 401, 403, 404, 409, 413, 415, 429]);
  });
});
