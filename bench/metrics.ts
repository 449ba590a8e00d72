/**
 * Metrics (docs/METRICS.md), two measures:
 *  1. the hot path: REST POST of a message with metrics on (WORKROOM_METRICS_PORT set, /metrics scraped
 *     every second meanwhile) against off (0), BENCH_METRICS_PAIRS alternating pairs of fresh servers
 *     (default 3). Goal ≥ 0.97×, judged on the server's CPU time per request (from /proc: waiting for a
 *     core on a shared machine does not inflate it); the throughput ratio is printed beside it.
 *  2. a scrape at 1,000 bots: 1,000 bots with webhooks (a local receiver answering 503, retries 10
 *     minutes away, so BENCH_METRICS_MESSAGES × 1,000 deliveries wait in the queue) and MCP calls; then
 *     GET /metrics over HTTP, fresh (spaced past the 1 s snapshot cache) and cached. Goal < 5 ms.
 *     Every metric of the catalogue must be present, and those moved by this traffic must have moved.
 * BENCH_METRICS_PHASES picks phases (post, scrape; default both). With BENCH_PG_URL set, Workroom runs on that PostgreSQL; otherwise on SQLite. The machine's load
 * average is printed: on a shared machine, compare only figures taken at a similar load.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { api, fmt, freePort, load, ROOT, seed, startWorkroom, type LoadResult } from './lib.js';

const PAIRS = Number(process.env.BENCH_METRICS_PAIRS ?? 3);
const BOTS = 1000;
const MESSAGES = Number(process.env.BENCH_METRICS_MESSAGES ?? 3);
const pgUrl = process.env.BENCH_PG_URL;
/** BENCH_METRICS_PHASES: post, scrape (comma-separated; default both). */
const PHASES = new Set((process.env.BENCH_METRICS_PHASES ?? 'post,scrape').split(','));
const dbEnv: Record<string, string> = pgUrl ? { DATABASE_URL: pgUrl } : {};
const load1 = () => loadavg()[0]!.toFixed(2);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const content = (i: number) => JSON.stringify({ content: `Metrics bench message ${i}` });

const documented = [
  ...readFileSync(join(ROOT, 'docs/METRICS.md'), 'utf8').matchAll(/^\| `(workroom_\w+)` \| (\w+) \|/gm),
].map((m) => m[1]!);

/** Series → value of a text exposition. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}
const sumOf = (s: Map<string, number>, name: string) => {
  let v = 0;
  for (const [k, x] of s) if (k === name || k.startsWith(`${name}{`)) v += x;
  return v;
};

/** CPU seconds (user + system) the process has used, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

// --- 1. the hot path, metrics on against off ---
/**
 * Throughput on a machine shared with other work swings far more than the few per cent measured here,
 * so each run also reports the server's CPU time per request (from /proc), which waiting for a core
 * does not inflate: the ratio of CPU per request (off / on) is the throughput ratio a saturated
 * server would show.
 */
async function postRun(metricsOn: boolean): Promise<LoadResult & { cpuUs: number }> {
  const metricsPort = metricsOn ? await freePort() : 0;
  const wr = await startWorkroom({ ...dbEnv, WORKROOM_METRICS_PORT: String(metricsPort) });
  try {
    const s = await seed(wr.url);
    // Scraped every second while loaded (Prometheus scrapes every 15 s by default: this is harsher).
    const scraper = metricsOn
      ? setInterval(() => {
          fetch(`http://127.0.0.1:${metricsPort}/metrics`)
            .then((r) => r.text())
            .catch(() => undefined);
        }, 1000)
      : undefined;
    const cpu0 = cpuSeconds(wr.pid);
    const r = await load({
      url: wr.url,
      method: 'POST',
      path: () => `/api/channels/${s.channelId}/messages`,
      headers: { authorization: `Bearer ${s.botKey}` },
      body: content,
    });
    clearInterval(scraper);
    return { ...r, cpuUs: ((cpuSeconds(wr.pid) - cpu0) * 1e6) / Math.max(1, r.requests) };
  } finally {
    await wr.stop();
  }
}

const ratios: number[] = [];
const cpuRatios: number[] = [];
const rows: [string, LoadResult & { cpuUs: number }][] = [];
for (let i = 0; PHASES.has('post') && i < PAIRS; i++) {
  // Alternate which goes first, so that a machine getting busier does not favour one side.
  const order = i % 2 === 0 ? [false, true] : [true, false];
  const got: Record<string, LoadResult & { cpuUs: number }> = {};
  for (const on of order) got[on ? 'on' : 'off'] = await postRun(on);
  ratios.push(got.on!.rps / got.off!.rps);
  cpuRatios.push(got.off!.cpuUs / got.on!.cpuUs);
  rows.push([`pair ${i + 1} off`, got.off!], [`pair ${i + 1} on `, got.on!]);
}
if (PHASES.has('post')) {
  console.log(
    `\nPOST a message (REST, bot), metrics off vs on (${pgUrl ? 'PostgreSQL' : 'SQLite'}), load ${load1()}`,
  );
  for (const [name, r] of rows)
    console.log(`  ${name.padEnd(14)} ${fmt(r)}  CPU ${r.cpuUs.toFixed(0)} µs/request`);
  console.log(
    `  median CPU-per-request ratio off/on ${median(cpuRatios).toFixed(3)} (pairs: ${cpuRatios.map((r) => r.toFixed(3)).join(', ')}); goal ≥ 0.97`,
  );
  const ratio = median(ratios);
  console.log(
    `  median on/off ratio ${ratio.toFixed(3)} (pairs: ${ratios.map((r) => r.toFixed(3)).join(', ')}); throughput, for reference`,
  );
}

// --- 2. a scrape at 1,000 bots ---
if (!PHASES.has('scrape')) process.exit(0);
let hits = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    hits++;
    res.writeHead(503).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
const metricsPort = await freePort();
const wr = await startWorkroom({
  ...dbEnv,
  WORKROOM_METRICS_PORT: String(metricsPort),
  WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
  WORKROOM_WEBHOOK_RETRY_DELAYS: '10m',
  WORKROOM_WEBHOOK_PAUSE_AFTER: '0',
  WORKROOM_QUOTA_BOTS_PER_ORG: String(BOTS + 10),
  WORKROOM_QUOTA_BOTS_PER_MEMBER: String(BOTS + 10),
});
const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
const scrape = async () => parse(await (await fetch(metricsUrl)).text());
try {
  const s = await seed(wr.url);
  const first = await scrape();
  for (let i = 0; i < BOTS; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, BOTS - i) }, async (_, j) => {
        const b = await api<{ bot_id: string }>(wr.url, 'POST', '/api/bots', s.token, {
          name: `scrape-bot-${i + j}`,
          webhook_url: hook,
          events: ['message.created'],
        });
        await api(wr.url, 'POST', `/api/bots/${b.bot_id}/webhook-secret`, s.token);
        await api(wr.url, 'POST', `/api/channels/${s.channelId}/members`, s.token, { bot_id: b.bot_id });
      }),
    );
  }
  for (let m = 0; m < MESSAGES; m++)
    await api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, s.token, {
      content: `to ${BOTS} bots`,
    });
  // MCP (the stateless 2026-07-28 era: no session to open): a call that succeeds and one the tool
  // answers with isError.
  const mcp = (id: number, name: string, args: unknown) =>
    fetch(`${wr.url}/api/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.botKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name,
          arguments: args,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'metrics-bench', version: '1' },
          },
        },
      }),
    }).then(async (r) => {
      if (r.status !== 200) throw new Error(`MCP ${name}: ${r.status} ${await r.text()}`);
    });
  await mcp(1, 'list_channels', {});
  await mcp(2, 'read_messages', { channel_id: '00000000-0000-7000-8000-000000000000' });
  const queued = BOTS * MESSAGES;
  const t0 = Date.now();
  while (hits < queued && Date.now() - t0 < 300_000) await new Promise((r) => setTimeout(r, 200));
  while (sumOf(await scrape(), 'workroom_webhook_queue_depth') < queued && Date.now() - t0 < 300_000)
    await new Promise((r) => setTimeout(r, 500));

  const fresh: number[] = [];
  const queries: number[] = [];
  for (let i = 0; i < Number(process.env.BENCH_METRICS_FRESH ?? 10); i++) {
    await new Promise((r) => setTimeout(r, 1100)); // past the 1 s snapshot cache
    const t = performance.now();
    const text = await (await fetch(metricsUrl)).text();
    fresh.push(performance.now() - t);
    queries.push(sumOf(parse(text), 'workroom_metrics_scrape_queries_duration_seconds') * 1000);
  }
  const cached: number[] = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    await (await fetch(metricsUrl)).text();
    cached.push(performance.now() - t);
  }
  const last = await scrape();
  const names = new Set(
    [...last.keys()].map((k) => k.replace(/\{.*$/, '').replace(/_(bucket|sum|count)$/, '')),
  );
  const missing = documented.filter((n) => !names.has(n));
  const moved = documented.filter((n) => {
    const a = sumOf(first, n) + sumOf(first, `${n}_count`);
    const b = sumOf(last, n) + sumOf(last, `${n}_count`);
    return a !== b;
  });
  console.log(
    `\nGET /metrics at ${BOTS} bots, ${queued} deliveries queued (${pgUrl ? 'PostgreSQL' : 'SQLite'}), load ${load1()}`,
  );
  console.log(
    `  fresh (snapshot read): median ${median(fresh).toFixed(2)} ms, max ${Math.max(...fresh).toFixed(2)} ms; ` +
      `its query ${median(queries).toFixed(2)} ms`,
  );
  console.log(`  cached: median ${median(cached).toFixed(2)} ms; ${last.size} series; goal < 5 ms`);
  console.log(
    `  catalogue: ${documented.length} metrics, missing: ${missing.length ? missing.join(', ') : 'none'}`,
  );
  console.log(`  moved by this traffic: ${moved.length} (${moved.join(', ')})`);
  console.log(`  not moved: ${documented.filter((n) => !moved.includes(n)).join(', ')}`);
  if (missing.length > 0) process.exitCode = 1;
} finally {
  await wr.stop();
  receiver.close();
}
