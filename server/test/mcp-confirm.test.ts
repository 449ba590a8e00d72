import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

const MODERN = '2026-07-28';
const meta = (capabilities: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'confirm-test', version: '1' },
});
const modernHeaders = {
  'mcp-protocol-version': MODERN,
  'mcp-method': 'tools/call',
  'mcp-name': 'send_message',
};

/**
 * Grant `confirm` (issue 21, point 3's "ask the agent's own user"; issue 24's input_required): a call
 * of a tool under it answers `input_required` with an elicitation form, and runs only on the retry
 * that carries the user's yes and the signed requestState — with the official v2 client answering
 * through its elicitation handler, and raw requests for each refusal. Nothing is written otherwise.
 */
describe('MCP: the agent’s user confirms a call (input_required)', () => {
  let srv: TestServer;
  let w: World;
  let botId: string;
  let channel: string;
  let key: string;
  const clock = new TestClock();

  beforeAll(async () => {
    srv = await startTestServer({}, { clock });
    w = await World.create(srv.url);
    botId = expectStatus(await w.admin.api.post('/api/bots', { name: uniq('agent') }), 201).bot_id;
    channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: botId }), 201);
    key = expectStatus(
      await w.admin.api.post(`/api/bots/${botId}/api-keys`, { grants: { confirm: ['send_message'] } }),
      201,
    ).key;
  });
  afterAll(() => srv?.close());

  const contents = async () =>
    (
      expectStatus(await w.admin.api.get(`/api/channels/${channel}/messages?limit=100`), 200).items as {
        content: string;
      }[]
    ).map((m) => m.content);

  /** The official v2 client on 2026-07-28, declaring elicitation, answering each question with `answer`. */
  async function client(answer: (message: string) => { action: string; content?: Record<string, unknown> }) {
    const asked: string[] = [];
    const c = new Client(
      { name: 'confirm-v2', version: '1.0.0' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } as any },
    );
    c.setRequestHandler('elicitation/create' as any, (req: any) => {
      asked.push(req.params.message as string);
      return answer(req.params.message as string) as any;
    });
    await c.connect(
      new StreamableHTTPClientTransport(new URL('/api/mcp', srv.url), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    return { c, asked };
  }

  it('the user says yes: the v2 client is asked once and the message is posted once', async () => {
    const { c, asked } = await client(() => ({ action: 'accept', content: { confirm: true } }));
    const text = `confirmed ${uniq('m')}`;
    const r: any = await c.callTool({
      name: 'send_message',
      arguments: { channel_id: channel, content: text },
    });
    expect(r.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('send_message');
    expect(asked[0]).toContain(text);
    expect((await contents()).filter((m) => m === text)).toHaveLength(1);
    // Other tools of the key are not asked about.
    await c.callTool({ name: 'read_messages', arguments: { channel_id: channel } });
    expect(asked).toHaveLength(1);
    await c.close();
  });

  it('the user says no, or cancels: nothing is posted', async () => {
    for (const answer of [
      { action: 'decline' },
      { action: 'cancel' },
      { action: 'accept', content: { confirm: false } },
    ]) {
      const { c, asked } = await client(() => answer);
      const text = `declined ${uniq('m')}`;
      const r: any = await c.callTool({
        name: 'send_message',
        arguments: { channel_id: channel, content: text },
      });
      expect(asked).toHaveLength(1);
      expect(r.isError).toBe(true);
      expect(r.content[0].text).toMatch(/^Declined/);
      expect(await contents()).not.toContain(text);
      await c.close();
    }
  });

  it('raw: input_required with a signed state; a retry with other arguments, another key or late is refused', async () => {
    const args = { channel_id: channel, content: `raw ${uniq('m')}` };
    const call = (extra: Record<string, unknown>, a: unknown = args, k = key) =>
      rawMcp(srv.url, {
        key: k,
        headers: modernHeaders,
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'send_message', arguments: a, _meta: meta({ elicitation: {} }), ...extra },
        },
      });
    const first = await call({});
    expect(first.status).toBe(200);
    const ir = first.body.result;
    expect(ir.resultType).toBe('input_required');
    expect(ir.inputRequests.confirm.method).toBe('elicitation/create');
    expect(ir.inputRequests.confirm.params.requestedSchema.properties.confirm.type).toBe('boolean');
    expect(typeof ir.requestState).toBe('string');
    const yes = { inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } };
    // Other arguments with this state: -32602, nothing posted.
    const other = await call(
      { ...yes, requestState: ir.requestState },
      { ...args, content: 'something else' },
    );
    expect(other.body.error.code).toBe(-32602);
    expect(other.body.error.data.field).toBe('requestState');
    // Another key of the bot with the same grant: its own confirmation is needed.
    const key2 = expectStatus(
      await w.admin.api.post(`/api/bots/${botId}/api-keys`, { grants: { confirm: ['send_message'] } }),
      201,
    ).key;
    expect((await call({ ...yes, requestState: ir.requestState }, args, key2)).body.error.code).toBe(-32602);
    // A forged state.
    expect((await call({ ...yes, requestState: 'wrmc1.9999999999999.x' })).body.error.code).toBe(-32602);
    expect(await contents()).not.toContain(args.content);
    // In time, with the user's yes: posted, once.
    const ok = await call({ ...yes, requestState: ir.requestState });
    expect(ok.body.result.resultType).toBe('complete');
    expect(ok.body.result.isError).toBeFalsy();
    expect((await contents()).filter((m) => m === args.content)).toHaveLength(1);
    // A state older than 10 minutes is refused.
    const again = (await call({})).body.result.requestState as string;
    clock.advance(10 * 60_000 + 1_000);
    expect((await call({ ...yes, requestState: again })).body.error.code).toBe(-32602);
  });

  it('where nobody can be asked — a client without elicitation, a legacy session, REST — it is refused and nothing is written', async () => {
    const text = `refused ${uniq('m')}`;
    const noElicitation = await rawMcp(srv.url, {
      key,
      headers: modernHeaders,
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'send_message', arguments: { channel_id: channel, content: text }, _meta: meta({}) },
      },
    });
    expect(noElicitation.body.result.isError).toBe(true);
    expect(noElicitation.body.result.content[0].text).toContain('confirmation_required');
    expect(noElicitation.body.result.content[0].text).toContain('elicitation');
    const session = (await rawSession(srv.url, key))!;
    const legacy = await rawMcp(srv.url, {
      key,
      session,
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'send_message', arguments: { channel_id: channel, content: text } },
      },
    });
    expect(legacy.body.result.isError).toBe(true);
    expect(legacy.body.result.content[0].text).toContain('confirmation_required');
    const rest = await w.anon.as(key).post(`/api/channels/${channel}/messages`, { content: text });
    expect(rest.status).toBe(403);
    expect(rest.body.error.code).toBe('confirmation_required');
    expect(await contents()).not.toContain(text);
    // A dry run needs no confirmation (it writes nothing).
    const dry = await rawMcp(srv.url, {
      key,
      headers: modernHeaders,
      body: {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'send_message',
          arguments: { channel_id: channel, content: text, dry_run: true },
          _meta: meta({}),
        },
      },
    });
    expect(dry.body.result.isError).toBeFalsy();
    expect(await contents()).not.toContain(text);
  });

  it('the grant is validated and shown on the key', async () => {
    const bad = await w.admin.api.post(`/api/bots/${botId}/api-keys`, { grants: { confirm: ['rm_rf'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toMatch(/^grants\.confirm/);
    const listed = expectStatus(await w.admin.api.get(`/api/bots/${botId}/api-keys`), 200).items as any[];
    expect(listed.some((k) => k.grants?.confirm?.[0] === 'send_message')).toBe(true);
  });
});
