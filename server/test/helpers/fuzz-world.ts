import fc from 'fast-check';
import { expectStatus } from './client.js';
import { nastyString, type IdSource } from './fuzz.js';
import { ADMIN_PASSWORD } from './server.js';
import { login, World, type BotHandle, type UserHandle } from './world.js';

/**
 * The data the REST and MCP fuzzers aim at: two organizations, each with users, channels, a project
 * with a topic, a DM room, messages, a task, a bot with a key, a file, a command and a bookmark — all
 * built through the public API. The callers ("principals") are kept out of the id pools, so a fuzzed
 * DELETE or PATCH never takes away the identity the rest of the run depends on.
 */
export type Kind =
  | 'org'
  | 'user'
  | 'channel'
  | 'project'
  | 'topic'
  | 'dm'
  | 'message'
  | 'task'
  | 'bot'
  | 'key'
  | 'file'
  | 'command';

export type Pools = Record<Kind, string[]>;

export interface Principal {
  name: string;
  token: string;
  kind: 'user' | 'bot' | 'none' | 'garbage';
  /** The organization whose data it may see: 'A', or 'all' for the system admin. */
  org: 'A' | 'all' | 'none';
  /** Scopes of a bot key; null means every scope. */
  scopes: string[] | null;
}

export interface FuzzWorld {
  w: World;
  local: Pools;
  foreign: Pools;
  /** Every id of organization B: none may ever appear in an answer to organization A. */
  foreignIds: Set<string>;
  principals: Principal[];
  /** Extra tokens of the member, for fuzzed logouts (a logout must not sign out the run's member). */
  spareTokens: string[];
  /** Bots of organization A used for MCP (keys with all scopes and with few). */
  bots: { all: BotHandle; read: BotHandle; tasks: BotHandle };
  orgA: { id: string; admin: UserHandle; member: UserHandle; channel: string; topic: string };
}

const emptyPools = (): Pools => ({
  org: [],
  user: [],
  channel: [],
  project: [],
  topic: [],
  dm: [],
  message: [],
  task: [],
  bot: [],
  key: [],
  file: [],
  command: [],
});

async function upload(baseUrl: string, token: string, channel: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(Buffer.from('hello fuzz'))], { type: 'text/plain' }), 'a.txt');
  const res = await fetch(`${baseUrl}/api/channels/${channel}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** One organization's victims: objects the fuzzer may read, change and delete. */
async function victims(w: World, admin: UserHandle, pools: Pools, orgId: string): Promise<void> {
  const api = admin.api;
  pools.org.push(orgId);
  for (let i = 0; i < 2; i++) pools.user.push((await w.user({ organization_id: orgId }, api)).id);
  const channel = await w.channel(api);
  pools.channel.push(channel, await w.channel(api));
  const { projectId, topicId } = await w.project(api);
  pools.project.push(projectId);
  pools.topic.push(topicId);
  const dm = expectStatus(await api.post('/api/dm-rooms', { user_ids: [pools.user[0]] }), 201).id;
  pools.dm.push(dm);
  for (const path of [
    `/api/channels/${channel}/messages`,
    `/api/topics/${topicId}/messages`,
    `/api/dm-rooms/${dm}/messages`,
  ])
    pools.message.push(expectStatus(await api.post(path, { content: 'fuzz target' }), 201).id);
  pools.task.push(
    expectStatus(await api.post(`/api/topics/${topicId}/tasks`, { title: 'fuzz task' }), 201).id,
  );
  const bot = await w.bot(api);
  pools.bot.push(bot.id);
  pools.key.push(bot.keyId);
  await api.post(`/api/channels/${channel}/members`, { bot_id: bot.id });
  expectStatus(
    await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'deploy', description: 'd' }),
    201,
  );
  pools.command.push('deploy');
  pools.file.push(await upload(w.baseUrl, admin.token, channel));
  expectStatus(await api.post(`/api/channels/${channel}/bookmarks`, { message_id: pools.message[0] }), 201);
}

export async function buildFuzzWorld(baseUrl: string): Promise<FuzzWorld> {
  const w = await World.create(baseUrl);
  const local = emptyPools();
  const foreign = emptyPools();
  const a = await w.org();
  const b = await w.org();
  await victims(w, a.admin, local, a.id);
  await victims(w, b.admin, foreign, b.id);
  foreign.user.push(b.admin.id);

  // The principals of organization A: members of its first channel and project.
  const member = await w.user({ organization_id: a.id }, a.admin.api);
  const all = await w.bot(a.admin.api);
  const read = await w.bot(a.admin.api, { scopes: ['messages:read'] });
  const tasks = await w.bot(a.admin.api, { scopes: ['tasks:read', 'channels:read'] });
  const channel = local.channel[0]!;
  const project = local.project[0]!;
  await a.admin.api.post(`/api/channels/${channel}/members`, { user_id: member.id });
  await a.admin.api.post(`/api/projects/${project}/members`, { user_id: member.id });
  for (const bot of [all, read, tasks]) {
    await a.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id });
    await a.admin.api.post(`/api/projects/${project}/members`, { bot_id: bot.id });
  }
  const spareTokens: string[] = [];
  for (let i = 0; i < 4; i++) spareTokens.push(await login(baseUrl, member.email, 'user-password-1'));

  const principals: Principal[] = [
    { name: 'org admin', token: a.admin.token, kind: 'user', org: 'A', scopes: null },
    { name: 'member', token: member.token, kind: 'user', org: 'A', scopes: null },
    { name: 'system admin', token: w.admin.token, kind: 'user', org: 'all', scopes: null },
    { name: 'bot (all scopes)', token: all.key, kind: 'bot', org: 'A', scopes: null },
    { name: 'bot (messages:read)', token: read.key, kind: 'bot', org: 'A', scopes: ['messages:read'] },
    {
      name: 'bot (tasks:read, channels:read)',
      token: tasks.key,
      kind: 'bot',
      org: 'A',
      scopes: ['tasks:read', 'channels:read'],
    },
    { name: 'no token', token: '', kind: 'none', org: 'none', scopes: null },
    ...[
      'garbage',
      'wrut_' + '0'.repeat(64),
      'wrbk_00000000_live_' + '0'.repeat(48),
      `${all.key.slice(0, -1)}x`,
      'wrbk_',
      'Bearer',
      'x'.repeat(5000),
      ADMIN_PASSWORD,
    ].map((token) => ({
      name: 'garbage token',
      token,
      kind: 'garbage' as const,
      org: 'none' as const,
      scopes: null,
    })),
  ];
  const foreignIds = new Set(
    Object.values(foreign)
      .flat()
      .filter((id) => id !== 'deploy'),
  );
  return {
    w,
    local,
    foreign,
    foreignIds,
    principals,
    spareTokens,
    bots: { all, read, tasks },
    orgA: { id: a.id, admin: a.admin, member, channel, topic: local.topic[0]! },
  };
}

/** Which pool a field or parameter name draws from (undefined: any pool). */
export function kindOf(name: string): Kind | undefined {
  const n = name
    .replace(/_?ids?$/i, '')
    .replace(/_/g, '')
    .toLowerCase();
  const table: Record<string, Kind> = {
    org: 'org',
    organization: 'org',
    user: 'user',
    assignee: 'user',
    channel: 'channel',
    project: 'project',
    topic: 'topic',
    dmroom: 'dm',
    message: 'message',
    task: 'task',
    bot: 'bot',
    key: 'key',
    file: 'file',
    commandname: 'command',
  };
  return table[n];
}

/** Ids for a field: mostly real ones of organization A, often B's, sometimes random or broken. */
export function idSource(fw: FuzzWorld): IdSource {
  const all = (p: Pools) => Object.values(p).flat();
  return {
    idFor(name: string) {
      const kind = kindOf(name);
      const local = kind ? fw.local[kind] : all(fw.local);
      const foreign = kind ? fw.foreign[kind] : all(fw.foreign);
      return fc.oneof(
        { arbitrary: fc.constantFrom(...local), weight: 8 },
        { arbitrary: fc.constantFrom(...foreign), weight: 3 },
        { arbitrary: fc.uuid(), weight: 1 },
        {
          arbitrary: fc.constantFrom(
            'not-a-uuid',
            '00000000-0000-0000-0000-000000000000',
            `${local[0]!}x`,
            local[0]!.toUpperCase(),
            ` ${local[0]!}`,
            local[0]!.replaceAll('-', ''),
            '1',
            '-1',
          ),
          weight: 2,
        },
        { arbitrary: nastyString, weight: 1 },
      );
    },
  };
}
