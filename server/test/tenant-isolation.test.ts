import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api } from './helpers/client.js';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';

/**
 * Tenant isolation over every endpoint the server has, enumerated from its own OpenAPI document (so new
 * endpoints are covered the day they land). Organization B (the caller) names organization A's
 * resources in each position where an id can go — every path parameter and every id field of the body
 * or query — one position at a time, the others filled with B's own valid resources. The answer must be
 * indistinguishable from the answer for an id that does not exist, must not be a success that touches
 * A's data, and must not contain any of A's ids. List endpoints must not show A's data either.
 */

const MARKER = 'zebrafishmarker';
type Kind =
  | 'channel'
  | 'topic'
  | 'project'
  | 'dmRoom'
  | 'bot'
  | 'key'
  | 'user'
  | 'message'
  | 'file'
  | 'task'
  | 'command'
  | 'org';
type Resources = Partial<Record<Kind, string>>;

const FIELD_KIND: Record<string, Kind> = {
  channelId: 'channel',
  channel_id: 'channel',
  topicId: 'topic',
  topic_id: 'topic',
  projectId: 'project',
  project_id: 'project',
  dmRoomId: 'dmRoom',
  dm_room_id: 'dmRoom',
  botId: 'bot',
  bot_id: 'bot',
  keyId: 'key',
  key_id: 'key',
  userId: 'user',
  user_id: 'user',
  assignee_id: 'user',
  messageId: 'message',
  message_id: 'message',
  fileId: 'file',
  file_id: 'file',
  taskId: 'task',
  task_id: 'task',
  commandName: 'command',
  organization_id: 'org',
};

/** The resource kind behind a path parameter or field. */
function kindOf(name: string, path: string): Kind | undefined {
  if (name === 'id' && path.startsWith('/api/messages/')) return 'message';
  if (name === 'id' && path.startsWith('/api/tasks/')) return 'task';
  if (name === 'id' && path.startsWith('/api/files/')) return 'file';
  return FIELD_KIND[name];
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
  format?: string;
  minimum?: number;
  anyOf?: JsonSchema[];
}

/** A plausible value for a field that does not name a resource. */
function sample(name: string, s: JsonSchema): unknown {
  if (s.enum) return s.enum[0];
  if (s.anyOf) return sample(name, s.anyOf.find((x) => x.type !== 'null') ?? s.anyOf[0]!);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (type === 'integer' || type === 'number') return Math.max(1, s.minimum ?? 1);
  if (type === 'boolean') return false;
  if (type === 'array') return [sample(name, s.items ?? {})];
  if (type === 'object') return {};
  if (s.format === 'email' || name === 'email') return `${uniq('x')}@t.local`;
  if (s.format === 'date-time') return new Date().toISOString();
  if (name.includes('date')) return '2030-01-01';
  if (name === 'password') return 'password-1';
  if (name === 'text') return '/help';
  if (name === 'command') return uniq('cmd').replace('-', '_');
  return `${uniq('v')}`;
}

interface Position {
  where: 'path' | 'body' | 'query';
  name: string;
  kind: Kind;
}

interface Endpoint {
  method: string;
  path: string;
  callers: ('user' | 'bot')[];
  pathParams: string[];
  query: Record<string, JsonSchema>;
  queryRequired: Set<string>;
  body?: JsonSchema;
}

function endpoints(doc: any): Endpoint[] {
  const out: Endpoint[] = [];
  for (const [path, methods] of Object.entries<any>(doc.paths)) {
    if (path === '/api/mcp') continue; // JSON-RPC over one path: isolation is tested per tool in the MCP suite
    for (const [method, op] of Object.entries<any>(methods)) {
      if (Array.isArray(op.security) && op.security.length === 0) continue; // public
      const params = (op.parameters ?? []) as {
        name: string;
        in: string;
        required?: boolean;
        schema: JsonSchema;
      }[];
      const query: Record<string, JsonSchema> = {};
      const queryRequired = new Set<string>();
      for (const p of params.filter((p) => p.in === 'query')) {
        query[p.name] = p.schema;
        if (p.required) queryRequired.add(p.name);
      }
      out.push({
        method: method.toUpperCase(),
        path,
        callers: op['x-callers'] ?? ['user', 'bot'],
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query,
        queryRequired,
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return out;
}

describe('tenant isolation matrix', () => {
  let srv: TestServer;
  let w: World;
  let doc: any;
  const A: Resources = {};
  const B: Resources = {};
  const Bbot: Resources = {};
  let aIds: string[] = [];
  let userB: Api;
  let botB: Api;

  /** Builds resources of one organization through the API; `extra` ones only when their routes exist. */
  async function populate(admin: Api, into: Resources, forBot: Resources, orgId: string, paths: Set<string>) {
    into.org = orgId;
    const member = await w.user({ organization_id: orgId });
    into.user = member.id;
    into.channel = await w.channel(admin, { name: uniq(`${MARKER}-chan`) });
    const { projectId, topicId } = await w.project(admin);
    into.project = projectId;
    into.topic = topicId;
    const bot = await w.bot(admin, {}, { name: uniq(`${MARKER}-bot`) });
    into.bot = bot.id;
    into.key = bot.keyId;
    expectStatus(await admin.post(`/api/channels/${into.channel}/members`, { bot_id: bot.id }), 201);
    expectStatus(await admin.post(`/api/channels/${into.channel}/members`, { user_id: member.id }), 201);
    expectStatus(await admin.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    into.dmRoom = expectStatus(await admin.post('/api/dm-rooms', { user_ids: [member.id] }), 201).id;
    into.message = expectStatus(
      await admin.post(`/api/channels/${into.channel}/messages`, { content: `${MARKER} hello` }),
      201,
    ).id;
    expectStatus(await admin.post(`/api/dm-rooms/${into.dmRoom}/messages`, { content: `${MARKER} dm` }), 201);
    if (paths.has('/api/topics/{topicId}/tasks')) {
      into.task = expectStatus(
        await admin.post(`/api/topics/${topicId}/tasks`, { title: `${MARKER} task` }),
        201,
      ).task_id;
    }
    if (paths.has('/api/bots/{botId}/commands')) {
      into.command = uniq('cmd').replace('-', '_');
      expectStatus(
        await admin.post(`/api/bots/${bot.id}/commands`, { command: into.command, description: 'd' }),
        201,
      );
    }
    if (paths.has('/api/channels/{channelId}/bookmarks')) {
      expectStatus(
        await admin.post(`/api/channels/${into.channel}/bookmarks`, { message_id: into.message }),
        201,
      );
    }
    if (paths.has('/api/channels/{channelId}/files')) {
      const form = new FormData();
      form.append('file', new Blob(['hello file']), `${MARKER}.txt`);
      const res = await fetch(`${srv.url}/api/channels/${into.channel}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${(admin as any).token}` },
        body: form,
      });
      const body: any = await res.json();
      if (res.status !== 201) throw new Error(`file upload: ${res.status} ${JSON.stringify(body)}`);
      into.file = body.id ?? body.file_id;
    }
    // What B's bot uses as "its own" resources: the same, except that its key is its own.
    Object.assign(forBot, into);
    return bot;
  }

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    const paths = new Set(Object.keys(doc.paths));
    const orgA = await w.org();
    const orgB = await w.org();
    await populate(orgA.admin.api, A, {}, orgA.id, paths);
    const bBot = await populate(orgB.admin.api, B, Bbot, orgB.id, paths);
    userB = orgB.admin.api;
    botB = bBot.api;
    aIds = Object.values(A).filter((v): v is string => typeof v === 'string' && /^[0-9a-f-]{36}$/.test(v));
  }, 60_000);
  afterAll(() => srv.close());

  function build(e: Endpoint, own: Resources, target: Position | undefined, value: string) {
    const resolve = (name: string, where: Position['where']) => {
      if (target && target.where === where && target.name === name) return value;
      const kind = kindOf(name, e.path);
      return kind ? own[kind] : undefined;
    };
    let path = e.path;
    for (const p of e.pathParams) {
      const v = p === 'type' ? 'channel' : resolve(p, 'path');
      path = path.replace(`{${p}}`, encodeURIComponent(v ?? randomUUID()));
    }
    if (e.pathParams.includes('type'))
      path = path.replace(
        /\/channel\/[^/]+$/,
        `/channel/${resolve('channelId', 'path') === value ? value : own.channel}`,
      );
    const query: Record<string, string> = {};
    for (const [name, s] of Object.entries(e.query)) {
      const v = resolve(name, 'query');
      if (v !== undefined && (e.queryRequired.has(name) || target?.name === name)) query[name] = v;
      else if (e.queryRequired.has(name)) query[name] = String(sample(name, s));
    }
    let body: Record<string, unknown> | undefined;
    if (e.body) {
      body = {};
      const props = e.body.properties ?? {};
      const containers = ['channel_id', 'topic_id', 'dm_room_id'].filter((c) => c in props);
      for (const [name, s] of Object.entries(props)) {
        const isTarget = target?.where === 'body' && target.name === name;
        const required = e.body.required?.includes(name);
        if (name === 'user_ids') {
          body[name] = [isTarget ? value : own.user];
          continue;
        }
        const kind = kindOf(name, e.path);
        if (containers.includes(name)) {
          // exactly one container: the target one if it is one, else the channel
          const chosen =
            target?.where === 'body' && containers.includes(target.name) ? target.name : 'channel_id';
          if (name === chosen) body[name] = isTarget ? value : own.channel;
          continue;
        }
        if (isTarget) body[name] = value;
        else if (kind && own[kind] && (required || name === 'message_id')) body[name] = own[kind];
        else if (required) body[name] = sample(name, s);
      }
    }
    return { path, query, body };
  }

  function positions(e: Endpoint): Position[] {
    const out: Position[] = [];
    for (const p of e.pathParams) {
      const kind = p === 'type' ? undefined : kindOf(p, e.path);
      if (kind) out.push({ where: 'path', name: p, kind });
    }
    if (e.pathParams.includes('type')) out.push({ where: 'path', name: 'id', kind: 'channel' });
    for (const name of Object.keys(e.query)) {
      const kind = kindOf(name, e.path);
      if (kind) out.push({ where: 'query', name, kind });
    }
    for (const name of Object.keys(e.body?.properties ?? {})) {
      const kind = name === 'user_ids' ? 'user' : kindOf(name, e.path);
      if (kind) out.push({ where: 'body', name, kind });
    }
    return out;
  }

  const normalize = (r: ApiResponse, sent: string) => ({
    status: r.status,
    code: r.body?.error?.code,
    message:
      typeof r.body?.error?.message === 'string' ? r.body.error.message.replaceAll(sent, '<id>') : undefined,
    // successes must be identical apart from the id that was sent (e.g. an empty filtered list)
    success:
      r.status < 300
        ? r.text.replaceAll(sent, '<id>').replace(/"(created_at|updated_at|id|request_id)":"[^"]*"/g, '')
        : undefined,
  });

  function leaked(text: string, sent: string): string[] {
    return aIds.filter((id) => id !== sent && text.includes(id));
  }

  it('covers the endpoints of the server', () => {
    const all = endpoints(doc);
    expect(all.length).toBeGreaterThan(30);
    expect(all.filter((e) => positions(e).length > 0).length).toBeGreaterThan(20);
  });

  it("naming another organization's resource is indistinguishable from naming nothing", async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const e of endpoints(doc)) {
      for (const caller of e.callers) {
        const api = caller === 'user' ? userB : botB;
        const own = caller === 'user' ? B : Bbot;
        for (const pos of positions(e)) {
          const victim = A[pos.kind];
          if (!victim) continue;
          const fake = pos.kind === 'command' ? uniq('nocmd').replace('-', '_') : randomUUID();
          const a = build(e, own, pos, victim);
          const f = build(e, own, pos, fake);
          const resA = await api.request(e.method, a.path, { query: a.query, body: a.body });
          const resF = await api.request(e.method, f.path, { query: f.query, body: f.body });
          checked++;
          const label = `${caller} ${e.method} ${e.path} [${pos.where}.${pos.name}=A's ${pos.kind}]`;
          const nA = normalize(resA, victim);
          const nF = normalize(resF, fake);
          if (JSON.stringify(nA) !== JSON.stringify(nF)) {
            failures.push(
              `${label}: A → ${resA.status} ${resA.text.slice(0, 160)} | nonexistent → ${resF.status} ${resF.text.slice(0, 160)}`,
            );
          }
          const leak = leaked(resA.text, victim);
          if (leak.length) failures.push(`${label}: response contains A's ids ${leak.join(',')}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  }, 120_000);

  it("lists and searches never show another organization's data", async () => {
    const failures: string[] = [];
    for (const e of endpoints(doc)) {
      if (e.method !== 'GET') continue;
      for (const caller of e.callers) {
        const api = caller === 'user' ? userB : botB;
        const own = caller === 'user' ? B : Bbot;
        const { path, query } = build(e, own, undefined, '');
        for (const q of ['q', 'query']) if (q in e.query) query[q] = MARKER;
        const res = await api.request('GET', path, { query });
        const leak = leaked(res.text, '');
        if (leak.length)
          failures.push(
            `${caller} GET ${path}?${new URLSearchParams(query)}: contains A's ids ${leak.join(',')}`,
          );
      }
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it("A's data is intact afterwards", async () => {
    // Nothing B tried (deletes, revocations, edits) changed A's data.
    const orgAAdmin = await w.user({ role: 'org_admin', organization_id: A.org });
    const msgs = expectStatus(await orgAAdmin.api.get(`/api/channels/${A.channel}/messages`), 200).items;
    expect(msgs.map((m: any) => m.id)).toContain(A.message);
    expect(msgs.find((m: any) => m.id === A.message).content).toBe(`${MARKER} hello`);
    const keys = expectStatus(await orgAAdmin.api.get(`/api/bots/${A.bot}/api-keys`), 200).items;
    expect(keys.find((k: any) => k.id === A.key).state).toBe('active');
    expectStatus(await orgAAdmin.api.get(`/api/bots/${A.bot}`), 200);
  });
});
