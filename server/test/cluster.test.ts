import { randomBytes } from 'node:crypto';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startHaproxy, type Balancer } from './helpers/haproxy.js';
import { dropSchema, startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * Three instances on one PostgreSQL schema behind Debian's HAProxy (round-robin, no stickiness, health
 * checks): what one instance decides, the cluster decides. SQLite is one process's file: PostgreSQL only.
 */
describe.skipIf(!process.env.DATABASE_URL)('three instances on one database behind HAProxy', () => {
  const instances: TestServer[] = [];
  let lb: Balancer;
  let w: World;
  const RATE = 50;
  const BURST = 100;

  beforeAll(async () => {
    const shared = {
      WORKROOM_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: String(RATE),
      WORKROOM_RATE_LIMIT_BOT_BURST: String(BURST),
    };
    const first = await startTestServer(shared);
    instances.push(first);
    for (let i = 1; i < 3; i++) {
      instances.push(await startTestServer({ ...shared, ...sameDatabaseAs(first) }));
    }
    lb = await startHaproxy(instances.map((s, i) => ({ name: `i${i}`, port: Number(new URL(s.url).port) })));
    w = await World.create(lb.url);
  }, 60_000);
  afterAll(async () => {
    await lb?.stop();
    // The first instance owns the schema: it closes last and drops it.
    for (const s of instances.slice().reverse()) await s.close();
  });

  it('bot requests spread over the instances are accepted within the limit’s bound (± 10 %)', async () => {
    const bot = await w.bot(w.admin.api);
    const channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const answers: { status: number; at: number }[] = [];
    const started = performance.now();
    const refusals = () => answers.filter((a) => a.status === 429).length;
    let sent = 0;
    // Ten at a time through the balancer, which spreads them round-robin over the three instances;
    // at least 600, and on until 50 were refused (a slow machine may send fewer than the limit allows).
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while ((sent < 600 || refusals() < 50) && sent < 5000) {
          sent++;
          const r = await fetch(`${lb.url}/api/channels/${channel}/messages?limit=1`, {
            headers: { authorization: `Bearer ${bot.key}` },
          });
          answers.push({ status: r.status, at: (performance.now() - started) / 1000 });
          await r.body?.cancel();
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const accepted = answers.filter((a) => a.status === 200).length;
    const bound = BURST + seconds * RATE;
    // Between the first refusal and the last the bucket was empty at both ends, so what it refilled in
    // between was all spent: that is the lower bound. (Before the first one the client may have been
    // slower than the refill, which a full bucket wastes; after the last one too.) Slack: the leases
    // the three instances may hold (2 tokens each at 50/s) and the 10 requests in flight at each end.
    const refusedAt = answers.filter((a) => a.status === 429).map((a) => a.at);
    const [first, last] = [Math.min(...refusedAt), Math.max(...refusedAt)];
    const acceptedBetween = answers.filter((a) => a.status === 200 && a.at > first && a.at <= last).length;
    const refilled = (last - first) * RATE;
    console.log(
      `${answers.length} requests in ${seconds.toFixed(2)} s over 3 instances: ${accepted} accepted, ` +
        `${refusals()} refused; the limit allows ${bound.toFixed(0)}; between the first and the last ` +
        `refusal (${first.toFixed(2)}–${last.toFixed(2)} s) ${acceptedBetween} accepted of ${refilled.toFixed(0)} refilled`,
    );
    expect(accepted + refusals()).toBe(answers.length);
    expect(refusals()).toBeGreaterThanOrEqual(50);
    expect(accepted).toBeLessThanOrEqual(bound * 1.1);
    expect(acceptedBetween).toBeGreaterThanOrEqual(refilled * 0.9 - 2 * 10 - 3 * 2);
  });

  it('sign-in is throttled at the same attempt through the balancer as on one instance', async () => {
    /** Wrong passwords for a new account at `url` until the first 429: its attempt number. */
    const firstRefusal = async (url: string): Promise<number> => {
      const u = await w.user();
      for (let attempt = 1; attempt <= 30; attempt++) {
        const r = await fetch(`${url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: u.email, password: 'not the password' }),
        });
        await r.body?.cancel();
        if (r.status === 429) return attempt;
        expect(r.status).toBe(401);
      }
      return Infinity;
    };
    const alone = await firstRefusal(instances[0]!.url);
    const spread = await firstRefusal(lb.url);
    console.log(`first 429 at attempt ${alone} on one instance, ${spread} over three`);
    expect(alone).toBe(6); // 5 failures per address and account, then one a minute
    expect(spread).toBe(alone);
  });

  it('MCP clients of both eras are served round-robin: a legacy session and modern stateless calls', async () => {
    const bot = await w.bot(w.admin.api);
    const channel = await w.channel(w.admin.api);
    expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const legacy = new Client({ name: 'lb-legacy', version: '1.0.0' });
    await legacy.connect(
      new StreamableHTTPClientTransport(new URL('/api/mcp', lb.url), {
        requestInit: { headers: { Authorization: `Bearer ${bot.key}` } },
      }),
    );
    try {
      for (let i = 0; i < 6; i++) {
        const r = await legacy.callTool({
          name: 'send_message',
          arguments: { channel_id: channel, content: `legacy lb ${i}` },
        });
        expect(r.isError ?? false).toBe(false);
      }
    } finally {
      await legacy.close();
    }
    const modern = new ModernClient(
      { name: 'lb-modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(
      new ModernTransport(new URL('/api/mcp', lb.url), {
        requestInit: { headers: { Authorization: `Bearer ${bot.key}` } },
      }),
    );
    try {
      expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      for (let i = 0; i < 6; i++) {
        const r = await modern.callTool({
          name: 'send_message',
          arguments: { channel_id: channel, content: `modern lb ${i}` },
        });
        expect(r.isError ?? false).toBe(false);
      }
    } finally {
      await modern.close();
    }
    const list = expectStatus(
      await w.admin.api.get(`/api/channels/${channel}/messages`, { query: { limit: '100' } }),
      200,
    );
    const contents = (list.items as { content: string }[]).map((m) => m.content);
    expect(contents.filter((c) => c.startsWith('legacy lb '))).toHaveLength(6);
    expect(contents.filter((c) => c.startsWith('modern lb '))).toHaveLength(6);
  });

  it('@here posted through one instance notifies a user connected only to another', async () => {
    const org = await w.org();
    const ann = await w.user({ organization_id: org.id });
    const ben = await w.user({ organization_id: org.id });
    const cat = await w.user({ organization_id: org.id });
    const channel = await w.channel(ann.api);
    for (const u of [ben, cat])
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { user_id: u.id }), 201);
    const bots = expectStatus(await ann.api.get('/api/bots'), 200).items as {
      id: string;
      builtin?: string;
    }[];
    const notifier = bots.find((b) => b.builtin === 'notifications')!.id;
    /** The notifications bot's DMs to `u`. */
    const dms = async (token: string): Promise<string[]> => {
      const get = (path: string): Promise<{ items: unknown[] }> =>
        fetch(`${lb.url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then(
          (r) => r.json() as Promise<{ items: unknown[] }>,
        );
      const rooms = (await get('/api/dm-rooms')).items as {
        id: string;
        members: { type: string; id: string }[];
      }[];
      const room = rooms.find((r) => r.members.some((m) => m.type === 'bot' && m.id === notifier));
      if (!room) return [];
      const items = (await get(`/api/dm-rooms/${room.id}/messages?limit=100`)).items as { content: string }[];
      return items.map((m) => m.content);
    };
    const postThrough = async (server: TestServer, content: string) => {
      const r = await fetch(`${server.url}/api/channels/${channel}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ann.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content }),
      });
      expect(r.status).toBe(201);
    };
    // Ben is connected to the first instance only; Cat nowhere.
    const live = await LiveClient.connect(instances[0]!.url, ben.token);
    try {
      for (const [i, server] of [instances[1]!, instances[2]!, instances[1]!].entries()) {
        await postThrough(server, `cake ${i} @here`);
      }
      await vi.waitFor(
        async () => expect((await dms(ben.token)).filter((c) => c.includes('cake'))).toHaveLength(3),
        {
          timeout: 20_000,
          interval: 200,
        },
      );
      // Cat is not online: mentioned by name afterwards, she has that DM and none of the cake ones.
      await postThrough(instances[2]!, `sentinel for @${cat.email}`);
      await vi.waitFor(
        async () => expect((await dms(cat.token)).some((c) => c.includes('sentinel'))).toBe(true),
        {
          timeout: 20_000,
          interval: 200,
        },
      );
      expect((await dms(cat.token)).filter((c) => c.includes('cake'))).toEqual([]);
    } finally {
      await live.close();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('instances starting together on an empty database', () => {
  it('three come up healthy, 10 rounds in a row, whichever sets it up', async () => {
    const url = process.env.DATABASE_URL!;
    const encryptionKey = randomBytes(32).toString('base64');
    for (let round = 0; round < 10; round++) {
      const schema = `wr_boot_${randomBytes(5).toString('hex')}`;
      const started = await Promise.allSettled(
        [0, 1, 2].map(() =>
          startTestServer({ WORKROOM_DATABASE_SCHEMA: schema, WORKROOM_ENCRYPTION_KEY: encryptionKey }),
        ),
      );
      const up = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      try {
        const failures = started.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
        expect(failures, `round ${round}`).toEqual([]);
        for (const s of up) {
          const health = await fetch(`${s.url}/api/health`);
          expect(health.status).toBe(200);
          await health.body?.cancel();
        }
        // One organization and one administrator, who signs in through each.
        const w = await World.create(up[2]!.url);
        const orgs = expectStatus(await w.admin.api.get('/api/organizations'), 200);
        expect(orgs.items ?? orgs).toHaveLength(1);
      } finally {
        for (const s of up) await s.close();
        await dropSchema(url, schema);
      }
    }
  }, 180_000);
});
