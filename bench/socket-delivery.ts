/**
 * Socket delivery (docs/SOCKET.md) against webhook delivery, in the same run on the same server:
 *  1. deliveries per second: N messages × 50 subscribed bots, once to 50 webhooks (a local receiver
 *     process answering 200 at once), once to 50 bot sockets (a client process acking every event at
 *     once). Both at equal durability: every attempt is recorded in the delivery log before the row is
 *     done. Goal: socket ≥ 2× webhook.
 *  2. memory per idle socket: a server's heap and buffers (after a full GC) before and after 1,000 bots
 *     each open a socket and stay idle (no events). Goal ≤ 20 KB a socket.
 * The receiver and the socket clients are separate processes (neither side's CPU counts for the other).
 * With BENCH_PG_URL set, Workroom runs on that PostgreSQL; otherwise on SQLite. The machine's load
 * average is printed with the results: on a shared machine, compare only figures taken at a similar load.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { startApp } from '../server/src/app.js';
import { loadConfig } from '../server/src/config/config.js';
import { api, BENCH_ADMIN, freePort, seed, startWorkroom } from './lib.js';

const BOTS = 50;
const MESSAGES = Number(process.env.BENCH_SOCKET_MESSAGES ?? 200);
const IDLE = Number(process.env.BENCH_SOCKET_IDLE ?? 1000);
const load1 = () => loadavg()[0]!.toFixed(2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- the webhook receiver: counts requests ---
const RECEIVER = `
const http = require('node:http');
let n = 0, last = 0;
http.createServer((req, res) => {
  if (req.method === 'GET') { res.end(JSON.stringify([n, last])); if (req.url === '/reset') n = 0; return; }
  req.on('data', () => {});
  req.on('end', () => { n++; last = Date.now(); res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok'); });
}).listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

// --- the socket clients: one socket per key (given on IPC), ack every event at once, count ---
const CLIENTS = `
const WebSocket = require('ws');
let n = 0, last = 0, open = 0;
const all = [];
process.on('message', (m) => {
  if (m.connect) {
    for (const key of m.connect) {
      const ws = new WebSocket(m.url, { headers: { authorization: 'Bearer ' + key }, perMessageDeflate: false });
      all.push(ws);
      ws.on('message', (raw) => {
        const f = JSON.parse(raw.toString());
        if (f.type === 'ready') { open++; return; }
        if (f.type !== 'event') return;
        n++; last = Date.now();
        ws.send(JSON.stringify({ type: 'ack', delivery_id: f.delivery_id }));
      });
      ws.on('error', (e) => console.error('socket error', e.message));
    }
  }
  if (m.close) { for (const ws of all.splice(0)) ws.terminate(); open = 0; }
  if (m.count) process.send({ n, last, open });
  if (m.reset) n = 0;
});
process.send({ ready: true });
`;

async function startReceiver() {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', RECEIVER, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async count(reset = false): Promise<[number, number]> {
      return (await (await fetch(`${url}/${reset ? 'reset' : 'count'}`)).json()) as [number, number];
    },
    stop: () => child.kill('SIGKILL'),
  };
}

async function startClients() {
  const child: ChildProcess = spawn(process.execPath, ['-e', CLIENTS], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve) => child.once('message', () => resolve()));
  const ask = (m: Record<string, unknown>) =>
    new Promise<{ n: number; last: number; open: number }>((resolve) => {
      child.once('message', (r) => resolve(r as { n: number; last: number; open: number }));
      child.send({ ...m, count: true });
    });
  return { ask, stop: () => child.kill('SIGKILL') };
}

/**
 * The memory of IDLE idle bot sockets: a server in this process (so that its heap can be measured
 * after a full garbage collection), the sockets opened by the client process, one per bot; the
 * difference in heap and buffers (`heapUsed + external`) before and after, per socket. (The kernel's
 * socket buffers are not the process's memory.)
 */
async function idleMemory(): Promise<string> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const dataDir = mkdtempSync(join(tmpdir(), 'wr-bench-sock-'));
  const app = await startApp(
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      WORKROOM_DATA_DIR: dataDir,
      WORKROOM_LOG_LEVEL: 'warn',
      WORKROOM_ADMIN_EMAIL: BENCH_ADMIN.email,
      WORKROOM_ADMIN_PASSWORD: BENCH_ADMIN.password,
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
      WORKROOM_METRICS_PORT: '0',
      WORKROOM_QUOTA_BOTS_PER_ORG: String(IDLE + 10),
      WORKROOM_QUOTA_BOTS_PER_MEMBER: String(IDLE + 10),
      WORKROOM_MAX_CONNECTIONS: String(IDLE + 100),
    }),
    { metricsPort: null },
  );
  try {
    const { token } = await api<{ token: string }>(
      app.url,
      'POST',
      '/api/auth/login',
      undefined,
      BENCH_ADMIN,
    );
    const keys: string[] = [];
    for (let i = 0; i < IDLE; i++) {
      const b = await api<{ bot_id: string }>(app.url, 'POST', '/api/bots', token, { name: `idle-${i}` });
      keys.push(
        (await api<{ key: string }>(app.url, 'POST', `/api/bots/${b.bot_id}/api-keys`, token, {})).key,
      );
    }
    const measure = async () => {
      await sleep(500);
      for (let i = 0; i < 3; i++) gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    };
    const before = await measure();
    await clients.ask({ connect: keys, url: `${app.url.replace(/^http/, 'ws')}/api/bots/socket` });
    const deadline = Date.now() + 120_000;
    while ((await clients.ask({})).open < IDLE && Date.now() < deadline) await sleep(100);
    const opened = app.botSockets.size;
    const after = await measure();
    await clients.ask({ close: true });
    return (
      `  memory: ${opened} idle bot sockets, server heap + buffers ${(before / 1048576).toFixed(1)} → ` +
      `${(after / 1048576).toFixed(1)} MB: ${((after - before) / opened / 1024).toFixed(1)} KB a socket (goal ≤ 20)`
    );
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rx = await startReceiver();
const clients = await startClients();
const pgUrl = process.env.BENCH_PG_URL;
const wr = await startWorkroom({
  WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
  WORKROOM_QUOTA_BOTS_PER_ORG: String(2 * BOTS + IDLE + 10),
  WORKROOM_QUOTA_BOTS_PER_MEMBER: String(2 * BOTS + IDLE + 10),
  ...(pgUrl ? { DATABASE_URL: pgUrl } : {}),
});
const socketUrl = `${wr.url.replace(/^http/, 'ws')}/api/bots/socket`;
try {
  const s = await seed(wr.url);
  const makeBots = async (prefix: string, n: number, webhook: boolean, join: boolean) => {
    const out: { id: string; key: string }[] = [];
    for (let i = 0; i < n; i++) {
      const b = await api<{ bot_id: string }>(wr.url, 'POST', '/api/bots', s.token, {
        name: `${prefix}-${i}`,
        events: [],
        ...(webhook && { webhook_url: `${rx.url}/bot/${i}` }),
      });
      if (webhook) await api(wr.url, 'POST', `/api/bots/${b.bot_id}/webhook-secret`, s.token);
      const k = await api<{ key: string }>(wr.url, 'POST', `/api/bots/${b.bot_id}/api-keys`, s.token, {});
      if (join)
        await api(wr.url, 'POST', `/api/channels/${s.channelId}/members`, s.token, { bot_id: b.bot_id });
      out.push({ id: b.bot_id, key: k.key });
    }
    return out;
  };
  const hooked = await makeBots('hook', BOTS, true, true);
  const socketed = await makeBots('sock', BOTS, false, true);
  const subscribe = (events: string[], which: { id: string }[]) =>
    Promise.all(which.map((b) => api(wr.url, 'PATCH', `/api/bots/${b.id}`, s.token, { events })));
  const postAll = async () => {
    for (let i = 0; i < MESSAGES; i += 20)
      await Promise.all(
        Array.from({ length: 20 }, (_, k) =>
          api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, s.token, {
            content: `Socket bench ${i + k}`,
          }),
        ),
      );
  };
  const out: string[] = [
    `\nSocket delivery against webhook delivery (${pgUrl ? 'PostgreSQL' : 'SQLite'}, ${BOTS} bots)`,
  ];
  const print = (line: string) => {
    out.push(line);
    console.error(line);
  };
  const total = MESSAGES * BOTS;

  // 1a. Webhooks.
  let loadBefore = load1();
  await subscribe(['message.created'], hooked);
  let t0 = Date.now();
  await postAll();
  let deadline = Date.now() + 180_000;
  let [n, last] = await rx.count();
  while (n < total && Date.now() < deadline) {
    await sleep(50);
    [n, last] = await rx.count();
  }
  const hookRate = n / ((last - t0) / 1000);
  await subscribe([], hooked);
  print(
    `  webhook deliveries/s: ${hookRate.toFixed(0)} (${n} deliveries)  [load ${loadBefore} → ${load1()}]`,
  );

  // 1b. Sockets (one per bot).
  await sleep(1000);
  loadBefore = load1();
  await clients.ask({ connect: socketed.map((b) => b.key), url: socketUrl });
  while ((await clients.ask({})).open < BOTS) await sleep(50);
  await subscribe(['message.created'], socketed);
  t0 = Date.now();
  await postAll();
  deadline = Date.now() + 180_000;
  let c = await clients.ask({});
  while (c.n < total && Date.now() < deadline) {
    await sleep(50);
    c = await clients.ask({});
  }
  const sockRate = c.n / ((c.last - t0) / 1000);
  await subscribe([], socketed);
  await clients.ask({ close: true });
  print(
    `  socket deliveries/s:  ${sockRate.toFixed(0)} (${c.n} deliveries)  ratio ${(sockRate / hookRate).toFixed(2)} (goal ≥ 2)` +
      `  [load ${loadBefore} → ${load1()}]`,
  );

  // 2. Memory per idle socket: measured in this process (a server of its own, below).
  print(await idleMemory());
  console.log(out.join('\n'));
} finally {
  clients.stop();
  rx.stop();
  await wr.stop();
}
