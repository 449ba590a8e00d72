import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { LiveClient } from './helpers/realtime.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';
import { parseExposition, valueOf } from './helpers/metrics.js';

/**
 * Prometheus metrics (docs/METRICS.md) on a real server over real HTTP: the catalogue is complete, the
 * counters move with real traffic (a POST, MCP calls, webhook deliveries to a local receiver, a
 * WebSocket, a 429), the listener's address, and the health split.
 */

/** The `workroom_*` names of the catalogue table in docs/METRICS.md. */
function documentedMetrics(): string[] {
  const doc = readFileSync(new URL('../../docs/METRICS.md', import.meta.url), 'utf8');
  return [...doc.matchAll(/^\| `(workroom_\w+)` \| (counter|gauge|histogram) \|/gm)].map((m) => m[1]!);
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe('metrics', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let owner: UserHandle;
  let channel: string;

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer(
      {
        WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
        WORKROOM_WEBHOOK_RETRY_DELAYS: '10m',
        WORKROOM_WEBHOOK_TIMEOUT: '2s',
      },
      { metricsPort: 0 },
    );
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  const scrapeText = async () => {
    const res = await fetch(srv.app.metrics!.url!);
    expect(res.status).toBe(200);
    return res.text();
  };
  const scrape = async () => parseExposition(await scrapeText());

  it('serves every metric of the catalogue in the text format, and no workroom_ metric it does not document', async () => {
    const res = await fetch(srv.app.metrics!.url!);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = parseExposition(await res.text());
    const documented = documentedMetrics();
    expect(documented.length).toBeGreaterThanOrEqual(24);
    for (const name of documented) expect(s.types.has(name), name).toBe(true);
    const served = [...s.types.keys()].filter((n) => n.startsWith('workroom_'));
    expect(served.sort()).toEqual([...documented].sort());
    // Process and runtime metrics come along; the setImmediate-based lag gauge does not.
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ])
      expect(s.types.has(name), name).toBe(true);
    expect(s.types.has('nodejs_eventloop_lag_seconds')).toBe(false);
    // Only /metrics is served there.
    const other = await fetch(new URL('/', srv.app.metrics!.url!));
    expect(other.status).toBe(404);
    const post = await fetch(srv.app.metrics!.url!, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('counts HTTP requests by route template and status, never by raw path', async () => {
    const route = '/api/channels/{channelId}/messages';
    const before = await scrape();
    const created = (n: typeof before) =>
      valueOf(n, 'workroom_http_server_request_duration_seconds_count', {
        method: 'POST',
        route,
        status_code: '201',
      });
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content: 'counted' }), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, {}), 400);
    const missing = `/api/no-such-thing/${uniq('x')}`;
    expect((await fetch(`${srv.url}${missing}`)).status).toBe(404);
    await expect.poll(async () => created(await scrape())).toBe(created(before) + 1);
    const text = await scrapeText();
    const after = parseExposition(text);
    expect(
      valueOf(after, 'workroom_http_server_request_duration_seconds_count', { route, status_code: '400' }),
    ).toBe(
      valueOf(before, 'workroom_http_server_request_duration_seconds_count', { route, status_code: '400' }) +
        1,
    );
    expect(
      valueOf(after, 'workroom_http_server_request_duration_seconds_count', {
        route: '(unmatched)',
        status_code: '404',
      }),
    ).toBeGreaterThanOrEqual(1);
    // Ids and raw paths never become label values.
    expect(text).not.toContain(channel);
    expect(text).not.toContain(missing);
    // The latency histogram has its buckets and sum.
    expect(
      valueOf(after, 'workroom_http_server_request_duration_seconds_bucket', {
        route,
        status_code: '201',
        le: '+Inf',
      }),
    ).toBe(created(after));
    expect(
      valueOf(after, 'workroom_http_server_request_duration_seconds_sum', { route, status_code: '201' }),
    ).toBeGreaterThan(0);
  });

  it('counts MCP tool calls by tool, era and outcome', async () => {
    const bot = await w.bot(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const session = await rawSession(srv.url, bot.key);
    const call = (id: number, name: string, args: Record<string, unknown>) =>
      rawMcp(srv.url, {
        key: bot.key,
        session,
        body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
      });
    const before = await scrape();
    const calls = (s: typeof before, labels: Record<string, string>) =>
      valueOf(s, 'workroom_mcp_tool_calls_total', labels);
    const ok = await call(1, 'send_message', { channel_id: channel, content: 'from MCP' });
    expect(ok.body.result.isError).toBeFalsy();
    const failed = await call(2, 'read_messages', { channel_id: '00000000-0000-7000-8000-000000000000' });
    expect(failed.body.result.isError).toBe(true);
    const unknown = await call(3, `no_such_tool_${uniq('t')}`, {});
    expect(unknown.body.error).toBeDefined();
    const after = await scrape();
    expect(calls(after, { tool: 'send_message', era: 'legacy', outcome: 'ok' })).toBe(
      calls(before, { tool: 'send_message', era: 'legacy', outcome: 'ok' }) + 1,
    );
    expect(calls(after, { tool: 'read_messages', era: 'legacy', outcome: 'is_error' })).toBe(
      calls(before, { tool: 'read_messages', era: 'legacy', outcome: 'is_error' }) + 1,
    );
    expect(calls(after, { tool: '(unknown)', outcome: 'protocol_error' })).toBe(
      calls(before, { tool: '(unknown)', outcome: 'protocol_error' }) + 1,
    );
    expect(
      valueOf(after, 'workroom_mcp_tool_call_duration_seconds_count', { tool: 'send_message' }),
    ).toBeGreaterThanOrEqual(1);
    // The modern (stateless) era: every request names its version in _meta.
    const modern = await rawMcp(srv.url, {
      key: bot.key,
      headers: {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'list_channels',
      },
      body: {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: {
          name: 'list_channels',
          arguments: {},
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'metrics-test', version: '1' },
          },
        },
      },
    });
    expect(modern.status).toBe(200);
    await expect
      .poll(async () => calls(await scrape(), { tool: 'list_channels', era: 'modern' }))
      .toBe(calls(before, { tool: 'list_channels', era: 'modern' }) + 1);
  });

  it('counts webhook attempts by outcome with their latency, and shows the queue waiting for retries', async () => {
    const hooked = async (status: number) => {
      const url = rx.hook(uniq('bot'), () => ({ status }));
      const bot = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
      expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
      expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
      return url;
    };
    const good = await hooked(200);
    const bad = await hooked(500);
    const before = await scrape();
    const attempts = (s: typeof before, outcome: string) =>
      valueOf(s, 'workroom_webhook_attempts_total', { outcome, transport: 'http' });
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content: 'deliver me' }), 201);
    await expect.poll(() => rx.at(good).length + rx.at(bad).length, { timeout: 10_000 }).toBe(2);
    await expect
      .poll(
        async () => {
          const s = await scrape();
          return [
            attempts(s, 'success') - attempts(before, 'success'),
            attempts(s, 'http_error') - attempts(before, 'http_error'),
          ];
        },
        { timeout: 10_000 },
      )
      .toEqual([1, 1]);
    const after = await scrape();
    expect(
      valueOf(after, 'workroom_webhook_attempt_duration_seconds_count', { transport: 'http' }),
    ).toBeGreaterThanOrEqual(
      valueOf(before, 'workroom_webhook_attempt_duration_seconds_count', { transport: 'http' }) + 2,
    );
    // The failed delivery waits 10 minutes for its retry: in the queue, not due. (Gauges are read at
    // scrape time from a snapshot kept for a second.)
    await expect
      .poll(async () => valueOf(await scrape(), 'workroom_webhook_queue_depth'), { timeout: 5000 })
      .toBeGreaterThanOrEqual(1);
    const s = await scrape();
    expect(valueOf(s, 'workroom_webhook_queue_due')).toBe(0);
    expect(valueOf(s, 'workroom_webhook_oldest_due_age_seconds')).toBe(0);
    expect(valueOf(s, 'workroom_outbox_head_position')).toBeGreaterThan(0);
    await expect
      .poll(async () => valueOf(await scrape(), 'workroom_outbox_lag_events'), { timeout: 5000 })
      .toBe(0);
  });

  it('shows live WebSocket connections', async () => {
    const live = () =>
      scrape().then((s) => valueOf(s, 'workroom_realtime_connections', { state: 'authenticated' }));
    const before = await live();
    const c = await LiveClient.connect(srv.url, owner.token);
    await expect.poll(live, { timeout: 5000 }).toBe(before + 1);
    c.ws.close();
    await expect.poll(live, { timeout: 5000 }).toBe(before);
  });

  it('counts scheduled jobs started and finished', async () => {
    const bot = await w.bot(owner.api);
    const before = await scrape();
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/jobs`, {
        kind: 'metrics.test',
        run_at: new Date().toISOString(),
      }),
      201,
    );
    await expect
      .poll(
        async () =>
          valueOf(await scrape(), 'workroom_scheduler_jobs_finished_total', { outcome: 'succeeded' }),
        {
          timeout: 10_000,
        },
      )
      .toBe(valueOf(before, 'workroom_scheduler_jobs_finished_total', { outcome: 'succeeded' }) + 1);
    const after = await scrape();
    expect(valueOf(after, 'workroom_scheduler_job_start_delay_seconds_count')).toBe(
      valueOf(before, 'workroom_scheduler_job_start_delay_seconds_count') + 1,
    );
  });

  it('shows the database pool', async () => {
    const s = await scrape();
    const max = valueOf(s, 'workroom_db_pool_max_connections');
    expect(max).toBe(srv.dialect === 'postgres' ? 4 : 1);
    const open = valueOf(s, 'workroom_db_pool_connections');
    expect(open).toBeGreaterThanOrEqual(srv.dialect === 'postgres' ? 1 : 1);
    expect(open).toBeLessThanOrEqual(max);
    expect(valueOf(s, 'workroom_db_pool_pending_requests')).toBe(0);
  });

  it('liveness answers 200; readiness checks the database, the migrations and the workers', async () => {
    const live = await fetch(`${srv.url}/api/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${srv.url}/api/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ok',
      database: 'ok',
      migrations: 'applied',
      workers: 'running',
      dialect: srv.dialect,
    });
    // The old check answers as it always did.
    expect((await fetch(`${srv.url}/api/health`)).status).toBe(200);
    // A migration this version does not know (a newer version migrated the database): not ready.
    const db = srv.app.services.storage.stores.db as any;
    await db
      .insertInto('kysely_migration')
      .values({ name: '9999_from_the_future', timestamp: new Date().toISOString() })
      .execute();
    try {
      const r = await fetch(`${srv.url}/api/health/ready`);
      expect(r.status).toBe(503);
      expect(await r.json()).toMatchObject({ status: 'unavailable', migrations: 'differ', database: 'ok' });
      expect((await fetch(`${srv.url}/api/health/live`)).status).toBe(200);
    } finally {
      await db.deleteFrom('kysely_migration').where('name', '=', '9999_from_the_future').execute();
    }
    expect((await fetch(`${srv.url}/api/health/ready`)).status).toBe(200);
  });
});

describe('metrics: rate limits and shutdown', () => {
  it('counts a 429 of a bot key, and readiness turns 503 as shutdown begins', async () => {
    const srv = await startTestServer(
      { WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0.001', WORKROOM_RATE_LIMIT_BOT_BURST: '2' },
      { metricsPort: 0 },
    );
    let closed = false;
    try {
      const w = await World.create(srv.url);
      const bot = await w.bot(w.admin.api);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await bot.api.get('/api/channels')).status);
      expect(statuses.filter((s) => s === 429).length).toBe(2);
      const s = parseExposition(await (await fetch(srv.app.metrics!.url!)).text());
      expect(valueOf(s, 'workroom_rate_limit_rejections_total', { limiter: 'bot_key' })).toBe(2);
      expect(
        valueOf(s, 'workroom_http_server_request_duration_seconds_count', {
          route: '/api/channels',
          status_code: '429',
        }),
      ).toBe(2);
      // Shutdown: not ready from its first step on (before the drain), while the process still lives.
      const readiness = srv.app.services.readiness!;
      expect((await readiness.check()).ready).toBe(true);
      const closing = srv.close();
      closed = true;
      expect((await readiness.check()).workers).toBe('stopping');
      await closing;
    } finally {
      if (!closed) await srv.close();
    }
  });
});

describe('metrics: dashboard and alerts', () => {
  it("name only metrics of the catalogue (or prom-client's process and runtime metrics)", () => {
    const documented = new Set(documentedMetrics());
    const read = (f: string) => readFileSync(new URL(`../../docs/monitoring/${f}`, import.meta.url), 'utf8');
    const dashboard = JSON.parse(read('grafana-dashboard.json')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const alerts = read('alerts.yml');
    const used = new Set<string>();
    for (const text of [...exprs, alerts])
      for (const m of text.matchAll(/\b(workroom_\w+)/g)) used.add(m[1]!.replace(/_(bucket|sum|count)$/, ''));
    for (const name of used) expect(documented.has(name), name).toBe(true);
    // The alerts the brief asks for: queue age, failure rate, outbox lag.
    for (const alert of ['WorkroomWebhookQueueAge', 'WorkroomWebhookFailureRate', 'WorkroomOutboxLag'])
      expect(alerts).toContain(`alert: ${alert}`);
  });
});

describe('metrics: the listener', () => {
  it('is off with WORKROOM_METRICS_PORT=0: no listener, no-op hooks', async () => {
    expect(loadConfig({ WORKROOM_METRICS_PORT: '0' }).metrics.port).toBeNull();
    const srv = await startTestServer({ WORKROOM_METRICS_PORT: '0' });
    try {
      expect(srv.app.metrics).toBeUndefined();
      expect(srv.app.services.metrics.on).toBe(false);
      // The public port has no metrics: /metrics there is the web app (or nothing), never the exposition.
      const res = await fetch(`${srv.url}/metrics`);
      expect(res.headers.get('content-type') ?? '').not.toMatch(/version=0\.0\.4/);
      expect(await res.text()).not.toContain('workroom_http_server_request_duration_seconds');
    } finally {
      await srv.close();
    }
  });

  it('defaults to 127.0.0.1:9464, and binds WORKROOM_METRICS_PORT on 127.0.0.1 unless WORKROOM_METRICS_HOST says otherwise', async () => {
    expect(loadConfig({}).metrics).toEqual({ port: 9464, host: '127.0.0.1' });
    expect(loadConfig({ WORKROOM_METRICS_HOST: '0.0.0.0', WORKROOM_METRICS_PORT: '9100' }).metrics).toEqual({
      port: 9100,
      host: '0.0.0.0',
    });
    expect(() => loadConfig({ WORKROOM_METRICS_PORT: '70000' })).toThrow(/WORKROOM_METRICS_PORT/);
    const port = await freePort();
    const srv = await startTestServer({ WORKROOM_METRICS_PORT: String(port) });
    try {
      expect(srv.app.metrics!.url).toBe(`http://127.0.0.1:${port}/metrics`);
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# TYPE workroom_webhook_queue_depth gauge');
    } finally {
      await srv.close();
    }
  });

  it('a taken port is logged and the server serves on without metrics', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const srv = await startTestServer({ WORKROOM_METRICS_PORT: String(port) });
      try {
        expect(srv.app.metrics!.url).toBeUndefined();
        expect((await fetch(`${srv.url}/api/health/ready`)).status).toBe(200);
      } finally {
        await srv.close();
      }
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});
