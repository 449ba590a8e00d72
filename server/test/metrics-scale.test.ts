import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World } from './helpers/world.js';
import { parseExposition, valueOf } from './helpers/metrics.js';

/**
 * What a scrape costs with 1,000 bots receiving webhooks and a queue of failed deliveries waiting for
 * their retries (docs/METRICS.md, "Cost"): the scrape-time gauges read a few indexed queries, never a
 * query per bot, and no label carries a bot, so neither the time nor the size of a scrape grows with
 * them. Goal: under 5 ms of the server's CPU a scrape, fresh (the snapshot's query included); the wall
 * time is printed with a database round trip for comparison.
 */
const BOTS = 1000;
const MESSAGES = 3;

describe('metrics at 1,000 bots', () => {
  let srv: TestServer;
  let receiver: Server;
  let hits = 0;

  beforeAll(async () => {
    // Every delivery fails (503) and waits 10 minutes for its retry: the queue holds BOTS × MESSAGES.
    receiver = createServer((_req, res) => {
      hits++;
      res.writeHead(503).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    srv = await startTestServer(
      {
        WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
        WORKROOM_WEBHOOK_RETRY_DELAYS: '10m',
        WORKROOM_WEBHOOK_PAUSE_AFTER: '0',
        WORKROOM_QUOTA_BOTS_PER_ORG: String(BOTS + 10),
        WORKROOM_QUOTA_BOTS_PER_MEMBER: String(BOTS + 10),
      },
      { metricsPort: 0 },
    );
  }, 60_000);
  afterAll(async () => {
    await srv?.close();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  it('a scrape costs under 5 ms, and its size does not grow with the bots', async () => {
    const w = await World.create(srv.url);
    const api = w.admin.api;
    const channel = await w.channel(api);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const before = parseExposition(await srv.app.metrics!.registry.scrape({ fresh: true }));
    const sizeBefore = before.series.size;
    // 1,000 bots with a webhook, a secret and the channel, ten requests at a time.
    for (let i = 0; i < BOTS; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, BOTS - i) }, async () => {
          const b = expectStatus(
            await api.post('/api/bots', { name: uniq('bot'), webhook_url: url, events: ['message.created'] }),
            201,
          );
          expectStatus(await api.post(`/api/bots/${b.bot_id}/webhook-secret`), 201);
          expectStatus(await api.post(`/api/channels/${channel}/members`, { bot_id: b.bot_id }), 201);
        }),
      );
    }
    for (let m = 0; m < MESSAGES; m++)
      expectStatus(await api.post(`/api/channels/${channel}/messages`, { content: `to ${BOTS} bots` }), 201);
    const queued = BOTS * MESSAGES;
    await expect.poll(() => hits, { timeout: 120_000, interval: 200 }).toBeGreaterThanOrEqual(queued);
    const registry = srv.app.metrics!.registry;
    await expect
      .poll(
        async () =>
          valueOf(parseExposition(await registry.scrape({ fresh: true })), 'workroom_webhook_queue_depth'),
        {
          timeout: 30_000,
        },
      )
      .toBe(queued);

    // Fresh scrapes: every one reads the snapshot's queries again (the worst case; Prometheus every
    // 15 s always gets a fresh one). Wall time and this process's CPU time per scrape.
    const storage = srv.app.services.storage;
    for (let i = 0; i < 20; i++) await registry.scrape({ fresh: true }); // warm-up
    // Five batches of 20; the batch least disturbed by other work on the machine (the lowest CPU)
    // is the scrape's own cost: interference only ever adds to it.
    const times: number[] = [];
    const batches: number[] = [];
    for (let batch = 0; batch < 5; batch++) {
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        await registry.scrape({ fresh: true });
        times.push(performance.now() - t0);
      }
      const cpu = process.cpuUsage(cpu0);
      batches.push((cpu.user + cpu.system) / 1000 / 20);
    }
    const cpuMs = Math.min(...batches);
    // One round trip to the database in the same run (`select 1`): on PostgreSQL the snapshot is one
    // round trip, whose time is the database server's and the machine's, not the scrape's work.
    const pings: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      await storage.ping();
      pings.push(performance.now() - t0);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const p90 = [...times].sort((a, b) => a - b)[90]!;
    const last = parseExposition(await registry.scrape({ fresh: true }));
    const queries = valueOf(last, 'workroom_metrics_scrape_queries_duration_seconds') * 1000;
    // Over HTTP, as Prometheus sees it (a fresh snapshot, then cached ones).
    const http: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      await (await fetch(srv.app.metrics!.url!)).text();
      http.push(performance.now() - t0);
    }
    console.log(
      `[metrics-scale ${srv.dialect}] ${BOTS} bots, ${queued} deliveries queued: fresh scrape median ` +
        `${median(times).toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, CPU ${cpuMs.toFixed(2)} ms a scrape ` +
        `(batches ${batches.map((b) => b.toFixed(2)).join(', ')}) ` +
        `(snapshot query ${queries.toFixed(2)} ms; database round trip ${median(pings).toFixed(2)} ms); ` +
        `over HTTP median ${median(http).toFixed(2)} ms; ${last.series.size} series (${sizeBefore} before the bots)`,
    );
    // The cost asserted is the server's CPU time a scrape (of the least disturbed batch): on a shared
    // 2-core machine (CI runs three suites at once) the wall time also counts waiting for a core, which
    // the scrape does not cause.
    // The wall times are printed above (on a quiet machine: about 2 ms on SQLite).
    expect(cpuMs).toBeLessThan(5);
    // Every queued delivery had its failed attempt counted (the counter moves as each attempt is
    // recorded, which can trail the queue's depth by a moment).
    await expect
      .poll(
        async () =>
          valueOf(
            parseExposition(await registry.scrape({ fresh: true })),
            'workroom_webhook_attempts_total',
            {
              outcome: 'http_error',
            },
          ),
        { timeout: 30_000 },
      )
      .toBeGreaterThanOrEqual(queued);
    // The bots add no series: no label carries a bot (their ids never appear), and the count stays
    // that of the catalogue's closed label sets plus the HTTP routes used (bounded by the route table).
    const text = await registry.scrape();
    const bots = (expectStatus(await api.get('/api/bots'), 200).items as { id: string }[]).slice(0, 20);
    for (const b of bots) expect(text).not.toContain(b.id);
    expect(text).not.toContain(channel);
    const workroomSeries = [...last.series.keys()].filter(
      (k) => k.startsWith('workroom_') && !k.startsWith('workroom_http_'),
    );
    expect(workroomSeries.length).toBeLessThan(100);
  }, 300_000);
});
