import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execute } from '../src/operations/approvals/pending-actions.js';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus, type Api } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { waitFor } from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Human approval of an agent's writes (issue 21; docs/API.md "Approval", docs/MCP.md "Approval"): a
 * call to a tool in the key's `approval` grant becomes a pending action (REST 202, MCP a normal result
 * on every version era), writes and posts nothing until an approver approves it, then runs exactly once
 * (two concurrent approvals → one message); reject runs nothing; an expired one cannot be approved; the
 * card in the approver's DM and the bot's view follow the outcome.
 */

const MODERN = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'approval-test', version: '1' },
};
const DAY = 24 * 3_600_000;

describe('approval of a bot key’s calls', () => {
  const clock = new TestClock();
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let member: UserHandle;
  let stranger: UserHandle;
  let botId: string;
  let key: string;
  let keyId: string;
  let chan: string;

  beforeAll(async () => {
    srv = await startTestServer({}, { clock });
    w = await World.create(srv.url);
    const org = await w.org();
    owner = org.admin;
    member = await w.user({ organization_id: org.id, role: 'member' });
    stranger = (await w.org()).admin;
    const b = expectStatus(await owner.api.post('/api/bots', { name: uniq('agent') }), 201);
    botId = b.bot_id;
    chan = await w.channel(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${chan}/members`, { bot_id: botId }), 201);
    const k = expectStatus(
      await owner.api.post(`/api/bots/${botId}/api-keys`, {
        grants: { approval: ['send_message', 'create_task'] },
      }),
      201,
    );
    key = k.key;
    keyId = k.id;
  });
  afterAll(() => srv?.close());

  const bot = () => w.anon.as(key);
  const postAsBot = (content: string, headers?: Record<string, string>) =>
    bot().post(`/api/channels/${chan}/messages`, { content }, { headers });
  const channelMessages = async (content: string) =>
    expectStatus(await owner.api.get(`/api/channels/${chan}/messages`), 200).items.filter(
      (m: any) => m.content === content,
    );
  /** The approver's card of a pending action, in their DM with the Approvals bot. */
  async function cardOf(api: Api, id: string): Promise<any> {
    const rooms = expectStatus(await api.get('/api/dm-rooms'), 200).items;
    for (const r of rooms) {
      const ms = expectStatus(await api.get(`/api/dm-rooms/${r.id}/messages`), 200).items;
      const card = ms.find((m: any) => m.content.includes(id));
      if (card) return card;
    }
    return undefined;
  }
  const botView = async (id: string) =>
    expectStatus(await bot().get(`/api/bots/me/pending-actions/${id}`), 200);

  it('REST: the call answers 202 pending, posts nothing; the owner gets a card', async () => {
    const content = uniq('hold me');
    const r = expectStatus(await postAsBot(content), 202);
    expect(r.status).toBe('pending_approval');
    const pa = r.pending_action;
    expect(pa).toMatchObject({
      status: 'pending',
      tool: 'send_message',
      operation: 'messages.send',
      bot_id: botId,
      key_id: keyId,
      input: { channel_id: chan, content },
      target: { kind: 'channel', id: chan },
      decided_by: null,
    });
    expect(Date.parse(pa.expires_at) - Date.parse(pa.requested_at)).toBe(DAY);
    expect(await channelMessages(content)).toHaveLength(0);
    const card = await cardOf(owner.api, pa.id);
    expect(card.content).toContain(content);
    expect(card.content).toContain('#');
    expect(card.actions.map((a: any) => a.id)).toEqual(['approve', 'reject']);
    // The queue shows it; the bot sees it pending.
    const queue = expectStatus(await owner.api.get('/api/pending-actions'), 200).items;
    expect(queue.map((x: any) => x.id)).toContain(pa.id);
    expect((await botView(pa.id)).status).toBe('pending');
  });

  it('two concurrent approvals post the message exactly once, and the card shows who decided', async () => {
    const content = uniq('approve me');
    const pa = expectStatus(await postAsBot(content), 202).pending_action;
    const [a, b] = await Promise.all([
      owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}),
      owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const done = await waitFor('executed', async () => {
      const v = await botView(pa.id);
      return v.status === 'executed' && v;
    });
    expect(await channelMessages(content)).toHaveLength(1);
    expect(done.result).toMatchObject({ content, channel_id: chan, sender_id: botId });
    expect(done.decided_by).toBe(owner.id);
    const card = await waitFor('card edited', async () => {
      const c = await cardOf(owner.api, pa.id);
      return c.content.includes('done.') && c;
    });
    expect(card.actions).toBeNull();
    expect(card.content).toContain('Approved by');
    // A third click answers the outcome, still one message.
    expect(expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 200).status).toBe(
      'executed',
    );
    expect(await channelMessages(content)).toHaveLength(1);
    // Rejecting it now is a conflict.
    expect(
      expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/reject`, {}), 409).error.code,
    ).toBe('conflict');
  });

  it('a click on the card’s Approve button (twice) posts once', async () => {
    const content = uniq('click me');
    const pa = expectStatus(await postAsBot(content), 202).pending_action;
    const card = await cardOf(owner.api, pa.id);
    const clicks = await Promise.all([
      owner.api.post(`/api/messages/${card.id}/actions`, { action_id: 'approve' }),
      owner.api.post(`/api/messages/${card.id}/actions`, { action_id: 'approve' }),
    ]);
    expect(clicks.map((c) => c.status)).toEqual([202, 202]);
    await waitFor('executed', async () => (await botView(pa.id)).status === 'executed');
    await waitFor('card edited', async () => (await cardOf(owner.api, pa.id)).content.includes('done.'));
    expect(await channelMessages(content)).toHaveLength(1);
  });

  it('an approval whose execution a crash cut off: two runs at once post once, and a restart finishes another', async () => {
    const stores = () => srv.app.services.storage.stores;
    const decideOnly = (id: string) =>
      stores().pendingActions.decide(id, 'approved', owner.id, new Date(clock.now()).toISOString());
    // The decision committed, the process died before the execution (the decision alone, here).
    const one = uniq('race');
    const a = expectStatus(await postAsBot(one), 202).pending_action;
    expect(await decideOnly(a.id)).toBe(true);
    expect(await decideOnly(a.id)).toBe(false);
    expect(await channelMessages(one)).toHaveLength(0);
    // The request and the sweeper (or two instances) run it at once: one write commits.
    await Promise.all([execute(srv.app.services, a.id), execute(srv.app.services, a.id)]);
    expect(await channelMessages(one)).toHaveLength(1);
    expect((await botView(a.id)).status).toBe('executed');
    // At the next start the sweeper runs what was approved and not executed, once.
    const two = uniq('restart');
    const b = expectStatus(await postAsBot(two), 202).pending_action;
    expect(await decideOnly(b.id)).toBe(true);
    await srv.restart();
    await waitFor('executed after the restart', async () => (await botView(b.id)).status === 'executed');
    expect(await channelMessages(two)).toHaveLength(1);
    expect(await channelMessages(one)).toHaveLength(1);
  });

  it('reject: nothing is posted, the bot learns it, approving afterwards is a conflict', async () => {
    const content = uniq('reject me');
    const pa = expectStatus(await postAsBot(content), 202).pending_action;
    const r = expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/reject`, {}), 200);
    expect(r.status).toBe('rejected');
    expect(
      expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 409).error.code,
    ).toBe('conflict');
    expect(await channelMessages(content)).toHaveLength(0);
    expect((await botView(pa.id)).status).toBe('rejected');
  });

  it('an expired action cannot be approved', async () => {
    const content = uniq('too late');
    const pa = expectStatus(await postAsBot(content), 202).pending_action;
    clock.advance(DAY + 60_000);
    const r = expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 409);
    expect(r.error.message).toContain('expired');
    expect((await botView(pa.id)).status).toBe('expired');
    expect(await channelMessages(content)).toHaveLength(0);
  });

  it('who may decide: a member who is not an approver 403, another organization 404, bad ids 400, bot keys 403', async () => {
    const pa = expectStatus(await postAsBot(uniq('who')), 202).pending_action;
    expect(
      expectStatus(await member.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 403).error.code,
    ).toBe('forbidden');
    expectStatus(await member.api.get(`/api/pending-actions/${pa.id}`), 404);
    expect(expectStatus(await member.api.get('/api/pending-actions'), 200).items).toEqual([]);
    expectStatus(await stranger.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 404);
    expectStatus(await stranger.api.post(`/api/pending-actions/${pa.id}/reject`, {}), 404);
    expectStatus(await stranger.api.get(`/api/pending-actions/${pa.id}`), 404);
    expect(expectStatus(await stranger.api.get('/api/pending-actions'), 200).items).toEqual([]);
    expectStatus(await owner.api.post('/api/pending-actions/not-an-id/approve', {}), 400);
    expectStatus(await owner.api.post(`/api/pending-actions/${crypto.randomUUID()}/approve`, {}), 404);
    expectStatus(await owner.api.get('/api/pending-actions?status=nope'), 400);
    expectStatus(await bot().post(`/api/pending-actions/${pa.id}/approve`, {}), 403);
    expectStatus(await owner.api.get(`/api/bots/me/pending-actions/${pa.id}`), 403);
    // Another bot's key does not see it.
    const other = await w.bot(owner.api);
    expectStatus(await other.api.get(`/api/bots/me/pending-actions/${pa.id}`), 404);
    expectStatus(await bot().get('/api/bots/me/pending-actions/nope'), 400);
    expect((await botView(pa.id)).status).toBe('pending');
  });

  it('bad input is refused before anything is pending; a dry run creates nothing', async () => {
    const before = expectStatus(await owner.api.get('/api/pending-actions'), 200).items.length;
    expectStatus(await bot().post(`/api/channels/${chan}/messages`, { content: '' }), 400);
    expectStatus(await bot().post(`/api/channels/${chan}/messages`, { content: 'x', nope: 1 }), 400);
    // A channel the bot is not in: not found, as for the real call.
    const elsewhere = await w.channel(owner.api);
    expectStatus(await bot().post(`/api/channels/${elsewhere}/messages`, { content: 'x' }), 404);
    const dry = expectStatus(await postAsBot(uniq('dry'), { 'x-dry-run': 'true' }), 200);
    expect(dry).toMatchObject({ dry_run: true, approval_required: true });
    expect(expectStatus(await owner.api.get('/api/pending-actions'), 200).items.length).toBe(before);
  });

  it('a key revoked before the approval: the action fails with the reason, nothing is posted', async () => {
    const k = expectStatus(
      await owner.api.post(`/api/bots/${botId}/api-keys`, { grants: { approval: ['send_message'] } }),
      201,
    );
    const content = uniq('revoked');
    const pa = expectStatus(
      await w.anon.as(k.key).post(`/api/channels/${chan}/messages`, { content }),
      202,
    ).pending_action;
    expectStatus(await owner.api.delete(`/api/bots/${botId}/api-keys/${k.id}`), 200);
    const r = expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 200);
    expect(r.status).toBe('failed');
    expect(r.error).toContain('revoked');
    expect(await channelMessages(content)).toHaveLength(0);
  });

  it('create_task held, then approved: the task is created once, as the bot', async () => {
    const { projectId, topicId } = await w.project(owner.api);
    expectStatus(await owner.api.post(`/api/projects/${projectId}/members`, { bot_id: botId }), 201);
    const title = uniq('held task');
    const pa = expectStatus(
      await bot().post(`/api/topics/${topicId}/tasks`, { title, priority: 'high' }),
      202,
    ).pending_action;
    expect(pa.summary).toContain(title);
    expect((await cardOf(owner.api, pa.id)).content).toContain('priority: "high"');
    const tasks = async () =>
      expectStatus(await owner.api.get(`/api/topics/${topicId}/tasks`), 200).items.filter(
        (t: any) => t.title === title,
      );
    expect(await tasks()).toHaveLength(0);
    const r = expectStatus(await owner.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 200);
    expect(r).toMatchObject({ status: 'executed', result: { title, priority: 'high' } });
    expect(await tasks()).toHaveLength(1);
  });

  it('approvers named on the grant get the card and may decide', async () => {
    const named = await w.user({
      organization_id: (await owner.api.get('/api/auth/me')).body.org_id,
      role: 'member',
    });
    const k = expectStatus(
      await owner.api.post(`/api/bots/${botId}/api-keys`, {
        grants: { approval: ['send_message'], approvers: [named.id] },
      }),
      201,
    );
    const content = uniq('named');
    const pa = expectStatus(
      await w.anon.as(k.key).post(`/api/channels/${chan}/messages`, { content }),
      202,
    ).pending_action;
    const card = await cardOf(named.api, pa.id);
    expect(card.content).toContain(content);
    expect((await cardOf(owner.api, pa.id)).content).toContain(content);
    expect(
      expectStatus(await named.api.get('/api/pending-actions'), 200).items.map((x: any) => x.id),
    ).toEqual([pa.id]);
    // Another member still may not.
    expectStatus(await member.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 403);
    expect(expectStatus(await named.api.post(`/api/pending-actions/${pa.id}/approve`, {}), 200).status).toBe(
      'executed',
    );
    expect(await channelMessages(content)).toHaveLength(1);
    // Bad approver ids are refused when the grant is set.
    expectStatus(
      await owner.api.post(`/api/bots/${botId}/api-keys`, {
        grants: { approval: ['send_message'], approvers: ['x'] },
      }),
      400,
    );
  });

  describe('MCP', () => {
    async function approveAndWait(id: string) {
      expectStatus(await owner.api.post(`/api/pending-actions/${id}/approve`, {}), 200);
    }

    it('2025-03-26 session: send_message answers pending (not an error); get_pending_action tells the outcome', async () => {
      const session = await rawSession(srv.url, key);
      const call = async (id: number, name: string, args: Record<string, unknown>) =>
        (
          await rawMcp(srv.url, {
            key,
            session,
            body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
          })
        ).body;
      const list = (
        await rawMcp(srv.url, { key, session, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
      ).body.result.tools.map((t: any) => t.name);
      expect(list).toContain('get_pending_action');
      expect(list).toHaveLength(10);
      const content = uniq('mcp legacy');
      const res = (await call(2, 'send_message', { channel_id: chan, content })).result;
      expect(res.isError).toBeUndefined();
      expect(res.structuredContent).toBeUndefined();
      expect(res.content[0].text).toContain('PENDING APPROVAL');
      const pa = res._meta['workroom/pending_action'];
      expect(res.content[0].text).toContain(pa.id);
      expect(pa.status).toBe('pending');
      expect(await channelMessages(content)).toHaveLength(0);
      const pending = (await call(3, 'get_pending_action', { pending_action_id: pa.id })).result;
      expect(pending.content[0].text).toContain('pending');
      await approveAndWait(pa.id);
      const after = (await call(4, 'get_pending_action', { pending_action_id: pa.id })).result;
      expect(after.content[0].text).toContain('executed');
      expect(await channelMessages(content)).toHaveLength(1);
      // Bad arguments of the tool, another bot's id.
      const bad = await call(5, 'get_pending_action', { pending_action_id: 'nope' });
      expect(bad.error?.code ?? bad.result?.isError).toBeTruthy();
      const missing = (await call(6, 'get_pending_action', { pending_action_id: crypto.randomUUID() }))
        .result;
      expect(missing.isError).toBe(true);
      expect(missing.content[0].text).toContain('not_found');
    });

    it('2026-07-28: structuredContent says pending and validates as the tool’s outputSchema allows', async () => {
      const mcp = async (method: string, params: Record<string, unknown>) =>
        (
          await rawMcp(srv.url, {
            key,
            headers: {
              'mcp-protocol-version': MODERN,
              'mcp-method': method,
              ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
            },
            body: { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } },
          })
        ).body;
      const tools = (await mcp('tools/list', {})).result.tools;
      const send = tools.find((t: any) => t.name === 'send_message');
      expect(send.outputSchema.anyOf).toHaveLength(2);
      const content = uniq('mcp modern');
      const res = (
        await mcp('tools/call', { name: 'send_message', arguments: { channel_id: chan, content } })
      ).result;
      expect(res.isError).toBeUndefined();
      expect(res.structuredContent.status).toBe('pending_approval');
      const id = res.structuredContent.pending_action.id;
      expect(await channelMessages(content)).toHaveLength(0);
      await approveAndWait(id);
      const got = (
        await mcp('tools/call', { name: 'get_pending_action', arguments: { pending_action_id: id } })
      ).result;
      expect(got.structuredContent).toMatchObject({ id, status: 'executed', result: { content } });
      expect(await channelMessages(content)).toHaveLength(1);
      // A dry run still only reports.
      const dry = (
        await mcp('tools/call', {
          name: 'send_message',
          arguments: { channel_id: chan, content: 'dry', dry_run: true },
        })
      ).result;
      expect(dry._meta['workroom/dry_run'].approval_required).toBe(true);
    });

    it('a key without approval keeps its nine tools and cannot call get_pending_action', async () => {
      const plain = await w.bot(owner.api, { grants: { read_only: false } });
      const session = await rawSession(srv.url, plain.key);
      const list = (
        await rawMcp(srv.url, {
          key: plain.key,
          session,
          body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        })
      ).body.result.tools;
      expect(list).toHaveLength(9);
      const r = (
        await rawMcp(srv.url, {
          key: plain.key,
          session,
          body: {
            jsonrpc: '2.0',
            id: 2,
            method: 'tools/call',
            params: { name: 'get_pending_action', arguments: { pending_action_id: crypto.randomUUID() } },
          },
        })
      ).body;
      expect(r.error.code).toBe(-32602);
    });
  });
});
