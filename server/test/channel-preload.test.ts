import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * The channel message routes (POST and GET /api/channels/{channelId}/messages) read the credential and
 * the channel with the caller's membership in one statement (OpRoute.preloadChannel,
 * authenticateWithChannel): every rule of authentication and channel access holds as on the other
 * routes, and a change (membership, archive, revocation) is seen by the very next request.
 */
describe('channel message routes: credential and channel read together', () => {
  let srv: TestServer;
  let w: World;
  let orgAdmin: UserHandle;
  let ann: UserHandle;
  let ben: UserHandle;
  let bot: BotHandle;
  let stranger: UserHandle;
  let strangerBot: BotHandle;
  let orgId: string;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    orgId = org.id;
    orgAdmin = org.admin;
    ann = await w.user({ organization_id: org.id });
    ben = await w.user({ organization_id: org.id });
    bot = await w.bot(orgAdmin.api);
    const other = await w.org();
    stranger = await w.user({ organization_id: other.id });
    strangerBot = await w.bot(other.admin.api);
  });
  afterAll(() => srv.close());

  const post = (who: { api: UserHandle['api'] }, channel: string, content = 'hi') =>
    who.api.post(`/api/channels/${channel}/messages`, { content });
  const read = (who: { api: UserHandle['api'] }, channel: string) =>
    who.api.get(`/api/channels/${channel}/messages`);

  it('members post and read; a public channel is read by anyone of the organization and posted in by members and admins', async () => {
    const pub = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${pub}/members`, { bot_id: bot.id }), 201);
    expect(expectStatus(await post(ann, pub, 'from ann'), 201)).toMatchObject({ channel_id: pub });
    expectStatus(await post(bot, pub, 'from the bot'), 201);
    expectStatus(await post(orgAdmin, pub, 'from the admin, no member'), 201);
    const r = await post(ben, pub);
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({
      code: 'forbidden',
      message: 'Join the channel before posting in it',
    });
    const listed = expectStatus(await read(ben, pub), 200);
    expect(listed.items.map((m: { content: string }) => m.content)).toEqual([
      'from the admin, no member',
      'from the bot',
      'from ann',
    ]);
  });

  it('a private channel, another organization’s channel and an unknown one answer 404 alike', async () => {
    const priv = await w.channel(ann.api, { is_private: true });
    expectStatus(await post(ann, priv), 201);
    const unknown = '01890000-0000-7000-8000-000000000000';
    for (const [who, channel] of [
      [ben, priv],
      [bot, priv],
      [stranger, priv],
      [strangerBot, priv],
      [ann, unknown],
      [bot, unknown],
    ] as const) {
      for (const r of [await post(who, channel), await read(who, channel)]) {
        expect(r.status).toBe(404);
        expect(r.body.error).toMatchObject({ code: 'not_found', message: 'Channel not found' });
      }
    }
    // A path segment that is no id at all (read with the credential before the input is checked): the
    // input's 400, on both databases, and a bad credential still answers 401 first.
    for (const r of [await post(ann, 'not-a-channel'), await read(bot, 'not-a-channel')]) {
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_input', field: 'channel_id' });
    }
    const nobody = await w.anon.post(
      '/api/channels/not-a-channel/messages',
      { content: 'x' },
      { token: 'nope' },
    );
    expect(nobody.status).toBe(401);
  });

  it('membership and archiving are seen by the very next request', async () => {
    const c = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { user_id: ben.id }), 201);
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { bot_id: bot.id }), 201);
    expectStatus(await post(ben, c), 201);
    expectStatus(await post(bot, c), 201);
    expect((await ann.api.delete(`/api/channels/${c}/members/users/${ben.id}`)).status).toBe(200);
    expect((await ann.api.delete(`/api/channels/${c}/members/bots/${bot.id}`)).status).toBe(200);
    expect((await post(ben, c)).status).toBe(403);
    expect((await post(bot, c)).status).toBe(404); // bots reach only their channels
    expect((await read(bot, c)).status).toBe(404);
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { bot_id: bot.id }), 201);
    expectStatus(await post(bot, c), 201);
    expectStatus(await ann.api.post(`/api/channels/${c}/archive`, {}), 200);
    const archived = await post(ann, c);
    expect(archived.status).toBe(409);
    expect(archived.body.error.message).toBe('The channel is archived');
    expectStatus(await read(ann, c), 200);
  });

  it('credentials: missing, unknown, revoked and lacking scope answer as on every route, at once', async () => {
    const c = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { bot_id: bot.id }), 201);
    const elsewhere = `/api/channels/${c}`; // a route that reads the channel on its own
    for (const token of [undefined, 'not-a-token', 'wrbk_live_malformed']) {
      const here = await w.anon.post(`/api/channels/${c}/messages`, { content: 'x' }, { token });
      const there = await w.anon.get(elsewhere, { token });
      expect(here.status).toBe(401);
      expect(here.headers.get('www-authenticate')).toBe('Bearer');
      expect(here.body).toEqual(there.body);
    }
    // A user signed out, a key revoked: the next request is refused.
    const carl = await w.user({ organization_id: orgId });
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { user_id: carl.id }), 201);
    expectStatus(await post(carl, c), 201);
    expect((await carl.api.post('/api/auth/logout', {})).status).toBeLessThan(300);
    expect((await post(carl, c)).status).toBe(401);
    const key = expectStatus(await orgAdmin.api.post(`/api/bots/${bot.id}/api-keys`, {}), 201);
    const withKey = { api: w.anon.as(key.key) };
    expectStatus(await post(withKey, c), 201);
    expect((await orgAdmin.api.delete(`/api/bots/${bot.id}/api-keys/${key.id}`)).status).toBeLessThan(300);
    const revoked = await post(withKey, c);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.message).toBe('The API key has been revoked');
    // A key without messages:write: 403 naming the scope, whatever the channel.
    const readOnly = await w.bot(orgAdmin.api, { scopes: ['messages:read'] });
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { bot_id: readOnly.id }), 201);
    const refused = await post(readOnly, c);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ scope: 'messages:write' });
    expectStatus(await read(readOnly, c), 200);
  });
});
