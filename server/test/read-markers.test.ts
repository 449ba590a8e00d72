import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Server-side unread state: POST /api/{channels|topics|dm-rooms}/{id}/read and GET /api/unread, on a
 * real server (SQLite, or PostgreSQL with DATABASE_URL).
 */
describe('read markers and unread counts', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle; // org_admin
  let ann: UserHandle;
  let bob: UserHandle;
  let cat: UserHandle; // same organization, in nothing
  let bot: BotHandle;
  let channel: string;
  let privateChannel: string;
  let topic: string;
  let dm: string;
  let other: { id: string; admin: UserHandle };
  let otherChannel: string;
  let otherMessage: string;

  const post = async (who: UserHandle | BotHandle, path: string, content: string) =>
    expectStatus(await who.api.post(`${path}/messages`, { content }), 201) as { id: string };
  const unread = async (who: UserHandle) =>
    expectStatus(await who.api.get('/api/unread'), 200) as {
      items: { container_type: string; container_id: string; unread: number; last_read_at: string | null }[];
      cap: number;
    };
  const countOf = async (who: UserHandle, id: string) =>
    (await unread(who)).items.find((i) => i.container_id === id)?.unread ?? 0;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    admin = org.admin;
    ann = await w.user({ organization_id: org.id });
    bob = await w.user({ organization_id: org.id });
    cat = await w.user({ organization_id: org.id });
    bot = await w.bot(ann.api);
    channel = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { user_id: bob.id }), 201);
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    privateChannel = await w.channel(ann.api, { is_private: true });
    expectStatus(await ann.api.post(`/api/channels/${privateChannel}/members`, { user_id: bob.id }), 201);
    const p = await w.project(ann.api);
    topic = p.topicId;
    expectStatus(await ann.api.post(`/api/projects/${p.projectId}/members`, { user_id: bob.id }), 201);
    dm = expectStatus(await ann.api.post('/api/dm-rooms', { user_ids: [bob.id] }), 201).id;
    other = await w.org();
    otherChannel = await w.channel(other.admin.api);
    otherMessage = (await post(other.admin, `/api/channels/${otherChannel}`, 'elsewhere')).id;
    Api.recorder = (x) => {
      if (x.path === '/api/unread' || x.path.endsWith('/read')) exchanges.push(x);
    };
  });
  const exchanges: RecordedExchange[] = [];
  afterAll(async () => {
    Api.recorder = undefined;
    await srv?.close();
  });

  it('counts messages of others since joining, excluding own and deleted ones; marks read forward only', async () => {
    const c = `/api/channels/${channel}`;
    const m1 = await post(ann, c, 'one');
    const m2 = await post(ann, c, 'two');
    await post(bob, c, 'bob talks'); // bob's own: never unread for bob
    const m3 = await post(bot, c, 'from the bot');
    const gone = await post(ann, c, 'deleted soon');
    expectStatus(await ann.api.delete(`/api/messages/${gone.id}`), 200);

    const before = await unread(bob);
    expect(before.cap).toBe(100);
    expect(before.items.find((i) => i.container_id === channel)).toEqual({
      container_type: 'channel',
      container_id: channel,
      unread: 3,
      last_read_at: null,
      last_read_message_id: null,
    });
    // Ann wrote everything but the bot's message.
    expect(await countOf(ann, channel)).toBe(2); // bob's and the bot's

    const r2 = expectStatus(await bob.api.post(`${c}/read`, { message_id: m2.id }), 200);
    expect(r2).toMatchObject({
      container_type: 'channel',
      container_id: channel,
      last_read_message_id: m2.id,
      moved: true,
      unread: 1,
    });
    expect(await countOf(bob, channel)).toBe(1);

    // Backwards: refused silently, the marker stays.
    const r1 = expectStatus(await bob.api.post(`${c}/read`, { message_id: m1.id }), 200);
    expect(r1).toMatchObject({ last_read_message_id: m2.id, moved: false, unread: 1 });
    // The same message again: not moved either.
    expect(expectStatus(await bob.api.post(`${c}/read`, { message_id: m2.id }), 200).moved).toBe(false);

    const r3 = expectStatus(await bob.api.post(`${c}/read`, { message_id: m3.id }), 200);
    expect(r3).toMatchObject({ last_read_message_id: m3.id, moved: true, unread: 0 });
    expect((await unread(bob)).items.some((i) => i.container_id === channel)).toBe(false);

    // A message after the marker is unread again; once deleted it is not.
    const m4 = await post(ann, c, 'four');
    expect(await countOf(bob, channel)).toBe(1);
    expectStatus(await ann.api.delete(`/api/messages/${m4.id}`), 200);
    expect(await countOf(bob, channel)).toBe(0);
  });

  it('counts topics and DM rooms too, and caps every count at 100', async () => {
    const t = `/api/topics/${topic}`;
    const d = `/api/dm-rooms/${dm}`;
    const tm = await post(ann, t, 'topic news');
    await post(ann, d, 'psst');
    const items = (await unread(bob)).items;
    expect(items.find((i) => i.container_id === topic)).toMatchObject({ container_type: 'topic', unread: 1 });
    expect(items.find((i) => i.container_id === dm)).toMatchObject({ container_type: 'dm_room', unread: 1 });
    expect(expectStatus(await bob.api.post(`${t}/read`, { message_id: tm.id }), 200)).toMatchObject({
      container_type: 'topic',
      unread: 0,
    });
    expect(await countOf(bob, topic)).toBe(0);

    for (let i = 0; i < 104; i++) await post(ann, d, `flood ${i}`);
    expect(await countOf(bob, dm)).toBe(100);
  });

  it('follows a public channel one has read without joining; forgets a private one left', async () => {
    const pub = await w.channel(ann.api);
    const first = await post(ann, `/api/channels/${pub}`, 'hello world');
    expect(await countOf(cat, pub)).toBe(0); // not a member, no marker: not followed
    expect(
      expectStatus(await cat.api.post(`/api/channels/${pub}/read`, { message_id: first.id }), 200),
    ).toMatchObject({ moved: true, unread: 0 });
    await post(ann, `/api/channels/${pub}`, 'more');
    expect(await countOf(cat, pub)).toBe(1);

    // Bob reads the private channel, then is removed: it is no longer counted.
    const pm = await post(ann, `/api/channels/${privateChannel}`, 'secret');
    expect(await countOf(bob, privateChannel)).toBe(1);
    expectStatus(await bob.api.post(`/api/channels/${privateChannel}/read`, { message_id: pm.id }), 200);
    await post(ann, `/api/channels/${privateChannel}`, 'secret 2');
    expect(await countOf(bob, privateChannel)).toBe(1);
    expectStatus(await ann.api.delete(`/api/channels/${privateChannel}/members/users/${bob.id}`), 200);
    expect(await countOf(bob, privateChannel)).toBe(0);
    const gone = await bob.api.post(`/api/channels/${privateChannel}/read`, { message_id: pm.id });
    expect(gone.status).toBe(404);
  });

  it('rejects bad input', async () => {
    const m = await post(ann, `/api/channels/${channel}`, 'x');
    const cases: [string, unknown, string][] = [
      [`/api/channels/${channel}/read`, {}, 'message_id'],
      [`/api/channels/${channel}/read`, { message_id: 5 }, 'message_id'],
      [`/api/channels/${channel}/read`, { message_id: 'not-a-uuid' }, 'message_id'],
      [`/api/channels/${channel}/read`, { message_id: m.id, extra: 1 }, 'extra'],
      [`/api/channels/not-a-uuid/read`, { message_id: m.id }, 'channel_id'],
      [`/api/channels/${channel}/read`, { message_id: m.id, topic_id: topic }, 'channel_id'],
    ];
    for (const [path, body, field] of cases) {
      const r = await bob.api.post(path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_input', field });
    }
    const unknown = await bob.api.get('/api/unread', { query: { x: 1 } });
    expect(unknown.status).toBe(400);
    expect((await w.anon.get('/api/unread')).status).toBe(401);
    expect((await w.anon.post(`/api/channels/${channel}/read`, { message_id: m.id })).status).toBe(401);
  });

  it('answers 404 for a message of another container, a deleted one, or one that does not exist', async () => {
    const inTopic = await post(ann, `/api/topics/${topic}`, 'in the topic');
    const deleted = await post(ann, `/api/channels/${channel}`, 'bye');
    expectStatus(await ann.api.delete(`/api/messages/${deleted.id}`), 200);
    for (const id of [inTopic.id, deleted.id, '00000000-0000-4000-8000-000000000000', otherMessage]) {
      const r = await bob.api.post(`/api/channels/${channel}/read`, { message_id: id });
      expect(r.status, id).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
  });

  it('answers 404 for containers of another organization and those the user cannot see', async () => {
    const ownMessage = (await post(ann, `/api/channels/${channel}`, 'mine')).id;
    const hidden = await w.channel(ann.api, { is_private: true });
    const hiddenMsg = (await post(ann, `/api/channels/${hidden}`, 'hidden')).id;
    const cases: [string, string][] = [
      [`/api/channels/${otherChannel}/read`, otherMessage], // other organization
      [`/api/channels/${otherChannel}/read`, ownMessage],
      [`/api/channels/${hidden}/read`, hiddenMsg], // private, not a member
      [`/api/topics/${topic}/read`, ownMessage], // cat is not in the project
      [`/api/dm-rooms/${dm}/read`, ownMessage], // not cat's DM room
    ];
    for (const [path, message_id] of cases) {
      const r = await cat.api.post(path, { message_id });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
    // The other organization's admin sees nothing of ours either.
    expect(
      (await other.admin.api.post(`/api/channels/${channel}/read`, { message_id: ownMessage })).status,
    ).toBe(404);
    expect((await unread(other.admin)).items.some((i) => i.container_id === channel)).toBe(false);
    // An org admin may read the hidden channel (and then follows it).
    expectStatus(await admin.api.post(`/api/channels/${hidden}/read`, { message_id: hiddenMsg }), 200);
    await post(ann, `/api/channels/${hidden}`, 'hidden 2');
    expect(await countOf(admin, hidden)).toBe(1);
  });

  it('is for users only: a bot key answers 403', async () => {
    const m = await post(ann, `/api/channels/${channel}`, 'bots do not read');
    const r = await bot.api.post(`/api/channels/${channel}/read`, { message_id: m.id });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
    expect((await bot.api.get('/api/unread')).status).toBe(403);
  });

  it('answers as the OpenAPI document says, successes and errors alike', async () => {
    const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    const { problems, validated } = checkAgainstOpenApi(doc, exchanges);
    expect(problems).toEqual([]);
    expect(validated).toBeGreaterThan(30);
    expect(new Set(exchanges.map((x) => x.status))).toEqual(new Set([200, 400, 401, 403, 404]));
  });
});
