import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { TokenBucketLimiter } from '../src/domain/token-bucket.js';
import { FrozenClock } from './helpers/frozen-clock.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Guard rails of agent grants (issue 21; docs/API.md "Guard rails"): the per-day write budget, the
 * budget rule and the burst rule that pause a key, a paused key refused on REST and MCP (legacy and
 * modern) with nothing written, the owner and the organization's admins notified (a DM from the
 * notifications bot), resume by a manager (audited), and who may not.
 */

const HOUR = 3_600_000;
const MODERN = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'guardrails-test', version: '1' },
};

describe('token buckets in memory: a slow bucket outlives the sweep of fast ones', () => {
  it("a spent day's budget is not forgotten when 10,000 fast buckets are swept", () => {
    let t = 0;
    const limiter = new TokenBucketLimiter(() => t);
    const perDay = 2 / 86_400;
    expect(limiter.take('day', perDay, 2).allowed).toBe(true);
    expect(limiter.take('day', perDay, 2).allowed).toBe(true);
    expect(limiter.take('day', perDay, 2).allowed).toBe(false);
    for (let i = 0; i < 10_000; i++) limiter.take(`fast-${i}`, 10, 10);
    t += 60_000; // every fast bucket is full again; the day's has refilled 0.0014 of a token
    limiter.take('fast-trigger', 10, 10); // sweeps
    expect(limiter.take('day', perDay, 2).allowed).toBe(false);
  });
});

describe('agent grants: guard rails', () => {
  // Buckets refill and windows pass only when the test moves this clock.
  const clock = new FrozenClock();
  let srv: TestServer;
  let w: World;
  let orgAdmin: UserHandle;
  let owner: UserHandle;
  let member: UserHandle;
  let other: UserHandle; // the admin of another organization
  let botId: string;
  let notifier: string;
  const chans: string[] = [];

  beforeAll(async () => {
    srv = await startTestServer({}, { clock });
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    owner = await w.user({ organization_id: org.id });
    member = await w.user({ organization_id: org.id });
    other = (await w.org()).admin;
    botId = expectStatus(await owner.api.post('/api/bots', { name: uniq('agent') }), 201).bot_id;
    for (let i = 0; i < 6; i++) {
      const c = await w.channel(owner.api);
      expectStatus(await owner.api.post(`/api/channels/${c}/members`, { bot_id: botId }), 201);
      chans.push(c);
    }
    const bots = expectStatus(await owner.api.get('/api/bots'), 200).items as any[];
    notifier = bots.find((b) => b.builtin === 'notifications' && b.org_id === org.id).id;
  });
  afterAll(() => srv?.close());

  const keysPath = (k = '') => `/api/bots/${botId}/api-keys${k ? `/${k}` : ''}`;
  async function keyWith(grants: Record<string, unknown>): Promise<{ key: string; id: string }> {
    const k = expectStatus(await owner.api.post(keysPath(), { grants }), 201);
    return { key: k.key, id: k.id };
  }
  const send = (key: string, channel: string, content: string, headers?: Record<string, string>) =>
    w.anon.as(key).post(`/api/channels/${channel}/messages`, { content }, { headers });
  const botMessages = async () =>
    Number(
      (
        await sql<{ n: number }>`select count(*) as n from messages where bot_id = ${botId}`.execute(
          srv.app.services.storage.stores.db,
        )
      ).rows[0]!.n,
    );
  const keyView = async (id: string) =>
    (expectStatus(await owner.api.get(keysPath()), 200).items as any[]).find((k) => k.id === id);
  const audit = async (tool: string) =>
    expectStatus(await owner.api.get(`/api/bots/${botId}/tool-calls`, { query: { tool } }), 200)
      .items as any[];
  /** The notifications bot's DMs to `u`. */
  const dms = async (u: UserHandle): Promise<string[]> => {
    const rooms = expectStatus(await u.api.get('/api/dm-rooms'), 200).items as any[];
    const room = rooms.find((r) => r.members.some((m: any) => m.type === 'bot' && m.id === notifier));
    if (!room) return [];
    const items = expectStatus(await u.api.get(`/api/dm-rooms/${room.id}/messages`), 200).items as any[];
    return items.filter((m) => m.bot_id === notifier).map((m) => m.content as string);
  };
  async function mcpCall(
    era: 'legacy' | 'modern',
    key: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<any> {
    const params = { name: tool, arguments: args };
    const r =
      era === 'legacy'
        ? await rawMcp(srv.url, {
            key,
            session: await rawSession(srv.url, key),
            body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params },
          })
        : await rawMcp(srv.url, {
            key,
            headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': tool },
            body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { ...params, _meta: META } },
          });
    expect(r.status, r.text).toBe(200);
    return r.body;
  }

  it('a per-day budget beside the hourly one: both hold, a dry run spends nothing, a failed write gives back', async () => {
    const k = await keyWith({ writes_per_hour: 3, writes_per_day: 4, pause_on: { budget: false } });
    for (let i = 0; i < 3; i++) expectStatus(await send(k.key, chans[0]!, `day ${i}`), 201);
    const hour = await send(k.key, chans[0]!, 'day 3');
    expect([hour.status, hour.body.error.code, hour.body.error.grant]).toEqual([
      429,
      'write_budget_exceeded',
      'writes_per_hour',
    ]);
    clock.advance(HOUR); // the hour refills; the day has one write left
    // A dry run asks, spends nothing: the real call after it still goes through.
    expectStatus(await send(k.key, chans[0]!, 'dry', { 'x-dry-run': 'true' }), 200);
    // A failed write (a channel the bot is not in) gives its tokens back.
    expect((await send(k.key, crypto.randomUUID(), 'nowhere')).status).toBe(404);
    expectStatus(await send(k.key, chans[0]!, 'day 4'), 201);
    const day = await send(k.key, chans[0]!, 'day 5');
    expect([day.status, day.body.error.code, day.body.error.grant]).toEqual([
      429,
      'write_budget_exceeded',
      'writes_per_day',
    ]);
    expect(Number(day.headers.get('retry-after'))).toBeGreaterThan(3600);
    // A dry run of a spent budget says so.
    const dry = await send(k.key, chans[0]!, 'dry', { 'x-dry-run': 'true' });
    expect([dry.status, dry.body.error.grant]).toEqual([429, 'writes_per_day']);
    // Over MCP the same: refused naming the day's grant.
    const m = await mcpCall('modern', k.key, 'send_message', { channel_id: chans[0], content: 'mcp day' });
    expect(m.result.content[0].text).toMatch(/^Error \(write_budget_exceeded\).*writes_per_day/);
    // Two hours on, the shared buckets' pruning (PostgreSQL; untouched for an hour) keeps the day's.
    clock.advance(2 * HOUR);
    await srv.app.services.storage.sharedRateBuckets?.prune(clock.now() - HOUR);
    const still = await send(k.key, chans[0]!, 'day 6');
    expect([still.status, still.body.error?.grant]).toEqual([429, 'writes_per_day']);
    clock.advance(24 * HOUR);
    expectStatus(await send(k.key, chans[0]!, 'next day'), 201);
    // The key was never paused (pause_on.budget: false).
    expect((await keyView(k.id)).paused_at).toBeNull();
  });

  it('the budget rule pauses a key whose writes keep meeting a spent budget', async () => {
    const k = await keyWith({
      writes_per_hour: 1,
      pause_on: { budget: { refusals: 3, window_minutes: 10 } },
    });
    expectStatus(await send(k.key, chans[0]!, 'budget 0'), 201);
    for (let i = 1; i <= 2; i++)
      expect((await send(k.key, chans[0]!, `budget ${i}`)).body.error.code).toBe('write_budget_exceeded');
    const third = await send(k.key, chans[0]!, 'budget 3');
    expect(third.status).toBe(403);
    expect(third.body.error).toMatchObject({ code: 'key_paused', paused_at: expect.any(String) });
    expect(third.body.error.paused_reason).toContain('pause_on.budget');
    expect(third.body.error.message).toContain(`PATCH /api/bots/${botId}/api-keys/${k.id}`);
    // Reads are refused too; who-am-I still answers.
    const read = await w.anon.as(k.key).get(`/api/channels/${chans[0]}/messages`);
    expect([read.status, read.body.error.code]).toEqual([403, 'key_paused']);
    expectStatus(await w.anon.as(k.key).post('/api/bots/auth'), 200);
    const view = await keyView(k.id);
    expect(view.paused_at).toBe(third.body.error.paused_at);
    expect(view.paused_reason).toContain('3 time(s) within 10 min');
    // A dry run of a spent budget is not a refusal that counts (another key, same rule).
    const d = await keyWith({
      writes_per_hour: 1,
      pause_on: { budget: { refusals: 2, window_minutes: 10 } },
    });
    expectStatus(await send(d.key, chans[0]!, 'd0'), 201);
    for (let i = 0; i < 3; i++)
      expect((await send(d.key, chans[0]!, 'dry', { 'x-dry-run': 'true' })).status).toBe(429);
    expect((await keyView(d.id)).paused_at).toBeNull();
  });

  it('the burst rule pauses the key, refuses on REST and MCP, writes nothing, and DMs the owner and admins', async () => {
    const k = await keyWith({ tools: ['send_message', 'read_messages'] }); // the default rule: 5 in 10 min
    // The same text to the same channel, and other texts to other channels, are no burst.
    for (let i = 0; i < 6; i++) expectStatus(await send(k.key, chans[0]!, 'Standup in 5'), 201);
    for (const c of chans) expectStatus(await send(k.key, c, `hello ${c}`), 201);
    // The same text (case and spacing aside) to 4 channels, over REST and MCP.
    expectStatus(await send(k.key, chans[0]!, 'Buy now at example.test'), 201);
    expectStatus(await send(k.key, chans[1]!, 'BUY   now at example.test'), 201);
    expectStatus(await send(k.key, chans[2]!, 'buy now at example.test'), 201);
    let m = await mcpCall('legacy', k.key, 'send_message', {
      channel_id: chans[3],
      content: 'Buy now at example.test ',
    });
    expect(m.result.isError).toBeUndefined();
    // A dry run of the fifth says that it would pause the key, and changes nothing.
    const before = await botMessages();
    const dry = await send(k.key, chans[4]!, 'buy now at example.test', { 'x-dry-run': 'true' });
    expect([dry.status, dry.body.error.code, dry.body.error.grant]).toEqual([
      403,
      'grant_denied',
      'pause_on.burst',
    ]);
    expect((await keyView(k.id)).paused_at).toBeNull();
    m = await mcpCall('modern', k.key, 'send_message', {
      channel_id: chans[4],
      content: 'buy now AT example.test',
    });
    expect(m.result.isError).toBe(true);
    expect(m.result.content[0].text).toMatch(/^Error \(key_paused\).*pause_on\.burst/);
    expect(await botMessages()).toBe(before);
    const view = await keyView(k.id);
    expect(view.paused_reason).toContain('same text to 5 different');
    // Every surface refuses the paused key, and writes nothing.
    const rest = await send(k.key, chans[5]!, 'anything else');
    expect([rest.status, rest.body.error.code, rest.body.error.paused_at]).toEqual([
      403,
      'key_paused',
      view.paused_at,
    ]);
    for (const era of ['legacy', 'modern'] as const) {
      const r = await mcpCall(era, k.key, 'send_message', { channel_id: chans[5], content: `after ${era}` });
      expect(r.result.content[0].text).toMatch(/^Error \(key_paused\)/);
      const read = await mcpCall(era, k.key, 'read_messages', { channel_id: chans[5] });
      expect(read.result.content[0].text).toMatch(/^Error \(key_paused\)/);
    }
    expect(await botMessages()).toBe(before);
    // The owner and the organization's admin get a DM from the notifications bot; nobody else.
    for (const u of [owner, orgAdmin])
      await expect.poll(async () => (await dms(u)).join('\n'), { timeout: 15_000 }).toContain('was paused');
    expect((await dms(member)).length).toBe(0);
    // In the audit: the pause by the guard rail, and the refused calls.
    const paused = await audit('key.paused');
    expect(paused.find((r) => r.key_id === k.id)?.detail).toMatchObject({
      surface: 'guardrail',
      grant: 'pause_on.burst',
    });
    expect(
      (await audit('send_message')).filter((r) => r.key_id === k.id && r.error_code === 'key_paused').length,
    ).toBeGreaterThanOrEqual(3);
  });

  it('the burst rule counts new tasks too: the same title and description in many topics (REST and MCP)', async () => {
    const topics: string[] = [];
    for (let i = 0; i < 3; i++) {
      const p = await w.project(owner.api);
      expectStatus(await owner.api.post(`/api/projects/${p.projectId}/members`, { bot_id: botId }), 201);
      topics.push(p.topicId);
    }
    const k = await keyWith({ pause_on: { burst: { targets: 3, window_minutes: 10 } } });
    const task = (topic: string, title: string, description?: string) =>
      w.anon.as(k.key).post(`/api/topics/${topic}/tasks`, { title, ...(description ? { description } : {}) });
    const tasks = async () =>
      Number(
        (
          await sql<{ n: number }>`select count(*) as n from tasks where created_by_id = ${botId}`.execute(
            srv.app.services.storage.stores.db,
          )
        ).rows[0]!.n,
      );
    // Other titles, or the same title with another description, are other texts.
    for (const t of topics) expectStatus(await task(t, `Review ${t}`), 201);
    expectStatus(await task(topics[0]!, 'Renew the certificate', 'before Friday'), 201);
    expectStatus(await task(topics[1]!, 'Renew the certificate', 'before Monday'), 201);
    // The same title and description in a second topic (case and spacing aside), then over MCP a third.
    expectStatus(await task(topics[0]!, 'Click example.test', 'now'), 201);
    expectStatus(await task(topics[1]!, 'CLICK  example.test', 'now'), 201);
    const before = await tasks();
    const m = await mcpCall('modern', k.key, 'create_task', {
      topic_id: topics[2],
      title: 'click example.test',
      description: 'now',
    });
    expect(m.result.isError).toBe(true);
    expect(m.result.content[0].text).toMatch(/^Error \(key_paused\).*pause_on\.burst/);
    expect(await tasks()).toBe(before); // the refused task was not written
    expect((await keyView(k.id)).paused_reason).toContain('same text to 3 different');
  });

  it('a manager resumes the key (audited); another organization cannot; bad input and wrong callers refused', async () => {
    const k = await keyWith({ pause_on: { burst: { targets: 2, window_minutes: 1 } } });
    expectStatus(await send(k.key, chans[0]!, 'twice'), 201);
    expect((await send(k.key, chans[1]!, 'twice')).body.error.code).toBe('key_paused');
    // Another organization's admin: not found. A member who does not manage the bot: forbidden.
    expect((await other.api.patch(keysPath(k.id), { paused: false })).status).toBe(404);
    expect((await member.api.patch(keysPath(k.id), { paused: false })).status).toBe(403);
    // The key itself (a bot) cannot resume itself.
    expect((await w.anon.as(k.key).patch(keysPath(k.id), { paused: false })).status).toBe(403);
    // Bad input.
    const bad = await owner.api.patch(keysPath(k.id), { paused: 'no' });
    expect([bad.status, bad.body.error.field]).toEqual([400, 'paused']);
    expect((await owner.api.patch(keysPath(k.id), {})).status).toBe(400);
    const badRule = await owner.api.patch(keysPath(k.id), {
      grants: { pause_on: { burst: { targets: 1, window_minutes: 1 } } },
    });
    expect([badRule.status, badRule.body.error.field]).toEqual([400, 'grants.pause_on.burst.targets']);
    expect((await send(k.key, chans[2]!, 'still paused')).body.error.code).toBe('key_paused');
    // The owner resumes it (the org admin could as well).
    const resumed = expectStatus(await owner.api.patch(keysPath(k.id), { paused: false }), 200);
    expect([resumed.paused_at, resumed.paused_reason]).toEqual([null, null]);
    // The window has passed: the same text goes again.
    clock.advance(61_000);
    expectStatus(await send(k.key, chans[2]!, 'twice'), 201);
    const row = (await audit('key.resumed')).find((r) => r.key_id === k.id);
    expect(row.detail).toMatchObject({ surface: 'admin', by: owner.id });
    expect(row.detail.reason).toContain('pause_on.burst');
    // A manager may pause a key by hand too; the org admin resumes it.
    const p = expectStatus(await orgAdmin.api.patch(keysPath(k.id), { paused: true }), 200);
    expect(p.paused_reason).toContain('paused by a manager');
    expect((await send(k.key, chans[3]!, 'x')).body.error.code).toBe('key_paused');
    expectStatus(await orgAdmin.api.patch(keysPath(k.id), { paused: false }), 200);
    expectStatus(await send(k.key, chans[3]!, 'x'), 201);
  });

  it('the audit records every call of a key with grants: decision, dry run, and the before/after of updates', async () => {
    const { projectId, topicId } = await w.project(owner.api);
    expectStatus(await owner.api.post(`/api/projects/${projectId}/members`, { bot_id: botId }), 201);
    const task = expectStatus(
      await owner.api.post(`/api/topics/${topicId}/tasks`, { title: 'audit me', priority: 'low' }),
      201,
    );
    const k = await keyWith({ mentions_all: false });
    const api = w.anon.as(k.key);
    // REST: a post, its edit, a task update, a dry run; MCP: a task update; and a refused call.
    const msg = expectStatus(await send(k.key, chans[0]!, 'first words'), 201);
    expectStatus(await api.put(`/api/messages/${msg.id}`, { content: 'second words' }), 200);
    expectStatus(await api.patch(`/api/tasks/${task.id}`, { title: 'audited', priority: 'high' }), 200);
    expectStatus(
      await api.patch(`/api/tasks/${task.id}`, { status: 'done' }, { headers: { 'x-dry-run': 'true' } }),
      200,
    );
    const m = await mcpCall('modern', k.key, 'update_task', { task_id: task.id, status: 'in_progress' });
    expect(m.result.isError).toBeUndefined();
    expect((await send(k.key, chans[0]!, 'hey @all')).status).toBe(403);
    const rows = async () =>
      (
        expectStatus(await owner.api.get(`/api/bots/${botId}/tool-calls`, { query: { limit: '100' } }), 200)
          .items as any[]
      )
        .filter((r) => r.key_id === k.id && r.tool !== 'grants.set')
        .map((r) => [r.tool, r.outcome, r.detail]);
    await expect.poll(rows).toHaveLength(6);
    expect(await rows()).toEqual(
      expect.arrayContaining([
        ['messages.send', 'ok', { surface: 'rest', decision: 'allowed' }],
        [
          'messages.edit',
          'ok',
          {
            surface: 'rest',
            decision: 'allowed',
            before: { content: 'first words' },
            after: { content: 'second words' },
          },
        ],
        [
          'tasks.update',
          'ok',
          {
            surface: 'rest',
            decision: 'allowed',
            before: { title: 'audit me', priority: 'low' },
            after: { title: 'audited', priority: 'high' },
          },
        ],
        [
          'tasks.update',
          'ok',
          {
            surface: 'rest',
            decision: 'allowed',
            dry_run: true,
            before: { status: 'todo' },
            after: { status: 'done' },
          },
        ],
        [
          'update_task',
          'ok',
          { decision: 'allowed', before: { status: 'todo' }, after: { status: 'in_progress' } },
        ],
        ['messages.send', 'tool_error', { surface: 'rest', decision: 'refused', grant: 'mentions_all' }],
      ]),
    );
  });

  it("lists the bot's memberships for the grant editor: managers only, another organization's bot not found", async () => {
    const dm = expectStatus(
      await w.anon
        .as((await keyWith({})).key)
        .post(`/api/bots/${botId}/dm-messages`, { user_id: member.id, content: 'hi' }),
      201,
    );
    const items = expectStatus(await owner.api.get(`/api/bots/${botId}/memberships`), 200).items as any[];
    expect(
      items
        .filter((i) => i.kind === 'channel')
        .map((i) => i.id)
        .sort(),
    ).toEqual([...chans].sort());
    expect(items.some((i) => i.kind === 'project')).toBe(true);
    const topic = items.find((i) => i.kind === 'topic');
    expect(items.find((i) => i.id === topic.project_id)?.kind).toBe('project');
    expect(items.find((i) => i.kind === 'dm_room')).toMatchObject({
      id: dm.dm_room_id,
      name: expect.stringContaining('DM with'),
    });
    // Another organization's admin: not found; a member who does not manage it: forbidden; bad id: 400.
    expect((await other.api.get(`/api/bots/${botId}/memberships`)).status).toBe(404);
    expect((await member.api.get(`/api/bots/${botId}/memberships`)).status).toBe(403);
    expect((await owner.api.get('/api/bots/nope/memberships')).status).toBe(400);
    // A bot key may not list them (users only).
    expect((await w.anon.as((await keyWith({})).key).get(`/api/bots/${botId}/memberships`)).status).toBe(403);
  });

  it('pause_on: { burst: false } turns the burst rule off; a key without grants has no guard rails', async () => {
    const off = await keyWith({ pause_on: { burst: false } });
    const bare = expectStatus(await owner.api.post(keysPath(), {}), 201);
    for (const key of [off.key, bare.key])
      for (const c of chans) expectStatus(await send(key, c, `same text everywhere ${key.slice(-4)}`), 201);
    expect((await keyView(off.id)).paused_at).toBeNull();
    expect((await keyView(bare.id)).paused_at).toBeNull();
  });

  it("the burst window's rows are pruned by the leader once a day old", async () => {
    const db = srv.app.services.storage.stores.db;
    const count = async () =>
      Number((await sql<{ n: number }>`select count(*) as n from key_recent_texts`.execute(db)).rows[0]!.n);
    expect(await count()).toBeGreaterThan(0); // the sends above, all of the last day
    clock.advance(24 * HOUR + 600_000); // the leader's pruning runs every 10 minutes of the clock
    await expect.poll(count).toBe(0);
  });
});
