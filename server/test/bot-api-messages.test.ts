import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/** POST /api/bots/{botId}/dm-messages, PUT|DELETE /api/messages/{id}, Idempotency-Key. */
describe('bot API: DMs, message edit and delete, idempotency', () => {
  let srv: TestServer;
  let w: World;
  let orgAdmin: UserHandle;
  let ann: UserHandle;
  let ben: UserHandle;
  let bot: BotHandle;
  let channel: string;
  let other: { id: string; admin: UserHandle };
  let otherUser: UserHandle;
  let otherBot: BotHandle;

  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    ann = await w.user({ organization_id: org.id });
    ben = await w.user({ organization_id: org.id });
    bot = await w.bot(orgAdmin.api);
    channel = await w.channel(ann.api);
    for (const body of [{ user_id: ben.id }, { bot_id: bot.id }, { user_id: orgAdmin.id }])
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, body), 201);
    other = await w.org();
    otherUser = await w.user({ organization_id: other.id });
    otherBot = await w.bot(other.admin.api);
  });
  afterAll(() => srv.close());

  const dm = (b: BotHandle, userId: string, body: Record<string, unknown> = {}, headers = {}) =>
    b.api.post(`/api/bots/${b.id}/dm-messages`, { user_id: userId, content: 'hello', ...body }, { headers });

  describe('POST /api/bots/{botId}/dm-messages', () => {
    it('creates the DM room on first use and reuses it', async () => {
      const m1 = expectStatus(await dm(bot, ann.id, { content: 'Hi **Ann**' }), 201);
      expect(m1).toMatchObject({
        sender_type: 'bot',
        sender_id: bot.id,
        bot_id: bot.id,
        content: 'Hi **Ann**',
      });
      expect(m1.dm_room_id).toMatch(/^[0-9a-f-]{36}$/);
      const m2 = expectStatus(await dm(bot, ann.id, { content: 'again' }), 201);
      expect(m2.dm_room_id).toBe(m1.dm_room_id);
      // Ann reads it in the room; a DM to Ben is another room.
      const list = expectStatus(await ann.api.get(`/api/dm-rooms/${m1.dm_room_id}/messages`), 200);
      expect(list.items.map((m: any) => m.content)).toEqual(['again', 'Hi **Ann**']);
      const m3 = expectStatus(await dm(bot, ben.id), 201);
      expect(m3.dm_room_id).not.toBe(m1.dm_room_id);
      expect((await ben.api.get(`/api/dm-rooms/${m1.dm_room_id}/messages`)).status).toBe(404);
    });

    it('sanitizes content_html', async () => {
      const m = expectStatus(
        await dm(bot, ann.id, {
          content_html: '<b>ok</b><script>alert(1)</script><img src=x onerror=alert(1)>',
        }),
        201,
      );
      expect(m.content_html).toContain('<b>ok</b>');
      expect(m.content_html).not.toMatch(/script|onerror/);
    });

    it('rejects bad input', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ content: 'x' }, 'user_id'],
        [{ user_id: ann.id }, 'content'],
        [{ user_id: 'not-a-uuid', content: 'x' }, 'user_id'],
        [{ user_id: ann.id, content: 42 }, 'content'],
        [{ user_id: ann.id, content: '' }, 'content'],
        [{ user_id: ann.id, content: 'x'.repeat(50_001) }, 'content'],
        [{ user_id: ann.id, content: 'x', content_html: 'y'.repeat(50_001) }, 'content_html'],
        [{ user_id: ann.id, content: 'x', extra: 1 }, 'extra'],
      ];
      for (const [body, field] of cases) {
        const res = await bot.api.post(`/api/bots/${bot.id}/dm-messages`, body);
        expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      const exact = await dm(bot, ann.id, { content: 'x'.repeat(50_000) });
      expect(exact.status).toBe(201);
    });

    it('answers 403 for another bot id, 404 for a user of another organization or unknown', async () => {
      const wrong = await bot.api.post(`/api/bots/${otherBot.id}/dm-messages`, {
        user_id: ann.id,
        content: 'x',
      });
      expect(wrong.status).toBe(403);
      expect(wrong.body.error.code).toBe('forbidden');
      const foreign = await dm(bot, otherUser.id);
      expect(foreign.status).toBe(404);
      const unknown = await dm(bot, '00000000-0000-4000-8000-000000000000');
      expect(unknown.status).toBe(404);
      expect(foreign.body.error).toEqual(unknown.body.error);
    });

    it('needs messages:write, a bot key, and a valid key', async () => {
      const reader = await w.bot(orgAdmin.api, { scopes: ['messages:read'] });
      const res = await dm(reader, ann.id);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'messages:write' });
      const writer = await w.bot(orgAdmin.api, { scopes: ['messages:write'] });
      expectStatus(await dm(writer, ann.id), 201);
      const asUser = await ann.api.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ben.id, content: 'x' });
      expect(asUser.status).toBe(403);
      expect(
        (await w.anon.post(`/api/bots/${bot.id}/dm-messages`, { user_id: ann.id, content: 'x' })).status,
      ).toBe(401);
      expectStatus(await orgAdmin.api.delete(`/api/bots/${writer.id}/api-keys/${writer.keyId}`), 200);
      const revoked = await dm(writer, ann.id);
      expect(revoked.status).toBe(401);
      expect(revoked.body.error.code).toBe('unauthenticated');
    });
  });

  describe('PUT and DELETE /api/messages/{id}', () => {
    const post = async (u: UserHandle, content = 'original') =>
      expectStatus(await u.api.post(`/api/channels/${channel}/messages`, { content }), 201);

    it('a user edits its own message: content, sanitized html, edited_at; emits message.updated', async () => {
      const m = await post(ann);
      expect(m.edited_at).toBeNull();
      const e = expectStatus(
        await ann.api.put(`/api/messages/${m.id}`, {
          content: 'edited',
          content_html: '<i>e</i><script>x</script>',
        }),
        200,
      );
      expect(e).toMatchObject({ id: m.id, content: 'edited', content_html: '<i>e</i>' });
      expect(e.edited_at).not.toBeNull();
      const list = expectStatus(await ben.api.get(`/api/channels/${channel}/messages`), 200);
      expect(list.items.find((x: any) => x.id === m.id)).toMatchObject({
        content: 'edited',
        edited_at: e.edited_at,
      });
      const events = await srv.app.services.storage.stores.events.listAfter(0, 10_000);
      const upd = events.filter((ev) => ev.type === 'message.updated').map((ev) => JSON.parse(ev.data));
      expect(upd.find((d) => d.message_id === m.id)).toMatchObject({
        content: 'edited',
        previous_content: 'original',
        channel_id: channel,
        sender_id: ann.id,
        sender_type: 'user',
      });
      // PUT replaces: without content_html it is cleared.
      const again = expectStatus(await ann.api.put(`/api/messages/${m.id}`, { content: 'plain' }), 200);
      expect(again.content_html).toBeNull();
    });

    it('rejects bad edit input', async () => {
      const m = await post(ann);
      const cases: [unknown, string][] = [
        [{}, 'content'],
        [{ content: 7 }, 'content'],
        [{ content: '' }, 'content'],
        [{ content: 'x'.repeat(50_001) }, 'content'],
        [{ content: 'x', content_html: 5 }, 'content_html'],
        [{ content: 'x', content_html: 'y'.repeat(50_001) }, 'content_html'],
        [{ content: 'x', channel_id: channel }, 'channel_id'],
      ];
      for (const [body, field] of cases) {
        const res = await ann.api.put(`/api/messages/${m.id}`, body);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expect((await ann.api.put('/api/messages/nope', { content: 'x' })).status).toBe(400);
      expect((await ann.api.put(`/api/messages/${m.id}`, undefined, { raw: '{bad' })).status).toBe(400);
    });

    it('rule 7: own messages only (403), invisible ones 404, system_admin all', async () => {
      const m = await post(ann);
      const byBen = await ben.api.put(`/api/messages/${m.id}`, { content: 'hijack' });
      expect(byBen.status).toBe(403);
      expect((await ben.api.delete(`/api/messages/${m.id}`)).status).toBe(403);
      // org_admin is not system_admin: not its message.
      expect((await orgAdmin.api.put(`/api/messages/${m.id}`, { content: 'x' })).status).toBe(403);
      // A bot that is a channel member still cannot touch a user's message.
      expect((await bot.api.put(`/api/messages/${m.id}`, { content: 'x' })).status).toBe(403);
      // Other organizations see nothing.
      for (const who of [other.admin, otherUser]) {
        const res = await who.api.put(`/api/messages/${m.id}`, { content: 'x' });
        expect(res.status).toBe(404);
        expect((await who.api.delete(`/api/messages/${m.id}`)).status).toBe(404);
      }
      expect((await otherBot.api.put(`/api/messages/${m.id}`, { content: 'x' })).status).toBe(404);
      // A private channel's message is invisible to non-members of the same organization.
      const priv = await w.channel(ann.api, { is_private: true });
      const pm = expectStatus(
        await ann.api.post(`/api/channels/${priv}/messages`, { content: 'secret' }),
        201,
      );
      expect((await ben.api.put(`/api/messages/${pm.id}`, { content: 'x' })).status).toBe(404);
      expect((await bot.api.delete(`/api/messages/${pm.id}`)).status).toBe(404);
      // system_admin edits and deletes anything, even a DM it is not part of.
      expectStatus(await w.admin.api.put(`/api/messages/${m.id}`, { content: 'moderated' }), 200);
      const d = expectStatus(await dm(bot, ann.id, { content: 'dm' }), 201);
      expectStatus(await w.admin.api.delete(`/api/messages/${d.id}`), 200);
      expect((await ann.api.put(`/api/messages/${m.id}`, { content: 'mine again' })).status).toBe(200);
    });

    it('a bot edits and deletes only messages it sent', async () => {
      const mine = expectStatus(
        await bot.api.post(`/api/channels/${channel}/messages`, { content: 'bot says' }),
        201,
      );
      const e = expectStatus(await bot.api.put(`/api/messages/${mine.id}`, { content: 'bot edited' }), 200);
      expect(e).toMatchObject({ bot_id: bot.id, content: 'bot edited' });
      const bot2 = await w.bot(orgAdmin.api);
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot2.id }), 201);
      expect((await bot2.api.put(`/api/messages/${mine.id}`, { content: 'x' })).status).toBe(403);
      expect((await bot2.api.delete(`/api/messages/${mine.id}`)).status).toBe(403);
      // Its own users cannot touch the bot's message either.
      expect((await orgAdmin.api.delete(`/api/messages/${mine.id}`)).status).toBe(403);
      const del = expectStatus(await bot.api.delete(`/api/messages/${mine.id}`), 200);
      expect(del).toMatchObject({ id: mine.id, deleted: true });
    });

    it('scopes: messages:write needed; other scopes 403; revoked key 401', async () => {
      const b = await w.bot(orgAdmin.api, { scopes: ['messages:write', 'messages:read'] });
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: b.id }), 201);
      const m = expectStatus(await b.api.post(`/api/channels/${channel}/messages`, { content: 'b' }), 201);
      const readOnly = await w.bot(orgAdmin.api, { scopes: ['messages:read', 'channels:read'] });
      for (const res of [
        await readOnly.api.put(`/api/messages/${m.id}`, { content: 'x' }),
        await readOnly.api.delete(`/api/messages/${m.id}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'messages:write' });
      }
      expectStatus(await orgAdmin.api.delete(`/api/bots/${b.id}/api-keys/${b.keyId}`), 200);
      expect((await b.api.put(`/api/messages/${m.id}`, { content: 'x' })).status).toBe(401);
      expect((await b.api.delete(`/api/messages/${m.id}`)).status).toBe(401);
      expect((await w.anon.delete(`/api/messages/${m.id}`)).status).toBe(401);
    });

    it('delete is soft: hidden from reads, deleted_at set, message.deleted emitted, then 404', async () => {
      const m = await post(ann, 'to delete');
      const del = expectStatus(await ann.api.delete(`/api/messages/${m.id}`), 200);
      expect(del.deleted).toBe(true);
      expect(Date.parse(del.deleted_at)).toBeGreaterThan(0);
      const list = expectStatus(
        await ben.api.get(`/api/channels/${channel}/messages`, { query: { limit: 100 } }),
        200,
      );
      expect(list.items.some((x: any) => x.id === m.id)).toBe(false);
      const row = await srv.app.services.storage.stores.db
        .selectFrom('messages')
        .selectAll()
        .where('id', '=', m.id)
        .executeTakeFirstOrThrow();
      expect(row.deleted_at).toBe(del.deleted_at);
      expect(row.content).toBe('to delete');
      const events = await srv.app.services.storage.stores.events.listAfter(0, 10_000);
      const ev = events.find((e) => e.type === 'message.deleted' && JSON.parse(e.data).message_id === m.id);
      expect(JSON.parse(ev!.data)).toMatchObject({
        channel_id: channel,
        deleted_by_id: ann.id,
        deleted_by_type: 'user',
      });
      expect((await ann.api.delete(`/api/messages/${m.id}`)).status).toBe(404);
      expect((await ann.api.put(`/api/messages/${m.id}`, { content: 'x' })).status).toBe(404);
      expect((await ann.api.delete('/api/messages/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    });
  });

  describe('Idempotency-Key', () => {
    const countDm = async (roomId: string) =>
      expectStatus(await ann.api.get(`/api/dm-rooms/${roomId}/messages`, { query: { limit: 100 } }), 200)
        .items.length;

    it('a retried DM with the same key answers the first result and creates nothing twice', async () => {
      const key = `k-${Date.now()}`;
      const first = await dm(bot, ann.id, { content: 'once' }, { 'idempotency-key': key });
      expect(first.status).toBe(201);
      const before = await countDm(first.body.dm_room_id);
      const again = await dm(bot, ann.id, { content: 'once' }, { 'idempotency-key': key });
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await countDm(first.body.dm_room_id)).toBe(before);
      // Same key, other body: 409.
      const changed = await dm(bot, ann.id, { content: 'different' }, { 'idempotency-key': key });
      expect(changed.status).toBe(409);
      expect(changed.body.error.code).toBe('idempotency_conflict');
      // The key is per caller: another bot may use the same key.
      const bot2 = await w.bot(orgAdmin.api);
      expectStatus(await dm(bot2, ann.id, { content: 'once' }, { 'idempotency-key': key }), 201);
    });

    it('10 concurrent requests with one key create exactly one message', async () => {
      const target = await w.user({ organization_id: (await ann.api.get('/api/auth/me')).body.org_id });
      const key = `race-${Date.now()}`;
      const results = await Promise.all(
        Array.from({ length: 10 }, () => dm(bot, target.id, { content: 'race' }, { 'idempotency-key': key })),
      );
      const ok = results.filter((r) => r.status === 201);
      for (const r of results) expect([201, 409]).toContain(r.status);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      const ids = new Set(ok.map((r) => r.body.id));
      expect(ids.size).toBe(1);
      const room = ok[0]!.body.dm_room_id;
      const msgs = expectStatus(await target.api.get(`/api/dm-rooms/${room}/messages`), 200);
      expect(msgs.items).toHaveLength(1);
      const count = await srv.app.services.storage.stores.db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('dm_room_id', '=', room)
        .executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(1);
    });

    it('message edit honours the key; a failed first request does not stick', async () => {
      const m = expectStatus(await bot.api.post(`/api/channels/${channel}/messages`, { content: 'v1' }), 201);
      const key = `edit-${Date.now()}`;
      const bad = await bot.api.put(
        `/api/messages/${m.id}`,
        { content: '' },
        { headers: { 'idempotency-key': key } },
      );
      expect(bad.status).toBe(400);
      const e1 = await bot.api.put(
        `/api/messages/${m.id}`,
        { content: 'v2' },
        { headers: { 'idempotency-key': key } },
      );
      expect(e1.status).toBe(200);
      // Someone (the bot itself) edits again without a key; a replay of the key answers the first result.
      expectStatus(await bot.api.put(`/api/messages/${m.id}`, { content: 'v3' }), 200);
      const e2 = await bot.api.put(
        `/api/messages/${m.id}`,
        { content: 'v2' },
        { headers: { 'idempotency-key': key } },
      );
      expect(e2.status).toBe(200);
      expect(e2.body).toEqual(e1.body);
      const now = expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200).items.find(
        (x: any) => x.id === m.id,
      );
      expect(now.content).toBe('v3');
    });

    it('rejects a malformed key', async () => {
      const res = await dm(bot, ann.id, {}, { 'idempotency-key': 'has space' });
      expect(res.status).toBe(400);
      expect(res.body.error.field).toBe('Idempotency-Key');
      const long = await dm(bot, ann.id, {}, { 'idempotency-key': 'k'.repeat(256) });
      expect(long.status).toBe(400);
    });

    it('expires keys after 24 hours', async () => {
      const key = `old-${Date.now()}`;
      const first = expectStatus(await dm(bot, ann.id, { content: 'old' }, { 'idempotency-key': key }), 201);
      await srv.app.services.storage.stores.db
        .updateTable('idempotency_keys')
        .set({ created_at: new Date(Date.now() - 25 * 3_600_000).toISOString() })
        .where('key', '=', `bot:${bot.id}:${key}`)
        .execute();
      const second = expectStatus(await dm(bot, ann.id, { content: 'old' }, { 'idempotency-key': key }), 201);
      expect(second.id).not.toBe(first.id);
    });
  });
});
