import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { login, uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Issue 17's server side: archiving and renaming channels, projects and topics (with their events),
 * the sidebar's `joined` listing, one's own password changed only with the current one, sign out
 * everywhere, emoji reactions (REST, events, counts in MCP read_messages) and a slash command
 * registered by several bots resolving to the one in the room.
 */
describe('team set-up, reactions and command resolution', () => {
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let bob: UserHandle;
  let outsider: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    owner = await w.user({ role: 'member', organization_id: org.id }, org.admin.api);
    bob = await w.user({ role: 'member', organization_id: org.id }, org.admin.api);
    outsider = await w.user({ role: 'member' }); // the default organization: another one
  });
  afterAll(async () => {
    await srv?.close();
  });

  const eventsOf = async (type: string, key: string, id: string) => {
    const rows = await srv.app.services.storage.stores.events.listAfter(0, 1_000_000);
    return rows.filter((r) => r.type === type && (JSON.parse(r.data) as Record<string, unknown>)[key] === id);
  };

  it('channels: created and archived emit events; archived leaves the lists and takes no messages', async () => {
    const ch = expectStatus(await owner.api.post('/api/channels', { name: uniq('arch') }), 201);
    expect(await eventsOf('channel.created', 'channel_id', ch.id)).toHaveLength(1);
    expectStatus(await bob.api.post(`/api/channels/${ch.id}/members`, { user_id: bob.id }), 201);
    // bad input, another org (404), not the creator (403), a bot key (user-only: 403)
    expectStatus(await owner.api.post('/api/channels/not-a-uuid/archive'), 400);
    expectStatus(await outsider.api.post(`/api/channels/${ch.id}/archive`), 404);
    expectStatus(await bob.api.post(`/api/channels/${ch.id}/archive`), 403);
    const bot = await w.bot(owner.api);
    expectStatus(await bot.api.post(`/api/channels/${ch.id}/archive`), 403);
    // joined: bob's sidebar lists it, then not after leaving
    const joined = async (u: UserHandle) =>
      (
        expectStatus(await u.api.get('/api/containers?type=channels&joined=true'), 200).channels as {
          id: string;
        }[]
      ).map((c) => c.id);
    expect(await joined(bob)).toContain(ch.id);
    const archived = expectStatus(await owner.api.post(`/api/channels/${ch.id}/archive`), 200);
    expect(archived.archived_at).toEqual(expect.any(String));
    expect(await eventsOf('channel.archived', 'channel_id', ch.id)).toHaveLength(1);
    expectStatus(await owner.api.post(`/api/channels/${ch.id}/archive`), 409);
    expect(await joined(bob)).not.toContain(ch.id);
    const all = expectStatus(await owner.api.get('/api/channels'), 200).items as { id: string }[];
    expect(all.map((c) => c.id)).not.toContain(ch.id);
    expectStatus(await owner.api.post(`/api/channels/${ch.id}/messages`, { content: 'late' }), 409);
    expectStatus(await owner.api.get(`/api/channels/${ch.id}/messages`), 200); // history stays readable
  });

  it('projects and topics: renamed and archived with events; permissions', async () => {
    const { projectId, topicId } = await w.project(owner.api);
    expect(await eventsOf('project.created', 'project_id', projectId)).toHaveLength(1);
    expect(await eventsOf('topic.created', 'topic_id', topicId)).toHaveLength(1);
    expectStatus(await owner.api.patch(`/api/projects/${projectId}`, { name: '' }), 400);
    expectStatus(await bob.api.patch(`/api/projects/${projectId}`, { name: 'x' }), 404); // not a member
    expectStatus(await outsider.api.patch(`/api/topics/${topicId}`, { name: 'x' }), 404);
    const p = expectStatus(
      await owner.api.patch(`/api/projects/${projectId}`, { name: 'Launch', description: 'Q3' }),
      200,
    );
    expect([p.name, p.description]).toEqual(['Launch', 'Q3']);
    const [ev] = await eventsOf('project.updated', 'project_id', projectId);
    expect(JSON.parse(ev!.data).changes).toEqual(['name', 'description']);
    expect(
      expectStatus(await owner.api.patch(`/api/topics/${topicId}`, { name: 'Planning' }), 200).name,
    ).toBe('Planning');
    expectStatus(await bob.api.get(`/api/projects/${projectId}/members`), 404);
    expectStatus(await owner.api.post(`/api/projects/${projectId}/members`, { user_id: bob.id }), 201);
    const members = expectStatus(await bob.api.get(`/api/projects/${projectId}/members`), 200).items;
    expect(members.map((m: { member_id: string }) => m.member_id)).toEqual([owner.id, bob.id]);
    expect(p.created_by).toBe(owner.id);
    expectStatus(await bob.api.post(`/api/topics/${topicId}/archive`), 403);
    expectStatus(await owner.api.post(`/api/topics/${topicId}/archive`), 200);
    expectStatus(await owner.api.post(`/api/topics/${topicId}/messages`, { content: 'late' }), 409);
    const topics = expectStatus(await owner.api.get(`/api/projects/${projectId}/topics`), 200)
      .items as unknown[];
    expect(topics).toHaveLength(0);
    expectStatus(await bob.api.post(`/api/projects/${projectId}/archive`), 403);
    expectStatus(await owner.api.post(`/api/projects/${projectId}/archive`), 200);
    const projects = expectStatus(await owner.api.get('/api/projects'), 200).items as { id: string }[];
    expect(projects.map((x) => x.id)).not.toContain(projectId);
  });

  it("own password: needs the current one (400 without, 403 wrong); an admin resets another's without it", async () => {
    const u = await w.user({ role: 'member' });
    expectStatus(await u.api.patch(`/api/users/${u.id}`, { password: 'new-password-1' }), 400);
    expectStatus(
      await u.api.patch(`/api/users/${u.id}`, {
        password: 'new-password-1',
        current_password: 'wrong-one-1',
      }),
      403,
    );
    expectStatus(
      await u.api.patch(`/api/users/${u.id}`, {
        password: 'new-password-1',
        current_password: 'user-password-1',
      }),
      200,
    );
    await login(srv.url, u.email, 'new-password-1');
    expectStatus(await w.admin.api.patch(`/api/users/${u.id}`, { password: 'reset-password-1' }), 200);
    await login(srv.url, u.email, 'reset-password-1');
  });

  it('sign out everywhere revokes every session of the user only', async () => {
    const u = await w.user({ role: 'member' });
    const second = w.anon.as(await login(srv.url, u.email, 'user-password-1'));
    expectStatus(await u.api.post('/api/auth/logout-all'), 200);
    expectStatus(await u.api.get('/api/auth/me'), 401);
    expectStatus(await second.get('/api/auth/me'), 401);
    expectStatus(await bob.api.get('/api/auth/me'), 200);
  });

  it('reactions: add, count, remove; events; MCP read_messages shows counts; bad input, scope, other org', async () => {
    const ch = await w.channel(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${ch}/members`, { user_id: bob.id }), 201);
    const m = expectStatus(await owner.api.post(`/api/channels/${ch}/messages`, { content: 'ship it' }), 201);
    const react = (u: UserHandle, emoji: string) => u.api.post(`/api/messages/${m.id}/reactions`, { emoji });
    expectStatus(await react(owner, ''), 400);
    expectStatus(await react(owner, '<b>'), 400);
    expectStatus(await outsider.api.post(`/api/messages/${m.id}/reactions`, { emoji: '👍' }), 404);
    const first = expectStatus(await react(owner, '👍'), 200);
    expect(first.changed).toBe(true);
    expect(expectStatus(await react(owner, '👍'), 200).changed).toBe(false); // once per person
    const both = expectStatus(await react(bob, '👍'), 200);
    expect(both.reactions).toEqual([
      {
        emoji: '👍',
        count: 2,
        reactors: [
          { type: 'user', id: owner.id },
          { type: 'user', id: bob.id },
        ],
      },
    ]);
    expectStatus(await react(bob, '🎉'), 200);
    const added = await eventsOf('reaction.added', 'message_id', m.id);
    expect(added.map((e) => JSON.parse(e.data).count)).toEqual([1, 2, 1]);
    const listed = expectStatus(await owner.api.get(`/api/channels/${ch}/messages`), 200).items[0];
    expect(listed.reactions.map((r: { emoji: string; count: number }) => [r.emoji, r.count])).toEqual([
      ['👍', 2],
      ['🎉', 1],
    ]);
    // A bot: needs messages:write to react; reads the counts over MCP.
    const reader = await w.bot(owner.api, { scopes: ['messages:read'] });
    expectStatus(await owner.api.post(`/api/channels/${ch}/members`, { bot_id: reader.id }), 201);
    expectStatus(await reader.api.post(`/api/messages/${m.id}/reactions`, { emoji: '👀' }), 403);
    const session = await rawSession(srv.url, reader.key);
    const r = await rawMcp(srv.url, {
      key: reader.key,
      session,
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'read_messages', arguments: { channel_id: ch } },
      },
    });
    expect(JSON.stringify(r.body)).toContain('reactions: 👍 2, 🎉 1');
    const removed = await bob.api.delete(`/api/messages/${m.id}/reactions/${encodeURIComponent('👍')}`);
    expect(expectStatus(removed, 200).reactions[0].count).toBe(1);
    const [ev] = await eventsOf('reaction.removed', 'message_id', m.id);
    expect(JSON.parse(ev!.data)).toMatchObject({ emoji: '👍', reactor_id: bob.id, count: 1, channel_id: ch });
  });

  it('a command registered by two bots resolves to the one that is a member of the room', async () => {
    const name = `echo${Math.floor(Math.random() * 1e6)}`;
    const a = await w.bot(owner.api);
    const b = await w.bot(owner.api);
    for (const bot of [a, b])
      expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/commands`, { command: name, description: 'd' }),
        201,
      );
    const ch = await w.channel(owner.api);
    const run = (extra: Record<string, unknown> = {}) =>
      owner.api.post('/api/commands/execute', { text: `/${name} hi`, channel_id: ch, ...extra });
    expectStatus(await run(), 409); // neither is here: the caller must choose
    expectStatus(await owner.api.post(`/api/channels/${ch}/members`, { bot_id: b.id }), 201);
    expect(expectStatus(await run(), 202).bot_id).toBe(b.id);
    expectStatus(await owner.api.post(`/api/channels/${ch}/members`, { bot_id: a.id }), 201);
    expectStatus(await run(), 409); // both are here
    expect(expectStatus(await run({ bot_id: a.id }), 202).bot_id).toBe(a.id);
  });
});
