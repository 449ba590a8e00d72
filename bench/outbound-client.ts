/**
 * The outbound client's cost per call (server/src/outbound/client.ts), against `node:http`'s client,
 * which it used before 2026-11-28: signed-webhook-sized POSTs to a receiver in another process, 64 at a
 * time, and the CPU time of this process per call (what a delivery costs the server's event loop in
 * its HTTP client). Rows alternate, three rounds each.
 *
 *   npx tsx bench/outbound-client.ts            (BENCH_OUTBOUND_CALLS: calls per row, default 20000)
 */
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'node:http';
import { OutboundClient } from '../server/src/outbound/client.js';
import { freePort } from './lib.js';

const CALLS = Number(process.env.BENCH_OUTBOUND_CALLS ?? 20_000);
const CONCURRENCY = 64;

const RECEIVER = `
const http = require('node:http');
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try { JSON.parse(Buffer.concat(chunks).toString()); } catch {}
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

const port = await freePort();
const receiver = spawn(process.execPath, ['-e', RECEIVER, String(port)], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((r) => receiver.stdout!.once('data', r));
const url = `http://127.0.0.1:${port}/bot/1`;

// A message.created delivery's size and headers.
const body = JSON.stringify({
  event_type: 'message.created',
  timestamp: new Date().toISOString(),
  bot_id: 'bot_0123456789abcdef',
  data: { id: 'msg_0123456789abcdef', channel_id: 'ch_0123', content: 'x'.repeat(200) },
  event_id: 'evt_0123456789abcdef',
  signature: `sha256=${'a'.repeat(64)}`,
});
const headers = {
  'content-type': 'application/json',
  'user-agent': 'Workroom-Webhooks/1.0',
  'webhook-id': 'whd_0123456789abcdef',
  'webhook-timestamp': '1790000000',
  'webhook-signature': `v1,${'b'.repeat(44)}`,
  'x-workroom-signature': `sha256=${'c'.repeat(64)}`,
};

const agent = new Agent({ keepAlive: true, maxFreeSockets: 64 });
const nodeHttp = () =>
  new Promise<void>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
const client = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 10_000 });
const ac = new AbortController();
setMaxListeners(CONCURRENCY * 2, ac.signal);
const outbound = async () => {
  await client.post(url, body, headers, { signal: ac.signal });
};

async function row(name: string, call: () => Promise<void>): Promise<number> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < CALLS) await call();
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const perCall = (cpu.user + cpu.system) / CALLS;
  console.log(
    `  ${name.padEnd(36)} ${(CALLS / seconds).toFixed(0).padStart(6)} calls/s  CPU ${perCall.toFixed(0)} µs/call`,
  );
  return perCall;
}

console.log(`Outbound client, ${CALLS} calls per row, ${CONCURRENCY} at a time`);
await row('warm-up (node:http)', nodeHttp);
await row('warm-up (OutboundClient)', outbound);
const ratios: number[] = [];
for (let i = 0; i < 3; i++) {
  const ref = await row('node:http request', nodeHttp);
  const ours = await row('OutboundClient (undici dispatch)', outbound);
  ratios.push(ours / ref);
}
console.log(`  CPU per call, OutboundClient / node:http: ${ratios.map((r) => r.toFixed(2)).join(', ')}`);
client.close();
agent.destroy();
receiver.kill('SIGKILL');
