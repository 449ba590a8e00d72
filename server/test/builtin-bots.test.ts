import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { dropSchema, startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Built-in bots through the public API (docs/BUILTIN-BOTS.md): installation in every organization,
 * management by the system_admin only, enabling/disabling everywhere, commands run in process, the
 * search and tasks bots acting as the invoking user, and tenant isolation.
 */

const SYSTEM_KEYS = ['approvals', 'notifications', 'search', 'tasks'];

async function builtinRows(api: UserHandle['api'], orgId: string) {
  const bots = expectStatus(await api.get('/api/bots'), 200).items as any[];
  return bots.filter((b) => b.builtin !== null && b.org_id === orgId);
}

const run = (u: UserHandle, text: string, place: Record<string, string> = {}) =>
  u.api.post('/api/commands/execute', { text, ...place });

describe('built-in bots', () => {
  let srv: TestServer;
  let w: World;
  let orgA: { id: string; admin: UserHandle };
  let orgB: { id: string; admin: UserHandle };
  let ann: UserHandle;
  let ben: UserHandle;
  let bea: UserHandle; // in org B

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    orgA = await w.org();
    orgB = await w.org();
    ann = await w.user({ organization_id: orgA.id, display_name: 'Ann Archer' });
    ben = await w.user({ organization_id: orgA.id, display_name: 'Ben Baker' });
    bea = await w.user({ organization_id: orgB.id, display_name: 'Bea Brown' });
  });
  afterAll(() => srv.close());

  const rowOf = async (u: UserHandle, orgId: string, key: string) =>
    (await builtinRows(u.api, orgId)).find((b) => b.builtin === key);

  describe('installation', () => {
    it('every organization, new ones included, has one row of each system bot: no creator, no webhook', async () => {
      for (const [u, org] of [
        [ann, orgA],
        [bea, orgB],
      ] as const) {
        const rows = await builtinRows(u.api, org.id);
        const system = rows.filter((b) => b.type === 'system');
        expect(system.map((b) => b.builtin).sort()).toEqual(SYSTEM_KEYS);
        for (const b of system) {
          expect(b).toMatchObject({ status: 'active', created_by: null, org_id: org.id });
          expect(b.webhook_url).toBeNull();
        }
      }
    });

    it('their commands are in the slash palette, each naming its own organization’s bot', async () => {
      const a = expectStatus(await ann.api.get('/api/commands'), 200).items as any[];
      const b = expectStatus(await bea.api.get('/api/commands'), 200).items as any[];
      const searchA = a.filter((c) => c.command === 'search');
      const searchB = b.filter((c) => c.command === 'search');
      expect(searchA).toHaveLength(1);
      expect(searchB).toHaveLength(1);
      expect(searchA[0].bot_id).toBe((await rowOf(ann, orgA.id, 'search')).id);
      expect(searchB[0].bot_id).toBe((await rowOf(bea, orgB.id, 'search')).id);
      expect(searchA[0].bot_id).not.toBe(searchB[0].bot_id);
      for (const name of ['task', 'notifications']) expect(a.some((c) => c.command === name)).toBe(true);
      // /help lists them too.
      const help = expectStatus(await run(ann, '/help search'), 200);
      expect(help.text).toContain('/search');
    });

    it("an organization never sees another organization's built-in bot (404)", async () => {
      const other = await rowOf(bea, orgB.id, 'search');
      expect((await ann.api.get(`/api/bots/${other.id}`)).status).toBe(404);
      const mine = expectStatus(await ann.api.get('/api/bots'), 200).items as any[];
      expect(mine.some((b) => b.org_id === orgB.id)).toBe(false);
      // Nor mention it.
      const m = expectStatus(await ann.api.get('/api/mentions/users', { query: { q: 'search' } }), 200);
      const bots = (m.items as any[]).filter((i) => i.type === 'bot');
      expect(bots.map((x) => x.id)).toEqual([(await rowOf(ann, orgA.id, 'search')).id]);
    });
  });

  describe('management', () => {
    it('org_admin cannot edit, disable or delete a system bot (403); a member neither', async () => {
      const search = await rowOf(orgA.admin, orgA.id, 'search');
      for (const u of [orgA.admin, ann]) {
        const patch = await u.api.patch(`/api/bots/${search.id}`, { name: 'Mine now' });
        expect(patch.status).toBe(403);
        expect(patch.body.error.code).toBe('forbidden');
        expect((await u.api.patch(`/api/bots/${search.id}`, { status: 'disabled' })).status).toBe(403);
        expect((await u.api.delete(`/api/bots/${search.id}`)).status).toBe(403);
        expect((await u.api.get('/api/builtin-bots')).status).toBe(403);
        expect((await u.api.patch('/api/builtin-bots/search', { status: 'disabled' })).status).toBe(403);
      }
      expect((await rowOf(ann, orgA.id, 'search')).status).toBe('active');
    });

    it('system_admin renames one; deleting is refused (disable instead); no keys, secret or webhook', async () => {
      const tasks = await rowOf(ann, orgA.id, 'tasks');
      const renamed = expectStatus(
        await w.admin.api.patch(`/api/bots/${tasks.id}`, { name: 'Task helper' }),
        200,
      );
      expect(renamed).toMatchObject({ name: 'Task helper', builtin: 'tasks' });
      const del = await w.admin.api.delete(`/api/bots/${tasks.id}`);
      expect(del.status).toBe(403);
      expect(del.body.error.message).toContain('disable');
      const hook = await w.admin.api.patch(`/api/bots/${tasks.id}`, { webhook_url: 'https://example.com/x' });
      expect(hook.status).toBe(400);
      expect(hook.body.error.details?.field ?? hook.body.error.field).toBe('webhook_url');
      expect((await w.admin.api.patch(`/api/bots/${tasks.id}`, { events: ['message.created'] })).status).toBe(
        400,
      );
      expect((await w.admin.api.post(`/api/bots/${tasks.id}/api-keys`, {})).status).toBe(403);
      expect((await w.admin.api.post(`/api/bots/${tasks.id}/webhook-secret`, {})).status).toBe(403);
      const cmd = await w.admin.api.post(`/api/bots/${tasks.id}/commands`, {
        command: 'x',
        description: 'x',
      });
      expect(cmd.status).toBe(403);
      // Still there, under its new name; its command still listed.
      expect((await rowOf(ann, orgA.id, 'tasks')).name).toBe('Task helper');
      const palette = expectStatus(await ann.api.get('/api/commands'), 200).items as any[];
      expect(palette.find((c) => c.command === 'task').bot_name).toBe('Task helper');
    });

    it('GET /api/builtin-bots lists them with their status across organizations', async () => {
      const list = expectStatus(await w.admin.api.get('/api/builtin-bots'), 200).items as any[];
      expect(list.map((b) => b.key).sort()).toEqual(expect.arrayContaining(SYSTEM_KEYS));
      const search = list.find((b) => b.key === 'search');
      expect(search).toMatchObject({ type: 'system', status: 'active' });
      expect(search.organizations.active).toBeGreaterThanOrEqual(3); // bootstrap org, A, B
      expect(search.commands[0]).toMatchObject({ command: 'search' });
      expect(list.find((b) => b.key === 'notifications').org_events).toContain('message.created');
    });

    it('PATCH /api/builtin-bots/{key}: bad input 400, unknown key 404', async () => {
      const bad = await w.admin.api.patch('/api/builtin-bots/search', { status: 'paused' });
      expect(bad.status).toBe(400);
      expect((await w.admin.api.patch('/api/builtin-bots/search', {})).status).toBe(400);
      expect((await w.admin.api.patch('/api/builtin-bots/search', { status: 'active', x: 1 })).status).toBe(
        400,
      );
      const unknown = await w.admin.api.patch('/api/builtin-bots/nope', { status: 'disabled' });
      expect(unknown.status).toBe(404);
    });

    it('disabling everywhere stops the commands in every organization with a clear error; new organizations get it disabled; enabling brings it back', async () => {
      const off = expectStatus(
        await w.admin.api.patch('/api/builtin-bots/search', { status: 'disabled' }),
        200,
      );
      expect(off.status).toBe('disabled');
      expect(off.changed).toBeGreaterThanOrEqual(3);
      for (const u of [ann, bea]) {
        const r = await run(u, '/search anything');
        expect(r.status).toBe(403);
        expect(r.body.error.message).toMatch(/disabled by the system administrator/);
        const palette = expectStatus(await u.api.get('/api/commands'), 200).items as any[];
        expect(palette.some((c) => c.command === 'search')).toBe(false);
      }
      const orgC = await w.org();
      expect((await rowOf(orgC.admin, orgC.id, 'search')).status).toBe('disabled');
      expect((await rowOf(orgC.admin, orgC.id, 'tasks')).status).toBe('active');
      // A DM room with a disabled bot cannot be opened.
      const dm = await ann.api.post('/api/dm-rooms', { bot_ids: [(await rowOf(ann, orgA.id, 'search')).id] });
      expect(dm.status).toBe(403);

      const on = expectStatus(await w.admin.api.patch('/api/builtin-bots/search', { status: 'active' }), 200);
      expect(on).toMatchObject({ status: 'active', organizations: { disabled: 0 } });
      expectStatus(await run(ann, '/search anything'), 202);
      // Per organization, the system_admin may also switch one row: the list says "mixed".
      const rowB = await rowOf(bea, orgB.id, 'search');
      expectStatus(await w.admin.api.patch(`/api/bots/${rowB.id}`, { status: 'disabled' }), 200);
      expect((await run(bea, '/search anything')).status).toBe(403);
      expectStatus(await run(ann, '/search anything'), 202);
      const list = expectStatus(await w.admin.api.get('/api/builtin-bots'), 200).items as any[];
      expect(list.find((b) => b.key === 'search').status).toBe('mixed');
      expectStatus(await w.admin.api.patch('/api/builtin-bots/search', { status: 'active' }), 200);
      expectStatus(await run(bea, '/search anything'), 202);
    });
  });

  describe('search bot', () => {
    let general: string;
    let secret: string;
    let topicId: string;

    beforeAll(async () => {
      general = await w.channel(orgA.admin.api, { name: uniq('general') });
      secret = await w.channel(ben.api, { name: uniq('secret'), is_private: true });
      expectStatus(await ann.api.post(`/api/channels/${general}/members`, { user_id: ann.id }), 201);
      expectStatus(
        await orgA.admin.api.post(`/api/channels/${general}/messages`, {
          content: 'zebra launch plan for Friday',
        }),
        201,
      );
      expectStatus(
        await ben.api.post(`/api/channels/${secret}/messages`, { content: 'zebra salary secret' }),
        201,
      );
      const bChan = await w.channel(orgB.admin.api);
      expectStatus(
        await orgB.admin.api.post(`/api/channels/${bChan}/messages`, { content: 'zebra other org' }),
        201,
      );
      const p = await w.project(ann.api);
      topicId = p.topicId;
      expectStatus(await ann.api.post(`/api/topics/${topicId}/tasks`, { title: 'Feed the zebra' }), 201);
    });

    it('/search answers the invoking user only, with what they can open, never more', async () => {
      const r = expectStatus(await run(ann, '/search zebra', { channel_id: general }), 202);
      expect(r.delivery.status).toBe('delivered');
      expect(r.reply.ephemeral).toBe(true);
      expect(r.reply.message_id).toBeNull();
      const text: string = r.reply.content;
      expect(text).toContain('**zebra** launch plan');
      expect(text).toContain(`/#/channel/${general}`);
      expect(text).toContain('Feed the');
      expect(text).not.toContain('salary'); // Ben's private channel
      expect(text).not.toContain('other org'); // another organization
      // Ben, a member of the private channel, does see it.
      const forBen = expectStatus(await run(ben, '/search zebra'), 202);
      expect(forBen.reply.content).toContain('salary');
      expect(forBen.reply.content).not.toContain('Feed the'); // Ann's project
      // Bea in org B sees only her organization's.
      const forBea = expectStatus(await run(bea, '/search zebra'), 202);
      expect(forBea.reply.content).toContain('other org');
      expect(forBea.reply.content).not.toContain('launch plan');
      // Nothing was posted in the channel.
      const msgs = expectStatus(await ann.api.get(`/api/channels/${general}/messages`), 200).items as any[];
      expect(msgs.some((m) => m.sender_type === 'bot')).toBe(false);
    });

    it('filters: type:, in:#channel; bad type and empty terms answer usage; not a member is fine', async () => {
      const tasksOnly = expectStatus(await run(ann, '/search zebra type:tasks'), 202).reply.content;
      expect(tasksOnly).toContain('Feed the');
      expect(tasksOnly).not.toContain('launch plan');
      const chName = expectStatus(await ann.api.get(`/api/channels/${general}`), 200).name;
      const inChan = expectStatus(await run(ann, `/search zebra in:#${chName}`), 202).reply.content;
      expect(inChan).toContain('launch plan');
      expect(inChan).not.toContain('Feed the');
      const bad = expectStatus(await run(ann, '/search zebra type:cats'), 202).reply;
      expect(bad).toMatchObject({ ephemeral: true });
      expect(bad.content).toMatch(/type: must be messages, tasks, users or channels/);
      const empty = expectStatus(await run(ann, '/search'), 202).reply.content;
      expect(empty).toMatch(/Usage/);
      const none = expectStatus(await run(ann, '/search qwertyuiop'), 202).reply.content;
      expect(none).toMatch(/No results/);
    });

    it('a DM to the search bot is answered in that DM, as its author', async () => {
      const searchBot = await rowOf(ann, orgA.id, 'search');
      const room = expectStatus(await ann.api.post('/api/dm-rooms', { bot_ids: [searchBot.id] }), 201);
      expect(room.members).toHaveLength(2);
      expectStatus(await ann.api.post(`/api/dm-rooms/${room.id}/messages`, { content: 'zebra' }), 201);
      const answer = await waitFor(async () => {
        const items = expectStatus(await ann.api.get(`/api/dm-rooms/${room.id}/messages`), 200)
          .items as any[];
        return items.find((m) => m.sender_type === 'bot' && m.bot_id === searchBot.id);
      });
      expect(answer.content).toContain('launch plan');
      expect(answer.content).not.toContain('salary');
      // Another organization's search bot cannot be DMed.
      const other = await rowOf(bea, orgB.id, 'search');
      expect((await ann.api.post('/api/dm-rooms', { bot_ids: [other.id] })).status).toBe(404);
    });
  });

  describe('platform bots: joining where their command is used', () => {
    it('a member using /standup in a channel adds the bot; any member may remove it; a non-member cannot add it', async () => {
      const standup = await rowOf(ann, orgA.id, 'standup');
      expect(standup).toMatchObject({ type: 'platform', created_by: null });
      const ch = await w.channel(ann.api, { name: uniq('standup') });
      expectStatus(await ann.api.post(`/api/channels/${ch}/members`, { user_id: ben.id }), 201);
      const botsIn = async () =>
        (expectStatus(await ann.api.get(`/api/channels/${ch}/members`), 200).items as any[])
          .filter((m) => m.member_type === 'bot')
          .map((m) => m.member_id);
      expect(await botsIn()).toEqual([]);
      // A user of the organization who is not a member of the (public) channel may not add it.
      const outsider = await w.user({ organization_id: orgA.id });
      const refused = await run(outsider, '/standup show', { channel_id: ch });
      expect(refused.status).toBe(403);
      expect(await botsIn()).toEqual([]);
      // A member may: the bot joins, then handles the command.
      const r = expectStatus(await run(ann, '/standup show', { channel_id: ch }), 202);
      expect(r.delivery.status).toBe('delivered');
      expect(await botsIn()).toEqual([standup.id]);
      // Ben, a plain member (not the channel's creator, not an admin), sends it away.
      expectStatus(await ben.api.delete(`/api/channels/${ch}/members/bots/${standup.id}`), 200);
      expect(await botsIn()).toEqual([]);
      // He still may not remove Ann (only the creator or an admin removes other users).
      expect((await ben.api.delete(`/api/channels/${ch}/members/users/${ann.id}`)).status).toBe(403);
      // In a DM room nobody can add it: the command is refused.
      const dm = expectStatus(await ann.api.post('/api/dm-rooms', { user_ids: [ben.id] }), 201);
      expect((await run(ann, '/standup show', { dm_room_id: dm.id })).status).toBe(403);
    });

    it("another organization's platform bot cannot be added (404); each organization uses its own", async () => {
      const theirs = await rowOf(bea, orgB.id, 'standup');
      const mine = await rowOf(ann, orgA.id, 'standup');
      expect(theirs.id).not.toBe(mine.id);
      const ch = await w.channel(ann.api);
      expect((await ann.api.post(`/api/channels/${ch}/members`, { bot_id: theirs.id })).status).toBe(404);
      expectStatus(await run(ann, '/standup show', { channel_id: ch }), 202);
      const members = expectStatus(await ann.api.get(`/api/channels/${ch}/members`), 200).items as any[];
      expect(members.filter((m) => m.member_type === 'bot').map((m) => m.member_id)).toEqual([mine.id]);
    });
  });

  describe('tasks bot', () => {
    let topicId: string;
    let projectId: string;

    beforeAll(async () => {
      const p = await w.project(ann.api);
      topicId = p.topicId;
      projectId = p.projectId;
      expectStatus(await ann.api.post(`/api/projects/${projectId}/members`, { user_id: ben.id }), 201);
    });

    it('/task add creates the task as the invoking user, with assignee, due date and priority', async () => {
      const r = expectStatus(
        await run(ann, '/task add Write the launch notes @"Ben Baker" due:2030-05-01 !high', {
          topic_id: topicId,
        }),
        202,
      );
      expect(r.reply).toMatchObject({ ephemeral: true });
      expect(r.reply.content).toContain('Task created');
      const tasks = expectStatus(await ann.api.get(`/api/topics/${topicId}/tasks`), 200).items as any[];
      const t = tasks.find((x) => x.title === 'Write the launch notes');
      expect(t).toMatchObject({
        assignee_id: ben.id,
        due_date: '2030-05-01',
        priority: 'high',
        status: 'todo',
        created_by_type: 'user',
        created_by_id: ann.id,
      });
      expect(r.reply.content).toContain(t.id.slice(-8));
    });

    it('/task list and /task done <ref>; errors are answered to the user', async () => {
      expectStatus(await run(ann, '/task add Order cake @me !low', { topic_id: topicId }), 202);
      const mine = expectStatus(await run(ann, '/task list mine', { topic_id: topicId }), 202).reply.content;
      expect(mine).toContain('Order cake');
      expect(mine).not.toContain('launch notes');
      const all = expectStatus(await run(ann, '/task list', { topic_id: topicId }), 202).reply.content;
      expect(all).toContain('launch notes');
      const tasks = expectStatus(await ann.api.get(`/api/topics/${topicId}/tasks`), 200).items as any[];
      const cake = tasks.find((x) => x.title === 'Order cake');
      const done = expectStatus(
        await run(ben, `/task done ${cake.id.slice(-8)}`, { topic_id: topicId }),
        202,
      );
      expect(done.reply.content).toContain('Done');
      expect(expectStatus(await ann.api.get(`/api/tasks/${cake.id}`), 200).status).toBe('done');
      const doneList = expectStatus(await run(ann, '/task list done', { topic_id: topicId }), 202).reply
        .content;
      expect(doneList).toContain('Order cake');
      // Outside a topic: mine across topics works, the rest asks for a topic.
      const across = expectStatus(await run(ben, '/task list mine'), 202).reply.content;
      expect(across).toContain('launch notes');
      const outside = expectStatus(await run(ann, '/task add Something'), 202).reply.content;
      expect(outside).toMatch(/run \/task in a topic/);
      // Bad input.
      for (const [text, re] of [
        ['/task add', /title/],
        ['/task add X due:tomorrow', /YYYY-MM-DD/],
        ['/task add X !whenever', /priority/],
        ['/task add X @"Nobody Here"', /No user called/],
        ['/task done zz', /by its id/],
        ['/task done 00000000', /No task/],
        ['/task list someday', /takes mine/],
        ['/task frobnicate', /Unknown subcommand/],
      ] as const) {
        const reply = expectStatus(await run(ann, text, { topic_id: topicId }), 202).reply;
        expect(reply.ephemeral).toBe(true);
        expect(reply.content).toMatch(re);
      }
    });

    it('acts only where the invoking user may: a topic they cannot reach is not found', async () => {
      const other = await w.user({ organization_id: orgA.id });
      const r = await run(other, '/task add Sneaky', { topic_id: topicId });
      expect(r.status).toBe(404); // the container check of /api/commands/execute
      const tasks = expectStatus(await ann.api.get(`/api/topics/${topicId}/tasks`), 200).items as any[];
      expect(tasks.some((t) => t.title === 'Sneaky')).toBe(false);
      // Org B's user cannot name org A's topic either.
      expect((await run(bea, '/task list', { topic_id: topicId })).status).toBe(404);
    });
  });
});

describe('built-in bots: installation across restarts', () => {
  it('is idempotent: the same rows and commands after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'workroom-builtin-'));
    const schema = `wr_test_${randomBytes(6).toString('hex')}`;
    const env: Record<string, string> = { WORKROOM_DATA_DIR: dataDir };
    if (process.env.DATABASE_URL) env.WORKROOM_DATABASE_SCHEMA = schema;
    const snapshot = async (srv: TestServer) => {
      const w = await World.create(srv.url);
      const bots = (expectStatus(await w.admin.api.get('/api/bots'), 200).items as any[])
        .filter((b) => b.builtin !== null)
        .map((b) => `${b.org_id}:${b.builtin}:${b.id}:${b.status}`)
        .sort();
      const cmds = (expectStatus(await w.admin.api.get('/api/commands'), 200).items as any[])
        .filter((c) => c.source === 'bot')
        .map((c) => `${c.command}:${c.bot_id}`)
        .sort();
      return { w, bots, cmds };
    };
    let srv = await startTestServer(env);
    try {
      const first = await snapshot(srv);
      await first.w.org(); // a second organization
      const before = await snapshot(srv);
      expect(before.bots.length).toBe(first.bots.length * 2);
      await srv.app.close();
      srv = await startTestServer(env);
      const after = await snapshot(srv);
      expect(after.bots).toEqual(before.bots);
      expect(after.cmds).toEqual(before.cmds);
    } finally {
      await srv.app.close();
      if (process.env.DATABASE_URL) await dropSchema(process.env.DATABASE_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

async function waitFor<T>(fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
