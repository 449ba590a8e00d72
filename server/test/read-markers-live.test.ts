import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * read_marker.updated (docs/REALTIME.md, "Your read markers"): marking a channel, topic or DM room read
 * reaches the user's own other connections live, in the transaction's order, and is replayed to them on
 * resume — and never reaches another user (not even an org admin who can read the room), nor a webhook.
 */
describe('read markers live on the user’s other connections', () => {
  let srv: TestServer;
  let w: World;
  let alice: UserHandle;
  let bob: UserHandle;
  let orgAdmin: UserHandle;
  let channel: string;
  let topic: string;
  let dm: string;
  const open: LiveClient[] = [];

  const connect = async (u: UserHandle, lastSeq?: number) => {
    const c = await LiveClient.connect(srv.url, u.token, lastSeq);
    open.push(c);
    return c;
  };
  const markers = (c: LiveClient) => c.events.filter((m) => m.event.event_type === 'read_marker.updated');
  const isMarker = (messageId: string) => (m: any) =>
    m.type === 'event' &&
    m.event.event_type === 'read_marker.updated' &&
    m.event.data.last_read_message_id === messageId;
  /** A message everybody in the channel sees after the events before it (one order for all). */
  const sentinel = async (clients: LiveClient[]) => {
    const id = expectStatus(
      await alice.api.post(`/api/channels/${channel}/messages`, { content: 'sentinel' }),
      201,
    ).id as string;
    await Promise.all(
      clients.map((c) => c.waitFor((m) => m.type === 'event' && m.event.data.message_id === id)),
    );
  };

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    alice = await w.user({ organization_id: org.id });
    bob = await w.user({ organization_id: org.id });
    channel = await w.channel(alice.api);
    expectStatus(await alice.api.post(`/api/channels/${channel}/members`, { user_id: bob.id }), 201);
    const p = await w.project(alice.api);
    topic = p.topicId;
    expectStatus(await alice.api.post(`/api/projects/${p.projectId}/members`, { user_id: bob.id }), 201);
    dm = expectStatus(await bob.api.post('/api/dm-rooms', { user_ids: [alice.id] }), 201).id as string;
  });
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close()));
    await srv.close();
  });

  it('reaches every connection of the user who read, and nobody else', async () => {
    const a1 = await connect(alice);
    const a2 = await connect(alice);
    const b = await connect(bob);
    const admin = await connect(orgAdmin);
    const m1 = expectStatus(await bob.api.post(`/api/channels/${channel}/messages`, { content: 'one' }), 201)
      .id as string;
    const m2 = expectStatus(await bob.api.post(`/api/channels/${channel}/messages`, { content: 'two' }), 201)
      .id as string;

    const r = expectStatus(await alice.api.post(`/api/channels/${channel}/read`, { message_id: m1 }), 200);
    expect(r).toMatchObject({ moved: true, unread: 1 });
    for (const c of [a1, a2]) {
      const got = await c.waitFor(isMarker(m1));
      expect(got.event.data).toEqual({
        user_id: alice.id,
        container_type: 'channel',
        container_id: channel,
        last_read_at: r.last_read_at,
        last_read_message_id: m1,
        unread: 1,
      });
    }
    // In the one order of the outbox: after bob's messages.
    const a1Seqs = a1.events.map((m) => m.event.data.message_id ?? m.event.data.last_read_message_id);
    expect(a1Seqs.indexOf(m1)).toBeLessThan(a1Seqs.lastIndexOf(m1));

    expectStatus(await alice.api.post(`/api/channels/${channel}/read`, { message_id: m2 }), 200);
    expect((await a2.waitFor(isMarker(m2))).event.data.unread).toBe(0);
    // A marker that does not move (an older message, or the same one again) says nothing.
    expect(
      expectStatus(await alice.api.post(`/api/channels/${channel}/read`, { message_id: m1 }), 200).moved,
    ).toBe(false);

    await sentinel([a1, a2, b, admin]);
    expect(markers(a1)).toHaveLength(2);
    expect(markers(a2)).toHaveLength(2);
    // Bob reads the same channel and the org admin can read everything: neither hears of alice's marker.
    expect(markers(b)).toHaveLength(0);
    expect(markers(admin)).toHaveLength(0);

    // Bob's own marker reaches bob only.
    expectStatus(await bob.api.post(`/api/channels/${channel}/read`, { message_id: m2 }), 200);
    await b.waitFor(isMarker(m2));
    await sentinel([a1, b]);
    expect(markers(a1)).toHaveLength(2);
    expect(markers(b).map((m) => m.event.data.user_id)).toEqual([bob.id]);
  });

  it('covers topics and DM rooms', async () => {
    const a = await connect(alice);
    const b = await connect(bob);
    const admin = await connect(orgAdmin);
    const t = expectStatus(await bob.api.post(`/api/topics/${topic}/messages`, { content: 'topic' }), 201)
      .id as string;
    const d = expectStatus(await bob.api.post(`/api/dm-rooms/${dm}/messages`, { content: 'dm' }), 201)
      .id as string;
    expectStatus(await alice.api.post(`/api/topics/${topic}/read`, { message_id: t }), 200);
    expectStatus(await alice.api.post(`/api/dm-rooms/${dm}/read`, { message_id: d }), 200);
    expect((await a.waitFor(isMarker(t))).event.data).toMatchObject({
      container_type: 'topic',
      container_id: topic,
      unread: 0,
    });
    expect((await a.waitFor(isMarker(d))).event.data).toMatchObject({
      container_type: 'dm_room',
      container_id: dm,
      unread: 0,
    });
    await sentinel([a, b, admin]);
    expect(markers(b)).toHaveLength(0);
    expect(markers(admin)).toHaveLength(0);
  });

  it('is replayed to the user on resume, and to nobody else', async () => {
    const a = await connect(alice);
    const b = await connect(bob);
    // Connections that stay: once they have the events live, the events are in the outbox's order
    // (on PostgreSQL numbered after their commit) and a resume must replay them.
    const aLive = await connect(alice);
    const bLive = await connect(bob);
    const from = { a: a.lastSeq, b: b.lastSeq };
    await a.close();
    await b.close();
    const m = expectStatus(await bob.api.post(`/api/channels/${channel}/messages`, { content: 'x' }), 201)
      .id as string;
    expectStatus(await alice.api.post(`/api/channels/${channel}/read`, { message_id: m }), 200);
    await aLive.waitFor(isMarker(m));
    await bLive.waitFor((x) => x.type === 'event' && x.event.data.message_id === m);

    const a2 = await connect(alice, from.a);
    const b2 = await connect(bob, from.b);
    const replayed = a2.messages.findIndex(isMarker(m));
    expect(replayed).toBeGreaterThanOrEqual(0);
    expect(replayed).toBeLessThan(a2.messages.findIndex((x) => x.type === 'ready')); // before ready: a replay
    expect(b2.messages.some((x) => x.type === 'event' && x.event.data.message_id === m)).toBe(true);
    expect(markers(b2)).toHaveLength(0);
  });

  it('is not a webhook event: not subscribable, not in the OpenAPI webhooks', async () => {
    const res = await alice.api.post('/api/bots', { name: 'reader', events: ['read_marker.updated'] });
    expect(res.status).toBe(400);
    const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    expect(Object.keys(doc.webhooks)).not.toContain('read_marker.updated');
    expect(Object.keys(doc.webhooks)).toContain('message.created');
  });
});
