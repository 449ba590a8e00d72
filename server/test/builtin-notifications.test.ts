import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * The notifications bot (docs/BUILTIN-BOTS.md): DMs on mentions (names, @all, @here, only to those who
 * can open the message), task assignment and status changes, webhook failures; per-user muting;
 * tenant isolation. Absence is checked after a later DM to the same user arrived (the bot's deliveries
 * are handled one at a time, in order).
 */
describe('notifications bot', () => {
  let srv: TestServer;
  let w: World;
  let orgId: string;
  let ann: UserHandle;
  let ben: UserHandle;
  let cat: UserHandle;
  let bea: UserHandle; // another organization, same display name as someone in this one would have
  let botId: string;
  let general: string;

  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      WORKROOM_WEBHOOK_RETRY_DELAYS: '50ms',
      WORKROOM_WEBHOOK_TIMEOUT: '1s',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    orgId = org.id;
    ann = await w.user({ organization_id: orgId, display_name: 'Ann Archer' });
    ben = await w.user({ organization_id: orgId, display_name: 'Ben Baker', department: 'Kitchen' });
    cat = await w.user({ organization_id: orgId, display_name: 'Cat Carter' });
    const orgB = await w.org();
    bea = await w.user({ organization_id: orgB.id, display_name: 'Dan Dover' });
    const bots = expectStatus(await ann.api.get('/api/bots'), 200).items as any[];
    botId = bots.find((b) => b.builtin === 'notifications' && b.org_id === orgId).id;
    general = await w.channel(ann.api, { name: uniq('general') });
    for (const u of [ben, cat])
      expectStatus(await ann.api.post(`/api/channels/${general}/members`, { user_id: u.id }), 201);
  });
  afterAll(() => srv.close());

  /** The notifications bot's DMs to `u`, oldest first. */
  const dms = async (u: UserHandle, bot = botId): Promise<string[]> => {
    const rooms = expectStatus(await u.api.get('/api/dm-rooms'), 200).items as any[];
    const room = rooms.find((r) => r.members.some((m: any) => m.type === 'bot' && m.id === bot));
    if (!room) return [];
    const items = expectStatus(
      await u.api.get(`/api/dm-rooms/${room.id}/messages`, { query: { limit: 100 } }),
      200,
    ).items as any[];
    return items
      .filter((m) => m.bot_id === bot)
      .reverse()
      .map((m) => m.content as string);
  };
  const dmsUntil = async (u: UserHandle, pred: (all: string[]) => boolean, ms = 15_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const all = await dms(u);
      if (pred(all)) return all;
      if (Date.now() > end) throw new Error(`timed out; DMs so far: ${JSON.stringify(all)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const post = (u: UserHandle, channelId: string, content: string) =>
    u.api.post(`/api/channels/${channelId}/messages`, { content }).then((r) => expectStatus(r, 201));
  const command = (u: UserHandle, text: string) =>
    u.api.post('/api/commands/execute', { text }).then((r) => expectStatus(r, 202).reply.content as string);

  it('DMs a user @mentioned by name, with the channel and a link; never the author', async () => {
    await post(ann, general, 'Lunch? @Ben Baker what do you think');
    const got = await dmsUntil(ben, (a) => a.some((c) => c.includes('Lunch?')));
    const dm = got.find((c) => c.includes('Lunch?'))!;
    expect(dm).toContain('**Ann Archer** mentioned you in #general');
    expect(dm).toContain(`/#/channel/${general}`);
    await post(cat, general, 'sentinel for ann @Ann Archer');
    const annDms = await dmsUntil(ann, (a) => a.some((c) => c.includes('sentinel for ann')));
    expect(annDms.some((c) => c.includes('Lunch?'))).toBe(false); // she wrote it
  });

  it('only those who can open the message: a private channel mention of a non-member is not notified', async () => {
    const secret = await w.channel(ann.api, { name: uniq('secret'), is_private: true });
    expectStatus(await ann.api.post(`/api/channels/${secret}/members`, { user_id: ben.id }), 201);
    await post(ann, secret, 'psst @Cat Carter and @Ben Baker: private plans');
    await dmsUntil(ben, (a) => a.some((c) => c.includes('private plans')));
    await post(ann, general, 'sentinel for cat @Cat Carter');
    const catDms = await dmsUntil(cat, (a) => a.some((c) => c.includes('sentinel for cat')));
    expect(catDms.some((c) => c.includes('private plans'))).toBe(false);
  });

  it('@all notifies every member of the channel; @here only those online; e-mail and department mentions work', async () => {
    await post(ann, general, 'Heads up @all: fire drill at 3');
    await dmsUntil(ben, (a) => a.some((c) => c.includes('fire drill') && c.includes('(@all)')));
    await dmsUntil(cat, (a) => a.some((c) => c.includes('fire drill')));
    // Ben is online (a live connection), Cat is not.
    const live = await LiveClient.connect(srv.url, ben.token);
    try {
      await post(ann, general, 'Anyone around @here for cake');
      await dmsUntil(ben, (a) => a.some((c) => c.includes('for cake')));
      await post(ann, general, `mail sentinel @${cat.email} hello`);
      const catDms = await dmsUntil(cat, (a) => a.some((c) => c.includes('mail sentinel')));
      expect(catDms.some((c) => c.includes('for cake'))).toBe(false);
    } finally {
      await live.close();
    }
    await post(ann, general, 'Dinner shift for @Kitchen tonight');
    await dmsUntil(ben, (a) => a.some((c) => c.includes('Dinner shift')));
  });

  it('never crosses organizations: a name from another organization is nobody here', async () => {
    await post(ann, general, 'Is @Dan Dover coming? @Ben Baker org sentinel');
    await dmsUntil(ben, (a) => a.some((c) => c.includes('org sentinel')));
    expect(await dms(bea)).toEqual([]);
    // Org B's own notifications bot is another row; org A's bot has no DM room with Bea.
    const bBots = expectStatus(await bea.api.get('/api/bots'), 200).items as any[];
    const theirs = bBots.find((b) => b.builtin === 'notifications');
    expect(theirs.id).not.toBe(botId);
    expect(await dms(bea, theirs.id)).toEqual([]);
  });

  it('DMs on task assignment and on status changes of tasks one created or is assigned, not to whoever acted', async () => {
    const { projectId, topicId } = await w.project(ann.api);
    expectStatus(await ann.api.post(`/api/projects/${projectId}/members`, { user_id: ben.id }), 201);
    const task = expectStatus(
      await ann.api.post(`/api/topics/${topicId}/tasks`, {
        title: 'Paint the fence',
        assignee_id: ben.id,
        priority: 'high',
        due_date: '2031-01-02',
      }),
      201,
    );
    const benDms = await dmsUntil(ben, (a) => a.some((c) => c.includes('Paint the fence')));
    expect(benDms.find((c) => c.includes('Paint the fence'))).toMatch(
      /\*\*Ann Archer\*\* assigned you a task: \*\*Paint the fence\*\* \(high, due 2031-01-02\)/,
    );
    expectStatus(await ben.api.patch(`/api/tasks/${task.id}`, { status: 'done' }), 200);
    const annDms = await dmsUntil(ann, (a) => a.some((c) => c.includes('moved **Paint the fence**')));
    expect(annDms.find((c) => c.includes('moved **Paint the fence**'))).toContain('from todo to **done**');
    // Ben moved it: he is not told about his own change. Assigning oneself is not notified either.
    await post(ann, general, '@Ben Baker task sentinel');
    const after = await dmsUntil(ben, (a) => a.some((c) => c.includes('task sentinel')));
    expect(after.some((c) => c.includes('moved **Paint the fence**'))).toBe(false);
    // Cat, not in the project, is assigned nothing she can open: not notified.
    expectStatus(
      await ann.api.post(`/api/topics/${topicId}/tasks`, { title: 'Hidden chore', assignee_id: cat.id }),
      201,
    );
    await post(ann, general, '@Cat Carter chore sentinel');
    const catDms = await dmsUntil(cat, (a) => a.some((c) => c.includes('chore sentinel')));
    expect(catDms.some((c) => c.includes('Hidden chore'))).toBe(false);
  });

  it('/notifications shows and mutes each kind; muted kinds are not sent', async () => {
    expect(await command(cat, '/notifications')).toMatch(/mentions: 🔔 on/);
    expect(await command(cat, '/notifications mute mentions')).toMatch(/mentions: 🔕 muted/);
    expect(await command(cat, '/notifications mute everything')).toMatch(/Usage|mute mentions/);
    expect(await command(cat, '/notifications')).toMatch(/assignments: 🔔 on/);
    await post(ann, general, 'muted check @Cat Carter');
    // A kind she did not mute still arrives (and after the mention was handled).
    const { topicId, projectId } = await w.project(ann.api);
    expectStatus(await ann.api.post(`/api/projects/${projectId}/members`, { user_id: cat.id }), 201);
    expectStatus(
      await ann.api.post(`/api/topics/${topicId}/tasks`, { title: 'Mute sentinel', assignee_id: cat.id }),
      201,
    );
    const got = await dmsUntil(cat, (a) => a.some((c) => c.includes('Mute sentinel')));
    expect(got.some((c) => c.includes('muted check'))).toBe(false);
    expect(await command(cat, '/notifications unmute all')).toMatch(/mentions: 🔔 on/);
    await post(ann, general, 'unmuted check @Cat Carter');
    await dmsUntil(cat, (a) => a.some((c) => c.includes('unmuted check')));
  });

  it('disabled by the system_admin, it handles no events; enabled again, it does', async () => {
    expectStatus(await w.admin.api.patch('/api/builtin-bots/notifications', { status: 'disabled' }), 200);
    try {
      await post(ann, general, 'while disabled @Ben Baker');
      // Fan-out order: once a later event (a DM to the search bot) was answered, the mention was fanned out.
      const bots = expectStatus(await ann.api.get('/api/bots'), 200).items as any[];
      const search = bots.find((b) => b.builtin === 'search' && b.org_id === orgId).id;
      const room = expectStatus(await ann.api.post('/api/dm-rooms', { bot_ids: [search] }), 201);
      expectStatus(await ann.api.post(`/api/dm-rooms/${room.id}/messages`, { content: 'zzzz' }), 201);
      const end = Date.now() + 15_000;
      for (;;) {
        const items = expectStatus(await ann.api.get(`/api/dm-rooms/${room.id}/messages`), 200)
          .items as any[];
        if (items.some((m) => m.bot_id === search)) break;
        if (Date.now() > end) throw new Error('the search bot did not answer');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      expectStatus(await w.admin.api.patch('/api/builtin-bots/notifications', { status: 'active' }), 200);
    }
    await post(ann, general, 'after enabling @Ben Baker');
    const got = await dmsUntil(ben, (a) => a.some((c) => c.includes('after enabling')));
    expect(got.some((c) => c.includes('while disabled'))).toBe(false);
  });

  it("DMs a bot's owner when its webhook failed for good", async () => {
    const b = expectStatus(
      await ann.api.post('/api/bots', {
        name: uniq('hook'),
        webhook_url: 'http://127.0.0.1:9/never',
        events: ['message.created'],
      }),
      201,
    );
    expectStatus(await ann.api.post(`/api/bots/${b.bot_id}/webhook-secret`, {}), 201);
    expectStatus(await ann.api.post(`/api/channels/${general}/members`, { bot_id: b.bot_id }), 201);
    await post(ben, general, 'this goes to a dead webhook');
    const got = await dmsUntil(ann, (a) => a.some((c) => c.includes('webhook delivery to')), 30_000);
    expect(got.find((c) => c.includes('webhook delivery to'))).toContain('failed after 2 attempt');
    // The notification itself is listed too.
    const n = expectStatus(await ann.api.get('/api/notifications'), 200).items as any[];
    expect(n.some((x) => x.kind === 'webhook.failed')).toBe(true);
  });
});
