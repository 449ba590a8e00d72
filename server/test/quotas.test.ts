import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Per-organization quotas (docs/API.md "Quotas"): custom bots per organization and per member, upload
 * bytes per organization and per user, bot-data bytes per organization. Over one: 403 quota_exceeded
 * naming the quota, its limit and its setting, and nothing written; parallel requests do not pass a
 * quota together (checked in the write transaction). Runs on SQLite, and on PostgreSQL with DATABASE_URL.
 */
const Q = {
  WORKROOM_QUOTA_BOTS_PER_ORG: '8',
  WORKROOM_QUOTA_BOTS_PER_MEMBER: '3',
  WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG: '5000',
  WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER: '3000',
  WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG: String(64 * 1024),
};

let srv: TestServer;
let w: World;

beforeAll(async () => {
  // The blobs are counted on disk here (the database store has its own tests: blob-store.test.ts).
  srv = await startTestServer({ ...Q, WORKROOM_BLOB_STORE: 'disk' });
  w = await World.create(srv.url);
});
afterAll(async () => {
  await srv?.close();
});

function expectQuota(res: ApiResponse, quota: string, limit: string, setting: string): void {
  expect(res.status, res.text).toBe(403);
  expect(res.body.error.code).toBe('quota_exceeded');
  expect(res.body.error.message).toContain(quota);
  expect(res.body.error.message).toContain(limit);
  expect(res.body.error.message).toContain(setting);
}

const createBot = (u: UserHandle) => u.api.post('/api/bots', { name: uniq('bot') });
const customBotsOf = async (admin: UserHandle) =>
  (expectStatus(await admin.api.get('/api/bots'), 200).items as any[]).filter((b) => b.type === 'custom');

describe('custom bots per member and per organization', () => {
  it('a member registers at most WORKROOM_QUOTA_BOTS_PER_MEMBER bots; a deleted one frees its place', async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id }, org.admin.api);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(expectStatus(await createBot(ann), 201).bot_id);
    const over = await createBot(ann);
    expectQuota(over, 'botsPerMember', '3', 'WORKROOM_QUOTA_BOTS_PER_MEMBER');
    expect(await customBotsOf(org.admin)).toHaveLength(3);
    // Platform bots (system_admin) are not custom bots of the organization: not counted.
    expectStatus(await w.admin.api.post('/api/bots', { name: uniq('platform'), type: 'platform' }), 201);
    expectStatus(await ann.api.delete(`/api/bots/${ids[0]}`), 200);
    expectStatus(await createBot(ann), 201);
  });

  it('an organization has at most WORKROOM_QUOTA_BOTS_PER_ORG custom bots, whoever registers them', async () => {
    const org = await w.org();
    const members = [
      await w.user({ organization_id: org.id }, org.admin.api),
      await w.user({ organization_id: org.id }, org.admin.api),
      await w.user({ organization_id: org.id }, org.admin.api),
    ];
    for (const m of members.slice(0, 2)) for (let i = 0; i < 3; i++) expectStatus(await createBot(m), 201);
    for (let i = 0; i < 2; i++) expectStatus(await createBot(members[2]!), 201);
    expectQuota(await createBot(members[2]!), 'botsPerOrg', '8', 'WORKROOM_QUOTA_BOTS_PER_ORG');
    expectQuota(await createBot(org.admin), 'botsPerOrg', '8', 'WORKROOM_QUOTA_BOTS_PER_ORG');
    expect(await customBotsOf(org.admin)).toHaveLength(8);
    // Another organization is not concerned.
    const other = await w.org();
    expectStatus(await createBot(other.admin), 201);
  });

  it('60 parallel registrations by one member create exactly 3; by 5 members of one organization exactly 8', async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id }, org.admin.api);
    const started = Date.now();
    const one = await Promise.all(Array.from({ length: 60 }, () => createBot(ann)));
    const ms = Date.now() - started;
    expect(one.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of one.filter((x) => x.status !== 201)) expect(r.body.error.code).toBe('quota_exceeded');
    expect(await customBotsOf(org.admin)).toHaveLength(3);

    const org2 = await w.org();
    const members: UserHandle[] = [];
    for (let i = 0; i < 5; i++) members.push(await w.user({ organization_id: org2.id }, org2.admin.api));
    const all = await Promise.all(members.flatMap((m) => Array.from({ length: 12 }, () => createBot(m))));
    expect(all.filter((r) => r.status === 201)).toHaveLength(8);
    for (const r of all.filter((x) => x.status !== 201)) expect(r.body.error.code).toBe('quota_exceeded');
    expect(await customBotsOf(org2.admin)).toHaveLength(8);
    console.log(`[quotas] ${srv.dialect}: 60 parallel bot registrations answered in ${ms} ms`);
  });
});

describe('upload bytes per user and per organization', () => {
  const upload = async (token: string, channel: string, size: number): Promise<ApiResponse> => {
    const form = new FormData();
    form.append(
      'file',
      new Blob([new Uint8Array(Buffer.alloc(size, 0x61))], { type: 'text/plain' }),
      'a.txt',
    );
    const res = await fetch(`${srv.url}/api/channels/${channel}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
  };
  const listed = async (u: UserHandle, channel: string) =>
    expectStatus(await u.api.get(`/api/channels/${channel}/files`, { query: { limit: 100 } }), 200)
      .items as any[];
  /** Every stored blob of an organization (files/<org>/… under the data directory). */
  const blobsOf = (orgId: string): string[] => {
    const dir = join(srv.app.services.config.dataDir, 'files', orgId);
    return existsSync(dir)
      ? (readdirSync(dir, { recursive: true, withFileTypes: true }) as any[])
          .filter((e) => e.isFile())
          .map((e) => e.name)
      : [];
  };

  it('a user uploads at most WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER; the refused file is not kept', async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id }, org.admin.api);
    const ch = await w.channel(ann.api);
    expectStatus(await upload(ann.token, ch, 2000), 201);
    const over = await upload(ann.token, ch, 1001);
    expectQuota(over, 'uploadBytesPerUser', '3000', 'WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER');
    expect(await listed(ann, ch)).toHaveLength(1);
    expect(blobsOf(org.id)).toHaveLength(1);
    expectStatus(await upload(ann.token, ch, 1000), 201); // exactly at the quota
    // At the quota: refused before a byte is read.
    expectQuota(
      await upload(ann.token, ch, 1),
      'uploadBytesPerUser',
      '3000',
      'WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER',
    );
    expect(await listed(ann, ch)).toHaveLength(2);
    expect(blobsOf(org.id)).toHaveLength(2);
  });

  it("an organization's files take at most WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG, bots' uploads included", async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id }, org.admin.api);
    const ben = await w.user({ organization_id: org.id }, org.admin.api);
    const ch = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${ch}/members`, { user_id: ben.id }), 201);
    const bot = await w.bot(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${ch}/members`, { bot_id: bot.id }), 201);
    expectStatus(await upload(ann.token, ch, 2500), 201);
    expectStatus(await upload(bot.key, ch, 1500), 201);
    const over = await upload(ben.token, ch, 1001);
    expectQuota(over, 'uploadBytesPerOrg', '5000', 'WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG');
    const overBot = await upload(bot.key, ch, 1001);
    expectQuota(overBot, 'uploadBytesPerOrg', '5000', 'WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG');
    expectStatus(await upload(ben.token, ch, 1000), 201);
    expect(await listed(ann, ch)).toHaveLength(3);
    expect(blobsOf(org.id)).toHaveLength(3);
  });

  it('20 parallel uploads of 1000 bytes by one user: exactly 3 stored', async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id }, org.admin.api);
    const ch = await w.channel(ann.api);
    const all = await Promise.all(Array.from({ length: 20 }, () => upload(ann.token, ch, 1000)));
    expect(all.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of all.filter((x) => x.status !== 201)) expect(r.body.error.code).toBe('quota_exceeded');
    expect(await listed(ann, ch)).toHaveLength(3);
    expect(blobsOf(org.id)).toHaveLength(3);
  });
});

describe('bot-data bytes per organization', () => {
  const data = (botId: string, key: string) => `/api/bots/${botId}/data/${encodeURIComponent(key)}`;
  /** A JSON string value that takes `bytes` bytes as JSON (the quotes included). */
  const value = (bytes: number) => 'x'.repeat(bytes - 2);

  it('the bots of an organization store at most WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG together', async () => {
    const org = await w.org();
    const a = await w.bot(org.admin.api);
    const b = await w.bot(org.admin.api);
    expectStatus(await a.api.put(data(a.id, 'one'), { value: value(30_000) }), 200);
    expectStatus(await b.api.put(data(b.id, 'two'), { value: value(30_000) }), 200);
    const over = await a.api.put(data(a.id, 'three'), { value: value(10_000) });
    expectQuota(over, 'botDataBytesPerOrg', '65536', 'WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG');
    expect((await a.api.get(data(a.id, 'three'))).status).toBe(404);
    // A larger value of an existing key counts its growth; refused, the old value stays.
    const grow = await b.api.put(data(b.id, 'two'), { value: value(40_000) });
    expectQuota(grow, 'botDataBytesPerOrg', '65536', 'WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG');
    expect(expectStatus(await b.api.get(data(b.id, 'two')), 200)).toMatchObject({ version: 1 });
    // A smaller value and a deletion give bytes back.
    expectStatus(await a.api.put(data(a.id, 'one'), { value: value(1000) }), 200);
    expectStatus(await a.api.put(data(a.id, 'three'), { value: value(20_000) }), 200);
    expectStatus(await b.api.delete(data(b.id, 'two')), 200);
    expectStatus(await b.api.put(data(b.id, 'four'), { value: value(40_000) }), 200);
    // Another organization has its own.
    const other = await w.org();
    const c = await w.bot(other.admin.api);
    expectStatus(await c.api.put(data(c.id, 'one'), { value: value(60_000) }), 200);
  });

  it('20 parallel writes of 10 KB to new keys: as many as fit, not one more', async () => {
    const org = await w.org();
    const a = await w.bot(org.admin.api);
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) => a.api.put(data(a.id, `k${i}`), { value: value(10_000) })),
    );
    // 65,536 bytes hold 6 values of 10,000 bytes.
    expect(all.filter((r) => r.status === 200)).toHaveLength(6);
    for (const r of all.filter((x) => x.status !== 200)) expect(r.body.error.code).toBe('quota_exceeded');
    const list = expectStatus(await a.api.get(`/api/bots/${a.id}/data`, { query: { limit: 100 } }), 200);
    expect(list.items).toHaveLength(6);
  });
});

describe('configuration', () => {
  it('has the documented defaults and refuses values that cannot work', () => {
    expect(loadConfig({}).quotas).toEqual({
      botsPerOrg: 100,
      botsPerMember: 20,
      uploadBytesPerOrg: 10 * 1024 ** 3,
      uploadBytesPerUser: 1024 ** 3,
      botDataBytesPerOrg: 256 * 1024 ** 2,
    });
    expect(loadConfig({}).imageHosts).toEqual([]);
    expect(
      loadConfig({ WORKROOM_IMAGE_HOSTS: 'CDN.example.com, *.example.org,img.example.net:8443' }).imageHosts,
    ).toEqual(['cdn.example.com', '*.example.org', 'img.example.net:8443']);
    for (const [key, value] of [
      ['WORKROOM_QUOTA_BOTS_PER_ORG', '-1'],
      ['WORKROOM_QUOTA_BOTS_PER_MEMBER', 'many'],
      ['WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER', '1.5'],
      ['WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG', '65535'], // less than one value of 64 KiB
      ['WORKROOM_IMAGE_HOSTS', 'https://cdn.example.com'],
      ['WORKROOM_IMAGE_HOSTS', '*'],
      ['WORKROOM_IMAGE_HOSTS', "cdn.example.com 'unsafe-inline'"],
      ['WORKROOM_IMAGE_HOSTS', 'a.*.example.org'],
    ] as const) {
      expect(() => loadConfig({ [key]: value }), `${key}=${value}`).toThrow(ConfigError);
      try {
        loadConfig({ [key]: value });
      } catch (e) {
        expect((e as ConfigError).problems.join(' ')).toContain(key);
      }
    }
  });
});
