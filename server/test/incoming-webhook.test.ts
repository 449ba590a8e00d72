import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PublishedEvent } from '../src/events/bus.js';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * POST /api/webhooks/incoming/{botId} over real HTTP: the three ways to authenticate (bot key,
 * incoming token, signature), who is refused and how, bad bodies, containers the bot cannot reach,
 * Idempotency-Key, and that nothing is posted by a refused request.
 */
describe('incoming webhook', () => {
  let srv: TestServer;
  let w: World;
  let bot: BotHandle; // member of channelId, the project of topicId, and a DM room with ann
  let other: BotHandle; // another bot of the same organization, member of channelId too
  let ann: UserHandle;
  let channelId: string;
  let lonelyChannelId: string; // the bot is not a member
  let topicId: string;
  let dmRoomId: string;
  let foreignChannelId: string; // another organization's, the bot is not in it
  let secret: string;
  const events: PublishedEvent[] = [];

  beforeAll(async () => {
    srv = await startTestServer();
    srv.app.services.bus.subscribe((batch) => events.push(...batch));
    w = await World.create(srv.url);
    ann = await w.user();
    channelId = await w.channel(w.admin.api);
    lonelyChannelId = await w.channel(w.admin.api);
    bot = await w.bot(w.admin.api);
    other = await w.bot(w.admin.api);
    for (const b of [bot, other]) {
      expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { bot_id: b.id }), 201);
    }
    const project = await w.project(w.admin.api);
    topicId = project.topicId;
    expectStatus(
      await w.admin.api.post(`/api/projects/${project.projectId}/members`, { bot_id: bot.id }),
      201,
    );
    dmRoomId = expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id, content: 'hello' }),
      201,
    ).dm_room_id;
    const org = await w.org();
    foreignChannelId = await w.channel(org.admin.api);
    secret = expectStatus(await w.admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201).secret;
  });
  afterAll(() => srv.close());

  const path = (botId = bot.id) => `/api/webhooks/incoming/${botId}`;
  const messages = async (container = `/api/channels/${channelId}`) =>
    expectStatus(await w.admin.api.get(`${container}/messages`, { query: { limit: 100 } }), 200).items as {
      id: string;
      content: string;
    }[];
  const countOf = async (content: string) => (await messages()).filter((m) => m.content === content).length;
  const expectError = (res: ApiResponse, status: number, code: string, field?: string) => {
    expect(res.status, res.text).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toEqual(expect.any(String));
    if (field) expect(res.body.error.field).toBe(field);
  };

  describe('with the bot API key', () => {
    it('posts as the bot into its channel, topic and DM room and emits message.created', async () => {
      const content = uniq('key');
      const res = await bot.api.post(path(), { content, channel_id: channelId });
      const m = expectStatus(res, 201);
      expect(m).toMatchObject({ content, channel_id: channelId, sender_type: 'bot', sender_id: bot.id });
      expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await countOf(content)).toBe(1);
      const ev = events.find((e) => e.type === 'message.created' && e.data.message_id === m.id);
      expect(ev?.data).toMatchObject({
        content,
        channel_id: channelId,
        sender_id: bot.id,
        sender_type: 'bot',
      });

      const inTopic = expectStatus(await bot.api.post(path(), { content: 't', topic_id: topicId }), 201);
      expect(inTopic.topic_id).toBe(topicId);
      const inDm = expectStatus(
        await bot.api.post(path(), {
          content: 'd',
          dm_room_id: dmRoomId,
          content_html: '<b>d</b><script>x</script>',
        }),
        201,
      );
      expect(inDm.dm_room_id).toBe(dmRoomId);
      expect(inDm.content_html).toBe('<b>d</b>');
      const seen = expectStatus(await ann.api.get(`/api/dm-rooms/${dmRoomId}/messages`), 200).items;
      expect(seen.map((x: { id: string }) => x.id)).toContain(inDm.id);
    });

    it('refuses another bot’s key (403), a user token (403), no or bad credentials (401)', async () => {
      const content = uniq('refused');
      const body = { content, channel_id: channelId };
      expectError(await other.api.post(path(), body), 403, 'forbidden');
      expectError(await w.admin.api.post(path(), body), 403, 'forbidden');
      expectError(await w.anon.post(path(), body), 401, 'unauthenticated');
      expectError(
        await w.anon.post(path(), body, { token: `wrbk_${bot.id.slice(0, 8)}_live_${'0'.repeat(48)}` }),
        401,
        'unauthenticated',
      );
      expectError(
        await w.anon.post(path(), body, { headers: { authorization: 'Basic abc' } }),
        401,
        'unauthenticated',
      );
      expect(await countOf(content)).toBe(0);
    });

    it('refuses a revoked key (401) and a key without messages:write (403)', async () => {
      const b = await w.bot(w.admin.api);
      expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { bot_id: b.id }), 201);
      const content = uniq('revoked');
      const readOnly = expectStatus(
        await w.admin.api.post(`/api/bots/${b.id}/api-keys`, { scopes: ['messages:read'] }),
        201,
      ).key;
      expectError(
        await w.anon.post(path(b.id), { content, channel_id: channelId }, { token: readOnly }),
        403,
        'insufficient_scope',
      );
      expectStatus(await b.api.post(path(b.id), { content: uniq('before'), channel_id: channelId }), 201);
      expectStatus(await w.admin.api.delete(`/api/bots/${b.id}/api-keys/${b.keyId}`), 200);
      expectError(await b.api.post(path(b.id), { content, channel_id: channelId }), 401, 'unauthenticated');
      expect(await countOf(content)).toBe(0);
    });

    it('answers 404 for a path that is not a bot id', async () => {
      expectError(
        await bot.api.post('/api/webhooks/incoming/not-a-uuid', { content: 'x', channel_id: channelId }),
        404,
        'not_found',
      );
    });

    it('checks credentials before the path: a garbage token or none answers 401 even for a bad bot id', async () => {
      const anon = w.anon;
      const body = { content: 'x', channel_id: channelId };
      expectError(
        await anon.post('/api/webhooks/incoming/not-a-uuid?token=-1', body),
        401,
        'unauthenticated',
      );
      expectError(await anon.post('/api/webhooks/incoming/not-a-uuid', body), 401, 'unauthenticated');
    });
  });

  describe('with the incoming token', () => {
    it('is issued once by a manager, posts as the bot, rotates and is revoked', async () => {
      const issued = expectStatus(await w.admin.api.post(`/api/bots/${bot.id}/incoming-token`), 201);
      expect(issued.token).toMatch(/^writ_[0-9a-f]{64}$/);
      expect(issued.url).toContain(`/api/webhooks/incoming/${bot.id}?token=${issued.token}`);
      const state = expectStatus(await w.admin.api.get(`/api/bots/${bot.id}/incoming-token`), 200);
      expect(state).toEqual({ bot_id: bot.id, exists: true, created_at: issued.created_at });
      expect(JSON.stringify(state)).not.toContain(issued.token);

      const content = uniq('token');
      const m = expectStatus(
        await w.anon.post(path(), { content, channel_id: channelId }, { query: { token: issued.token } }),
        201,
      );
      expect(m).toMatchObject({ content, sender_type: 'bot', sender_id: bot.id });

      // The token is for its own bot only, and can only post.
      expectError(
        await w.anon.post(
          path(other.id),
          { content, channel_id: channelId },
          { query: { token: issued.token } },
        ),
        401,
        'unauthenticated',
      );
      expectError(
        await w.anon.get(`/api/channels/${channelId}/messages`, { query: { token: issued.token } }),
        401,
        'unauthenticated',
      );
      expectError(
        await w.anon.post(path(), { content, channel_id: channelId }, { query: { token: 'writ_nope' } }),
        401,
        'unauthenticated',
      );

      const rotated = expectStatus(await w.admin.api.post(`/api/bots/${bot.id}/incoming-token`), 201);
      expectError(
        await w.anon.post(path(), { content, channel_id: channelId }, { query: { token: issued.token } }),
        401,
        'unauthenticated',
      );
      expectStatus(
        await w.anon.post(
          path(),
          { content: uniq('rotated'), channel_id: channelId },
          { query: { token: rotated.token } },
        ),
        201,
      );
      expectStatus(await w.admin.api.delete(`/api/bots/${bot.id}/incoming-token`), 200);
      expectError(
        await w.anon.post(path(), { content, channel_id: channelId }, { query: { token: rotated.token } }),
        401,
        'unauthenticated',
      );
      expectError(await w.admin.api.delete(`/api/bots/${bot.id}/incoming-token`), 404, 'not_found');
      expect(await countOf(content)).toBe(1);
    });

    it('only the bot’s managers issue it: a plain member 403, another organization 404, a bot key 403', async () => {
      expectError(await ann.api.post(`/api/bots/${bot.id}/incoming-token`), 403, 'forbidden');
      const org = await w.org();
      expectError(await org.admin.api.post(`/api/bots/${bot.id}/incoming-token`), 404, 'not_found');
      expectError(await bot.api.post(`/api/bots/${bot.id}/incoming-token`), 403, 'forbidden');
    });

    it('stops working when the bot is disabled', async () => {
      const b = await w.bot(w.admin.api);
      expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { bot_id: b.id }), 201);
      const { token } = expectStatus(await w.admin.api.post(`/api/bots/${b.id}/incoming-token`), 201);
      expectStatus(
        await w.anon.post(path(b.id), { content: 'on', channel_id: channelId }, { query: { token } }),
        201,
      );
      expectStatus(await w.admin.api.patch(`/api/bots/${b.id}`, { status: 'disabled' }), 200);
      expectError(
        await w.anon.post(path(b.id), { content: 'off', channel_id: channelId }, { query: { token } }),
        401,
        'unauthenticated',
      );
    });
  });

  describe('with a signature of the body', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const workroomSigned = (body: string, ts = now(), key = secret) => ({
      'content-type': 'application/json',
      'webhook-timestamp': String(ts),
      'x-workroom-signature': `sha256=${createHmac('sha256', key).update(`${ts}.${body}`).digest('hex')}`,
    });

    it('X-Workroom-Signature over "<webhook-timestamp>.<body>" posts; a replay posts nothing more', async () => {
      const content = uniq('signed');
      const raw = JSON.stringify({ content, channel_id: channelId });
      const headers = workroomSigned(raw);
      const first = await w.anon.request('POST', path(), { raw, headers });
      const m = expectStatus(first, 201);
      expect(m).toMatchObject({ content, sender_id: bot.id });
      const replay = await w.anon.request('POST', path(), { raw, headers });
      expect(expectStatus(replay, 201).id).toBe(m.id);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      // The Idempotency-Key header is not signed: changing it does not make a replay new.
      const disguised = await w.anon.request('POST', path(), {
        raw,
        headers: { ...headers, 'idempotency-key': uniq('fresh') },
      });
      expect(expectStatus(disguised, 201).id).toBe(m.id);
      expect(await countOf(content)).toBe(1);
    });

    it('refuses a wrong signature, another key, a stale or missing timestamp', async () => {
      const content = uniq('badsig');
      const raw = JSON.stringify({ content, channel_id: channelId });
      const cases: Record<string, string>[] = [
        { ...workroomSigned(raw), 'x-workroom-signature': `sha256=${'0'.repeat(64)}` },
        workroomSigned(raw, now(), 'whsec_' + randomBytes(32).toString('base64')),
        workroomSigned(raw, now() - 600),
        workroomSigned(raw, now() + 600),
        { ...workroomSigned(raw), 'webhook-timestamp': 'yesterday' },
        Object.fromEntries(Object.entries(workroomSigned(raw)).filter(([k]) => k !== 'webhook-timestamp')),
        workroomSigned(JSON.stringify({ content: 'other', channel_id: channelId })), // signs another body
      ];
      for (const headers of cases) {
        expectError(await w.anon.request('POST', path(), { raw, headers }), 401, 'unauthenticated');
      }
      // A bot without a webhook secret cannot be called this way.
      expectError(
        await w.anon.request('POST', path(other.id), { raw, headers: workroomSigned(raw) }),
        401,
        'unauthenticated',
      );
      expect(await countOf(content)).toBe(0);
    });

    it('Standard Webhooks headers made by the standardwebhooks package work too', async () => {
      const content = uniq('stdwh');
      const raw = JSON.stringify({ content, channel_id: channelId });
      const id = `msg_${randomBytes(8).toString('hex')}`;
      const at = new Date();
      const headers = {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, at, raw),
      };
      expectStatus(await w.anon.request('POST', path(), { raw, headers }), 201);
      const replay = await w.anon.request('POST', path(), { raw, headers });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      const tampered = raw.replace(content, `${content}!`);
      expectError(await w.anon.request('POST', path(), { raw: tampered, headers }), 401, 'unauthenticated');
      const noId = { ...headers, 'webhook-id': '' };
      expectError(await w.anon.request('POST', path(), { raw, headers: noId }), 401, 'unauthenticated');
      expect(await countOf(content)).toBe(1);
    });
  });

  describe('bodies and containers', () => {
    it('answers each bad body with a 4xx naming the problem, posting nothing', async () => {
      const before = (await messages()).length;
      const post = (body: unknown) => bot.api.post(path(), body);
      expectError(await post({ channel_id: channelId }), 400, 'invalid_input', 'content');
      expectError(await post({ content: '', channel_id: channelId }), 400, 'invalid_input', 'content');
      expectError(await post({ content: 42, channel_id: channelId }), 400, 'invalid_input', 'content');
      expectError(
        await post({ content: 'x'.repeat(50_001), channel_id: channelId }),
        400,
        'invalid_input',
        'content',
      );
      expectError(await post({ content: 'x' }), 400, 'invalid_input');
      expectError(
        await post({ content: 'x', channel_id: channelId, topic_id: topicId }),
        400,
        'invalid_input',
      );
      expectError(await post({ content: 'x', channel_id: 'nope' }), 400, 'invalid_input', 'channel_id');
      expectError(await post({ content: 'x', channel_id: channelId, colour: 'red' }), 400, 'invalid_input');
      expectError(
        await post({ content: 'a\u0000b', channel_id: channelId }),
        400,
        'invalid_input',
        'content',
      );
      expectError(await post([{ content: 'x', channel_id: channelId }]), 400, 'invalid_input');
      const raw = (text: string, type = 'application/json') =>
        bot.api.request('POST', path(), { raw: text, headers: { 'content-type': type } });
      expectError(await raw('{"content": "x", '), 400, 'invalid_json');
      expectError(await raw('content=x', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
      expectError(await raw('x'.repeat(1_100_000)), 413, 'payload_too_large');
      expect((await messages()).length).toBe(before);
    });

    it('never answers 5xx to garbage, and posts nothing', async () => {
      const before = (await messages()).length;
      const bodies = [
        '',
        'null',
        '"just a string"',
        '{"content":{"nested":true},"channel_id":[]}',
        '{"content":"x","channel_id":"' + channelId + '","content_html":12}',
        '{"__proto__":{"content":"x"},"channel_id":"' + channelId + '"}',
        randomBytes(512).toString('latin1'),
      ];
      for (let i = 0; i < 40; i++) bodies.push(randomBytes(1 + (i % 64)).toString('binary'));
      for (const b of bodies) {
        for (const auth of [{ token: bot.key }, { query: { token: 'writ_x' } }, {}]) {
          const res = await w.anon.request('POST', path(), {
            raw: b,
            headers: { 'content-type': 'application/json' },
            ...auth,
          });
          expect(res.status, JSON.stringify(b)).toBeGreaterThanOrEqual(400);
          expect(res.status, JSON.stringify(b)).toBeLessThan(500);
        }
      }
      expect((await messages()).length).toBe(before);
    });

    it('containers the bot is not in look like they do not exist (another organization too)', async () => {
      const content = uniq('where');
      expectError(await bot.api.post(path(), { content, channel_id: lonelyChannelId }), 404, 'not_found');
      expectError(await bot.api.post(path(), { content, channel_id: foreignChannelId }), 404, 'not_found');
      expectError(await bot.api.post(path(), { content, dm_room_id: channelId }), 404, 'not_found');
      expect((await messages(`/api/channels/${lonelyChannelId}`)).length).toBe(0);
    });
  });

  describe('Idempotency-Key', () => {
    it('a retry answers the first message; the same key with another body is a 409', async () => {
      const content = uniq('idem');
      const key = { 'idempotency-key': uniq('k') };
      const a = expectStatus(
        await bot.api.post(path(), { content, channel_id: channelId }, { headers: key }),
        201,
      );
      const b = await bot.api.post(path(), { content, channel_id: channelId }, { headers: key });
      expect(expectStatus(b, 201).id).toBe(a.id);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      expectError(
        await bot.api.post(path(), { content: 'changed', channel_id: channelId }, { headers: key }),
        409,
        'idempotency_conflict',
      );
      expectError(
        await bot.api.post(
          path(),
          { content, channel_id: channelId },
          { headers: { 'idempotency-key': 'has space' } },
        ),
        400,
        'invalid_input',
      );
      expect(await countOf(content)).toBe(1);
    });
  });
});
