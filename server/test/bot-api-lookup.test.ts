import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/** GET /api/mentions/users, GET /api/hashtags/search, GET /api/hashtags/preview/{type}/{id}. */
describe('bot API: mentions and hashtags', () => {
  let srv: TestServer;
  let w: World;
  let orgId: string;
  let orgAdmin: UserHandle;
  let zed: UserHandle; // "Zed Member", in the channel
  let zara: UserHandle; // "Zara Outside", not in the channel
  let bot: BotHandle; // "zebra-bot", in the channel
  let bot2: BotHandle; // "zeta-bot", not in the channel
  let channel: string;
  let other: { id: string; admin: UserHandle };
  let otherUser: UserHandle;
  let otherBot: BotHandle;
  const tag = uniq('zz');

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    orgId = org.id;
    orgAdmin = org.admin;
    zara = await w.user({ organization_id: orgId, display_name: 'Zara Outside', department: 'Zoology' });
    zed = await w.user({ organization_id: orgId, display_name: 'Zed Member' });
    bot = await w.bot(orgAdmin.api, {}, { name: 'zebra-bot' });
    bot2 = await w.bot(orgAdmin.api, {}, { name: 'zeta-bot' });
    channel = await w.channel(orgAdmin.api, { name: 'zen-garden' });
    for (const body of [{ user_id: zed.id }, { bot_id: bot.id }])
      expectStatus(await orgAdmin.api.post(`/api/channels/${channel}/members`, body), 201);
    other = await w.org();
    otherUser = await w.user({ organization_id: other.id, display_name: 'Zelda Foreign', department: 'Zoo' });
    otherBot = await w.bot(other.admin.api, {}, { name: 'zorro-bot' });
    await w.channel(other.admin.api, { name: 'zen-foreign' });
  });
  afterAll(() => srv.close());

  describe('GET /api/mentions/users', () => {
    const mentions = (u: { api: any }, query: Record<string, string | number>): Promise<ApiResponse> =>
      u.api.get('/api/mentions/users', { query });

    it('answers typed items: special, user, department, bot; only the caller’s organization', async () => {
      const res = expectStatus(await mentions(orgAdmin, { q: 'z' }), 200);
      const byType = (t: string) => res.items.filter((i: any) => i.type === t).map((i: any) => i.name);
      expect(byType('user').sort()).toEqual(['Zara Outside', 'Zed Member']);
      expect(byType('department')).toEqual(['Zoology']);
      expect(byType('bot').sort()).toEqual(['zebra-bot', 'zeta-bot']);
      expect(byType('special')).toEqual([]);
      expect(JSON.stringify(res)).not.toContain('Zelda');
      expect(JSON.stringify(res)).not.toContain('zorro');
      for (const i of res.items) expect(['special', 'user', 'department', 'bot']).toContain(i.type);
      const user = res.items.find((i: any) => i.name === 'Zara Outside');
      expect(user).toMatchObject({
        id: zara.id,
        mention: '@Zara Outside',
        department: 'Zoology',
        email: zara.email,
      });
      const dept = res.items.find((i: any) => i.type === 'department');
      expect(dept.member_count).toBe(1);
    });

    it('specials @all and @here match their prefix', async () => {
      const all = expectStatus(await mentions(zed, { q: '@a' }), 200);
      expect(all.items[0]).toMatchObject({ type: 'special', id: 'all', mention: '@all' });
      expect(all.items.filter((i: any) => i.type === 'special')).toHaveLength(1);
      const here = expectStatus(await mentions(zed, { q: 'HE' }), 200);
      expect(here.items[0]).toMatchObject({ type: 'special', id: 'here' });
      const both = expectStatus(await mentions(zed, { q: '' }), 200);
      expect(both.items.slice(0, 2).map((i: any) => i.id)).toEqual(['all', 'here']);
    });

    it('channel members come first when channel_id is given', async () => {
      const res = expectStatus(await mentions(zara, { q: 'z', channel_id: channel }), 200);
      const names = res.items.map((i: any) => i.name);
      expect(names.indexOf('Zed Member')).toBeLessThan(names.indexOf('Zara Outside'));
      expect(names.indexOf('zebra-bot')).toBeLessThan(names.indexOf('Zara Outside'));
      expect(names.indexOf('zebra-bot')).toBeLessThan(names.indexOf('zeta-bot'));
      const inChannel = res.items
        .filter((i: any) => i.in_channel && i.type !== 'special')
        .map((i: any) => i.name);
      expect(inChannel.sort()).toEqual(['Zed Member', 'zebra-bot']);
      // Without a channel the order is by name: Zara before Zed.
      const plain = expectStatus(await mentions(zara, { q: 'z' }), 200).items.map((i: any) => i.name);
      expect(plain.indexOf('Zara Outside')).toBeLessThan(plain.indexOf('Zed Member'));
    });

    it('bots use it with users:read; the channel must be visible', async () => {
      const res = expectStatus(await mentions(bot, { q: 'zed', channel_id: channel }), 200);
      expect(res.items.map((i: any) => i.name)).toEqual(['Zed Member']);
      expect((await mentions(bot2, { q: 'z', channel_id: channel })).status).toBe(404); // not a member
      const noScope = await w.bot(orgAdmin.api, { scopes: ['messages:read'] });
      const r = await mentions(noScope, { q: 'z' });
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'users:read' });
      const revoked = await w.bot(orgAdmin.api);
      expectStatus(await orgAdmin.api.delete(`/api/bots/${revoked.id}/api-keys/${revoked.keyId}`), 200);
      expect((await mentions(revoked, { q: 'z' })).status).toBe(401);
    });

    it('another organization’s channel looks like nothing; bad input is 400', async () => {
      const foreign = await mentions(other.admin, { q: 'z', channel_id: channel });
      expect(foreign.status).toBe(404);
      expect((await mentions(otherBot, { q: 'z', channel_id: channel })).status).toBe(404);
      const priv = await w.channel(orgAdmin.api, { is_private: true });
      expect((await mentions(zara, { q: 'z', channel_id: priv })).status).toBe(404);
      expect((await mentions(zara, { q: 'z', channel_id: randomUUID() })).status).toBe(404);
      // The other org sees its own people only.
      const theirs = expectStatus(await mentions(other.admin, { q: 'zel' }), 200);
      expect(theirs.items.map((i: any) => i.id)).toEqual([otherUser.id]);
      const cases: [Record<string, string | number>, string][] = [
        [{}, 'q'],
        [{ q: 'x'.repeat(101) }, 'q'],
        [{ q: 'z', channel_id: 'general' }, 'channel_id'],
        [{ q: 'z', limit: 0 }, 'limit'],
        [{ q: 'z', limit: 51 }, 'limit'],
        [{ q: 'z', extra: 1 }, 'extra'],
      ];
      for (const [query, field] of cases) {
        const res = await mentions(zara, query);
        expect(res.status, JSON.stringify(query)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expect(expectStatus(await mentions(zara, { q: '', limit: 2 }), 200).items).toHaveLength(2);
      expect((await w.anon.get('/api/mentions/users', { query: { q: 'z' } })).status).toBe(401);
    });
  });

  describe('hashtags', () => {
    let projectId: string;
    let topicId: string;
    let taskId: string;
    let hiddenProject: string;
    let hiddenTask: string;
    let privChannel: string;
    let foreignTask: string;

    beforeAll(async () => {
      ({ projectId, topicId } = await w.project(zed.api));
      expectStatus(await zed.api.patch(`/api/channels/${channel}`, { description: 'Calm place' }), 200);
      taskId = expectStatus(
        await zed.api.post(`/api/topics/${topicId}/tasks`, {
          title: `Zen ${tag} rollout`,
          description: 'Roll it out',
          priority: 'high',
          assignee_id: zed.id,
          due_date: '2031-01-31',
        }),
        201,
      ).task_id;
      const hidden = await w.project(orgAdmin.api);
      hiddenProject = hidden.projectId;
      hiddenTask = expectStatus(
        await orgAdmin.api.post(`/api/topics/${hidden.topicId}/tasks`, { title: `Zen ${tag} secret` }),
        201,
      ).task_id;
      privChannel = await w.channel(orgAdmin.api, { name: `zen-private-${tag}`, is_private: true });
      const foreign = await w.project(other.admin.api);
      foreignTask = expectStatus(
        await other.admin.api.post(`/api/topics/${foreign.topicId}/tasks`, { title: `Zen ${tag} foreign` }),
        201,
      ).task_id;
      // Tags have no endpoint of their own yet: create them in the database.
      const dir = srv.app.services.storage.stores.directory;
      await dir.insertTag({
        id: randomUUID(),
        org_id: orgId,
        name: `${tag}-release`,
        created_at: new Date().toISOString(),
      });
      await dir.insertTag({
        id: randomUUID(),
        org_id: other.id,
        name: `${tag}-foreign`,
        created_at: new Date().toISOString(),
      });
    });

    const search = (u: { api: any }, query: Record<string, string | number>): Promise<ApiResponse> =>
      u.api.get('/api/hashtags/search', { query });

    it('searches channels, projects, tasks and tags the caller can see', async () => {
      const res = expectStatus(await search(zed, { q: `#${tag}` }), 200);
      const got = res.items.map((i: any) => `${i.type}:${i.name}`);
      expect(got.sort()).toEqual([`tag:${tag}-release`, `task:Zen ${tag} rollout`].sort());
      const task = res.items.find((i: any) => i.type === 'task');
      expect(task).toMatchObject({ id: taskId, status: 'todo', topic_id: topicId, project_id: projectId });
      const zen = expectStatus(await search(zed, { q: 'zen' }), 200);
      const channels = zen.items.filter((i: any) => i.type === 'channel').map((i: any) => i.name);
      expect(channels).toContain('zen-garden');
      expect(channels).not.toContain(`zen-private-${tag}`);
      expect(channels).not.toContain('zen-foreign');
      // The org admin sees the private channel and every project of its organization.
      const admin = expectStatus(await search(orgAdmin, { q: tag }), 200).items.map(
        (i: any) => `${i.type}:${i.name}`,
      );
      expect(admin).toEqual(
        expect.arrayContaining([
          `channel:zen-private-${tag}`,
          `task:Zen ${tag} secret`,
          `task:Zen ${tag} rollout`,
        ]),
      );
      expect(admin.join()).not.toContain('foreign');
      const proj = expectStatus(await search(zed, { q: '' }), 200).items.filter(
        (i: any) => i.type === 'project',
      );
      expect(proj.map((p: any) => p.id)).toEqual([projectId]);
      expect(proj[0].hashtag).toBe(`#${proj[0].name}`);
    });

    it('bots see what they are members of (channels:read)', async () => {
      const res = expectStatus(await search(bot, { q: 'zen' }), 200);
      expect(res.items.filter((i: any) => i.type === 'channel').map((i: any) => i.name)).toEqual([
        'zen-garden',
      ]);
      expect(res.items.some((i: any) => i.type === 'task')).toBe(false);
      const noScope = await w.bot(orgAdmin.api, { scopes: ['tasks:read'] });
      expect((await search(noScope, { q: 'zen' })).body.error).toMatchObject({
        code: 'insufficient_scope',
        scope: 'channels:read',
      });
    });

    it('validates the search query', async () => {
      for (const [query, field] of [
        [{}, 'q'],
        [{ q: 'x'.repeat(101) }, 'q'],
        [{ q: 'x', limit: 51 }, 'limit'],
        [{ q: 'x', type: 'task' }, 'type'],
      ] as [Record<string, string | number>, string][]) {
        const res = await search(zed, query);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expect((await w.anon.get('/api/hashtags/search', { query: { q: 'x' } })).status).toBe(401);
    });

    const preview = (u: { api: any }, type: string, id: string): Promise<ApiResponse> =>
      u.api.get(`/api/hashtags/preview/${type}/${id}`);

    it('previews a channel, a project and a task', async () => {
      expectStatus(await zed.api.post(`/api/channels/${channel}/messages`, { content: 'hi' }), 201);
      const c = expectStatus(await preview(zara, 'channel', channel), 200);
      expect(c).toMatchObject({
        type: 'channel',
        id: channel,
        title: '#zen-garden',
        description: 'Calm place',
      });
      expect(c.details).toMatchObject({
        name: 'zen-garden',
        is_private: false,
        member_count: 3,
        message_count: 1,
      });
      const p = expectStatus(await preview(zed, 'project', projectId), 200);
      expect(p).toMatchObject({ type: 'project', id: projectId });
      expect(p.details).toMatchObject({ member_count: 1, topic_count: 1, task_count: 1, open_task_count: 1 });
      const t = expectStatus(await preview(zed, 'task', taskId), 200);
      expect(t).toMatchObject({
        type: 'task',
        id: taskId,
        title: `Zen ${tag} rollout`,
        description: 'Roll it out',
      });
      expect(t.details).toMatchObject({
        status: 'todo',
        priority: 'high',
        due_date: '2031-01-31',
        assignee_id: zed.id,
        assignee_name: 'Zed Member',
        topic_id: topicId,
        project_id: projectId,
      });
      // A bot previews the channel it is in.
      expectStatus(await preview(bot, 'channel', channel), 200);
    });

    it('anything not visible is 404; a bad type or id is 400', async () => {
      for (const [who, type, id] of [
        [zed, 'project', hiddenProject],
        [zed, 'task', hiddenTask],
        [zara, 'channel', privChannel],
        [zed, 'task', foreignTask],
        [other.admin, 'channel', channel],
        [other.admin, 'project', projectId],
        [other.admin, 'task', taskId],
        [otherBot, 'channel', channel],
        [bot2, 'channel', channel],
        [zed, 'task', randomUUID()],
      ] as [{ api: any }, string, string][]) {
        const res = await preview(who, type, id);
        expect(res.status, `${type} ${id}`).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      const badType = await preview(zed, 'user', zed.id);
      expect(badType.status).toBe(400);
      expect(badType.body.error.field).toBe('type');
      const badId = await preview(zed, 'task', 'abc');
      expect(badId.status).toBe(400);
      expect(badId.body.error.field).toBe('id');
      const noScope = await w.bot(orgAdmin.api, { scopes: ['messages:read'] });
      expect((await preview(noScope, 'channel', channel)).status).toBe(403);
    });
  });
});
