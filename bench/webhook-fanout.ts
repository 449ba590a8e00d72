/**
 * Webhook fan-out, against same-run references:
 *  1. deliveries per second: Workroom delivering N messages × 50 subscribed bots to a local receiver,
 *     against bare signed POSTs from one Node process to the same receiver (same concurrency). Goal ≥ 0.5×.
 *  2. event-to-first-attempt latency at a steady 200 events/s (one subscribed bot): from the event's
 *     timestamp to its arrival at the receiver. Goal p99 ≤ 100 ms.
 *  3. REST POST throughput with 50 subscribed bots against none (BENCH_FANOUT_PAIRS alternating runs on
 *     fresh servers, default 5; the median ratio). Goal ≥ 0.8×.
 * The receiver is a separate process (so that neither side's CPU is counted for the other). With
 * BENCH_PG_URL set, Workroom runs on that PostgreSQL; otherwise on SQLite. BENCH_FANOUT_PHASES picks
 * phases (comma-separated: deliveries, latency, rest; default all). The machine's load average is
 * printed with the results: on a shared machine, compare only figures taken at a similar load.
 * BENCH_FANOUT_RATE sets the event rate of the latency phase (default 200 a second). On PostgreSQL,
 * BENCH_PG_UNRELATED_TX=1 keeps a transaction open elsewhere in the cluster (it holds a transaction id)
 * during the latency phase, as other applications' transactions do on a shared server.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import pg from 'pg';
import { signDelivery } from '../server/src/outbound/sign.js';
import { api, fmt, freePort, load, seed, startWorkroom, type LoadResult } from './lib.js';

const BOTS = 50;
const MESSAGES = Number(process.env.BENCH_FANOUT_MESSAGES ?? 200);
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const PHASES = new Set((process.env.BENCH_FANOUT_PHASES ?? 'deliveries,latency,rest').split(','));
const load1 = () => loadavg()[0]!.toFixed(2);

// --- the receiver: counts requests per path, keeps arrival times and the envelope timestamp ---
const RECEIVER = `
const http = require('node:http');
let arrivals = [];
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.end(req.url === '/count' ? String(arrivals.length) : JSON.stringify(arrivals));
    if (req.url === '/reset') arrivals = [];
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    let ts = null;
    try { ts = JSON.parse(Buffer.concat(chunks).toString()).timestamp; } catch {}
    arrivals.push([at, ts]);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
server.listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

async function startReceiver(): Promise<{
  url: string;
  count(): Promise<number>;
  arrivals(reset?: boolean): Promise<[number, string | null][]>;
  stop(): void;
}> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', RECEIVER, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async count() {
      return Number(await (await fetch(`${url}/count`)).text());
    },
    async arrivals(reset = false) {
      return (await (await fetch(`${url}/${reset ? 'reset' : 'stats'}`)).json()) as [number, string | null][];
    },
    stop: () => child.kill('SIGKILL'),
  };
}

/** Bare signed POSTs from this process: `total` requests, `concurrency` at a time. */
async function reference(url: string, total: number, concurrency: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  const t0 = performance.now();
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const { body, headers } = signDelivery({
        secret: SECRET,
        webhookId: `ref-${i}`,
        timestampSeconds: Math.floor(Date.now() / 1000),
        envelope: {
          event_type: 'message.created',
          timestamp: new Date().toISOString(),
          bot_id: 'bench',
          data: { content: `Benchmark message number ${i}`, channel_id: 'c', sender_id: 's' },
          event_id: `e-${i}`,
        },
      });
      const req = request(`${url}/ref`, { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await one(next++);
    }),
  );
  const rate = total / ((performance.now() - t0) / 1000);
  agent.destroy();
  return rate;
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const rx = await startReceiver();
const pgUrl = process.env.BENCH_PG_URL;
const wr = await startWorkroom({
  WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
  // 50 bots (+ the seed's) registered by one member: above the default quota of 20.
  WORKROOM_QUOTA_BOTS_PER_MEMBER: String(BOTS + 10),
  ...(pgUrl ? { DATABASE_URL: pgUrl } : {}),
});
try {
  const s = await seed(wr.url);
  const bots: string[] = [];
  for (let i = 0; i < BOTS; i++) {
    const b = await api<{ bot_id: string }>(wr.url, 'POST', '/api/bots', s.token, {
      name: `fanout-${i}`,
      webhook_url: `${rx.url}/bot/${i}`,
      events: [],
    });
    await api(wr.url, 'POST', `/api/bots/${b.bot_id}/webhook-secret`, s.token);
    await api(wr.url, 'POST', `/api/channels/${s.channelId}/members`, s.token, { bot_id: b.bot_id });
    bots.push(b.bot_id);
  }
  const subscribe = (events: string[], which = bots) =>
    Promise.all(which.map((id) => api(wr.url, 'PATCH', `/api/bots/${id}`, s.token, { events })));
  const postMessage = (i: number) =>
    api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, s.token, { content: `Fan-out ${i}` });
  const content = (i: number) =>
    JSON.stringify({ content: `Benchmark message number ${i} with a little **markdown**.` });
  // Waits until the receiver has `n` requests on bot paths (the reference's are not counted).
  const waitForBotArrivals = async (n: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while ((await rx.count()) < n && Date.now() < deadline) await sleep(50);
    return rx.arrivals();
  };

  const out: string[] = [`\nWebhook fan-out (${pgUrl ? 'PostgreSQL' : 'SQLite'}, ${BOTS} bots)`];
  const print = (line: string) => {
    out.push(line);
    console.error(line); // as it comes, for long runs
  };

  // 1. Deliveries per second: MESSAGES × 50 bots.
  if (PHASES.has('deliveries')) {
    const loadBefore = load1();
    // Each side first warms up on a fifth of the work, unmeasured (as FIRST_ROW_WARMUP_MS in lib.ts
    // does for the request benches): a server just started is still compiling its hot paths.
    const warmMessages = Math.max(20, Math.round(MESSAGES / 5 / 20) * 20);
    await reference(rx.url, warmMessages * BOTS, 64);
    const refRate = await reference(rx.url, MESSAGES * BOTS, 64);
    await rx.arrivals(true);
    await subscribe(['message.created']);
    const postAll = async (count: number, first: number) => {
      for (let i = 0; i < count; i += 20)
        await Promise.all(Array.from({ length: 20 }, (_, k) => postMessage(first + i + k)));
    };
    await postAll(warmMessages, MESSAGES);
    await waitForBotArrivals(warmMessages * BOTS, 120_000);
    await rx.arrivals(true);
    const t0 = Date.now();
    await postAll(MESSAGES, 0);
    const got = await waitForBotArrivals(MESSAGES * BOTS, 120_000);
    const last = Math.max(...got.map(([at]) => at));
    const wrRate = got.length / ((last - t0) / 1000);
    await rx.arrivals(true);
    await subscribe([]);
    print(
      `  deliveries/s: reference (bare signed POSTs, 64 at a time) ${refRate.toFixed(0)}, ` +
        `workroom ${wrRate.toFixed(0)} (${got.length} deliveries)  ratio ${(wrRate / refRate).toFixed(2)}` +
        `  [load ${loadBefore} → ${load1()}]`,
    );
  }

  // 2. Latency at a steady 200 events/s to one subscribed bot, for 10 s.
  if (PHASES.has('latency')) {
    const loadBefore = load1();
    let unrelated: pg.Client | undefined;
    if (pgUrl && process.env.BENCH_PG_UNRELATED_TX === '1') {
      unrelated = new pg.Client({ connectionString: pgUrl });
      await unrelated.connect();
      await unrelated.query('begin');
      await unrelated.query('select pg_current_xact_id()');
    }
    await subscribe(['message.created'], [bots[0]!]);
    await sleep(500);
    await rx.arrivals(true);
    const rate = Number(process.env.BENCH_FANOUT_RATE ?? 200);
    const seconds = 10;
    const start = Date.now();
    const inflight: Promise<unknown>[] = [];
    const posts: number[] = [];
    for (let i = 0; i < rate * seconds; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const t = performance.now();
      inflight.push(
        postMessage(i)
          .then(() => posts.push(performance.now() - t))
          .catch(() => undefined),
      );
    }
    await Promise.all(inflight);
    const lat = (await waitForBotArrivals(rate * seconds, 30_000))
      .filter(([, ts]) => ts !== null)
      .map(([at, ts]) => at - Date.parse(ts!))
      .sort((a, b) => a - b);
    posts.sort((a, b) => a - b);
    // Where the time goes: the POST's own answer time, and (PostgreSQL) from the event's timestamp to
    // the start of the fan-out pass that made its delivery row.
    let parts = `POST answered p50 ${pct(posts, 0.5).toFixed(0)} / p99 ${pct(posts, 0.99).toFixed(0)} ms`;
    if (pgUrl && wr.schema) {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      const rows = (
        await c.query<{ ms: number }>(
          `select extract(epoch from (d.created_at::timestamptz - e.created_at::timestamptz)) * 1000 as ms
           from "${wr.schema}".webhook_deliveries d join "${wr.schema}".events e on e.id = d.event_id
           where d.bot_id = $1 and e.type = 'message.created' and e.created_at >= $2`,
          [bots[0], new Date(start).toISOString()],
        )
      ).rows
        .map((r) => Number(r.ms))
        .sort((a, b) => a - b);
      await c.end();
      parts += `; event → fan-out pass p50 ${pct(rows, 0.5).toFixed(0)} / p99 ${pct(rows, 0.99).toFixed(0)} ms`;
    }
    await rx.arrivals(true);
    await subscribe([], [bots[0]!]);
    if (unrelated) {
      await unrelated.query('rollback');
      await unrelated.end();
    }
    print(
      `  event → first attempt at ${rate} events/s${unrelated ? ' (an unrelated transaction open)' : ''}: ` +
        `p50 ${pct(lat, 0.5).toFixed(0)} ms, ` +
        `p99 ${pct(lat, 0.99).toFixed(0)} ms, max ${lat[lat.length - 1]?.toFixed(0)} ms (${lat.length} events)` +
        `  [load ${loadBefore} → ${load1()}]\n    (${parts})`,
    );
  }

  // 3. REST throughput: none subscribed against 50 subscribed, in alternating runs, each on a fresh
  // server (same setup: 50 bots with webhooks in the channel; only the subscription differs), so that
  // one run's delivery backlog never weighs on the next; the median ratio of the pairs is the figure.
  if (PHASES.has('rest')) {
    const pairs = Number(process.env.BENCH_FANOUT_PAIRS ?? 5);
    const loadBefore = load1();
    const runOn = async (subscribed: boolean): Promise<LoadResult> => {
      const fresh = await startWorkroom({
        WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
        WORKROOM_QUOTA_BOTS_PER_MEMBER: String(BOTS + 10),
        ...(pgUrl ? { DATABASE_URL: pgUrl } : {}),
      });
      try {
        const f = await seed(fresh.url);
        for (let i = 0; i < BOTS; i++) {
          const b = await api<{ bot_id: string }>(fresh.url, 'POST', '/api/bots', f.token, {
            name: `fanout-${i}`,
            webhook_url: `${rx.url}/bot/${i}`,
            events: subscribed ? ['message.created'] : [],
          });
          await api(fresh.url, 'POST', `/api/bots/${b.bot_id}/webhook-secret`, f.token);
          await api(fresh.url, 'POST', `/api/channels/${f.channelId}/members`, f.token, { bot_id: b.bot_id });
        }
        await sleep(500);
        return await load({
          url: fresh.url,
          method: 'POST',
          path: () => `/api/channels/${f.channelId}/messages`,
          headers: { authorization: `Bearer ${f.token}` },
          body: content,
        });
      } finally {
        await fresh.stop();
      }
    };
    const ratios: number[] = [];
    const rows: string[] = [];
    for (let i = 0; i < pairs; i++) {
      const none = await runOn(false);
      const with50 = await runOn(true);
      ratios.push(with50.rps / none.rps);
      rows.push(
        `    pair ${i + 1}: none ${fmt(none)} | ${BOTS} subscribed ${fmt(with50)}  ratio ${(with50.rps / none.rps).toFixed(2)}`,
      );
      console.error(rows[rows.length - 1]);
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    print(
      `  REST POST a message, ${BOTS} bots subscribed (message.created) against none, ${pairs} alternating pairs ` +
        `on fresh servers: ratio median ${pct(sorted, 0.5).toFixed(2)} ` +
        `(min ${sorted[0]!.toFixed(2)}, max ${sorted[sorted.length - 1]!.toFixed(2)})  [load ${loadBefore} → ${load1()}]`,
    );
    for (const r of rows) print(r);
  }
  console.log(out.join('\n'));
} finally {
  await wr.stop();
  rx.stop();
}
