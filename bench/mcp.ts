/**
 * MCP tools/call send_message and read_messages, in one run, against
 *  (a) the same-run reference: bare node:http JSON-RPC + one better-sqlite3 insert (goal ≥ 0.6×), and
 *  (b) the official SDK's stateful server (McpServer + StreamableHTTPServerTransport) doing the same
 *      insert / select, as it runs by default (SSE answers; goal: Workroom ≥ 2× it) and with
 *      enableJsonResponse (reported too).
 * Every row prints the server's CPU per request (`cpu … µs/req`) and its ratio to the reference's: on a
 * shared machine req/s moves with the load, the CPU a request costs much less (issue 24).
 * BENCH_MCP_SDK=0 skips the SDK server's rows (quicker runs while profiling Workroom).
 * Workroom runs as in production (built, sessions on, SQLite, logs at warn, rate limits off), and is
 * measured twice: a legacy 2025-03-26 session (Mcp-Session-Id), and modern 2026-07-28 stateless
 * requests (no session; `_meta` and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers).
 */
import { join } from 'node:path';
import {
  FIRST_ROW_WARMUP_MS,
  freePort,
  load,
  report,
  ROOT,
  seed,
  spawnServer,
  startReference,
  startWorkroom,
  type LoadResult,
} from './lib.js';

const ACCEPT = 'application/json, text/event-stream';

const call = (name: string, args: Record<string, unknown>) => (i: number) =>
  JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: args } });
const send = (channelId: string) => (i: number) =>
  call('send_message', {
    channel_id: channelId,
    content: `Benchmark message number ${i} with a little **markdown**.`,
  })(i);
const read = (channelId: string) => call('read_messages', { channel_id: channelId, limit: 20 });

/** A modern (2026-07-28) tools/call: the per-request `_meta` and the headers that mirror it. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};
const modernCall = (name: string, args: (i: number) => Record<string, unknown>) => (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name, arguments: args(i), _meta: MODERN_META },
  });
const modernHeaders = (name: string) => ({
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': name,
});

/** initialize + notifications/initialized; returns the session id. */
async function initialize(url: string, headers: Record<string, string>): Promise<string> {
  const h = { 'content-type': 'application/json', accept: ACCEPT, ...headers };
  const res = await fetch(`${url}/api/mcp`, {
    method: 'POST',
    headers: h,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
  });
  await res.text();
  const sid = res.headers.get('mcp-session-id');
  if (!res.ok || !sid) throw new Error(`initialize failed: ${res.status}`);
  await fetch(`${url}/api/mcp`, {
    method: 'POST',
    headers: { ...h, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.text());
  return sid;
}

/** Counts a tools/call as successful only when it answered a result that is not an error. */
const resultOk = (status: number) => status === 200;

// (a) the reference
const ref = await startReference('jsonrpc');
const refSend = await load({
  url: ref.url,
  method: 'POST',
  path: () => '/api/mcp',
  body: send('c'),
  pid: ref.pid,
  warmupMs: FIRST_ROW_WARMUP_MS,
});
await ref.stop();

// Workroom
const wr = await startWorkroom();
const s = await seed(wr.url);
const wrHeaders = { authorization: `Bearer ${s.botKey}`, accept: ACCEPT };
const wrSid = await initialize(wr.url, wrHeaders);
const h = { ...wrHeaders, 'mcp-session-id': wrSid, 'mcp-protocol-version': '2025-03-26' };
// Sanity (before the load, on a fresh connection): a sample answer is a real result, not an error.
const sample: any = await (
  await fetch(`${wr.url}/api/mcp`, {
    method: 'POST',
    headers: { ...h, 'content-type': 'application/json' },
    body: send(s.channelId)(1),
  })
).json();
if (!sample.result || sample.result.isError) throw new Error(`workroom answered ${JSON.stringify(sample)}`);
const wrSend = await load({
  url: wr.url,
  method: 'POST',
  path: () => '/api/mcp',
  headers: h,
  body: send(s.channelId),
  ok: resultOk,
  pid: wr.pid,
  warmupMs: FIRST_ROW_WARMUP_MS,
});
const wrRead = await load({
  url: wr.url,
  method: 'POST',
  path: () => '/api/mcp',
  headers: h,
  body: read(s.channelId),
  ok: resultOk,
  pid: wr.pid,
});
// Half sends, half reads: every read follows a commit, as in a busy channel.
const wrMixed = await load({
  url: wr.url,
  method: 'POST',
  path: () => '/api/mcp',
  headers: h,
  body: [send(s.channelId), read(s.channelId)],
  ok: resultOk,
  pid: wr.pid,
});
// Modern stateless requests: no session at all.
const modernSend = modernCall('send_message', (i) => ({
  channel_id: s.channelId,
  content: `Benchmark message number ${i} with a little **markdown**.`,
}));
const modernRead = modernCall('read_messages', () => ({ channel_id: s.channelId, limit: 20 }));
const modernSample: any = await (
  await fetch(`${wr.url}/api/mcp`, {
    method: 'POST',
    headers: { ...wrHeaders, ...modernHeaders('send_message'), 'content-type': 'application/json' },
    body: modernSend(1),
  })
).json();
if (modernSample.result?.resultType !== 'complete' || modernSample.result.isError)
  throw new Error(`workroom (2026-07-28) answered ${JSON.stringify(modernSample)}`);
const wrModernSend = await load({
  url: wr.url,
  method: 'POST',
  path: () => '/api/mcp',
  headers: { ...wrHeaders, ...modernHeaders('send_message') },
  body: modernSend,
  ok: resultOk,
  pid: wr.pid,
});
const wrModernRead = await load({
  url: wr.url,
  method: 'POST',
  path: () => '/api/mcp',
  headers: { ...wrHeaders, ...modernHeaders('read_messages') },
  body: modernRead,
  ok: resultOk,
  pid: wr.pid,
});
await wr.stop();

// (b) the official SDK server, as it runs by default (answers over SSE), then with JSON answers
async function sdkRun(json: boolean): Promise<[LoadResult, LoadResult]> {
  const port = await freePort();
  const sdk = await spawnServer(
    process.execPath,
    [join(ROOT, 'bench/mcp-sdk-server.mjs')],
    { PORT: String(port), SDK_JSON: json ? '1' : '0' },
    async (url) => (await fetch(`${url}/api/mcp`, { method: 'GET' })).status > 0,
    port,
  );
  const sdkSid = await initialize(sdk.url, { accept: ACCEPT });
  const sh = { accept: ACCEPT, 'mcp-session-id': sdkSid, 'mcp-protocol-version': '2025-03-26' };
  const a = await load({
    url: sdk.url,
    method: 'POST',
    path: () => '/api/mcp',
    headers: sh,
    body: send('c'),
    ok: resultOk,
    pid: sdk.pid,
    warmupMs: FIRST_ROW_WARMUP_MS,
  });
  const b = await load({
    url: sdk.url,
    method: 'POST',
    path: () => '/api/mcp',
    headers: sh,
    body: read('c'),
    ok: resultOk,
    pid: sdk.pid,
  });
  await sdk.stop();
  return [a, b];
}
const withSdk = process.env.BENCH_MCP_SDK !== '0';
const [sdkSend, sdkRead] = withSdk ? await sdkRun(false) : [undefined, undefined];
const [sdkJsonSend, sdkJsonRead] = withSdk ? await sdkRun(true) : [undefined, undefined];

const rows: [string, LoadResult | undefined][] = [
  ['reference: node:http JSON-RPC + 1 insert', refSend],
  ['workroom tools/call send_message', wrSend],
  ['workroom tools/call read_messages', wrRead],
  ['workroom send_message + read_messages, 1:1', wrMixed],
  ['workroom 2026-07-28 stateless send_message', wrModernSend],
  ['workroom 2026-07-28 stateless read_messages', wrModernRead],
  ['official SDK server send_message (SSE)', sdkSend],
  ['official SDK server read_messages (SSE)', sdkRead],
  ['official SDK server send_message (JSON)', sdkJsonSend],
  ['official SDK server read_messages (JSON)', sdkJsonRead],
];
report(
  'MCP tools/call (Streamable HTTP, SQLite)',
  rows.filter((r): r is [string, LoadResult] => r[1] !== undefined),
);
/** Throughput ratio a ÷ b, and the CPU-per-request ratio (b's CPU ÷ a's: above 1, a costs less). */
const vs = (a: LoadResult, b: LoadResult, digits: number) => {
  const cpu =
    a.cpuMsPerRequest && b.cpuMsPerRequest
      ? ` (cpu ${(b.cpuMsPerRequest / a.cpuMsPerRequest).toFixed(digits)}×)`
      : '';
  return `${(a.rps / b.rps).toFixed(digits)}×${cpu}`;
};
console.log(
  `\n  workroom ÷ reference:  send_message ${vs(wrSend, refSend, 2)}, read_messages ${vs(wrRead, refSend, 2)}  (goal ≥ 0.6×)`,
);
console.log(
  `  workroom 2026-07-28 ÷ reference:  send_message ${vs(wrModernSend, refSend, 2)}, read_messages ${vs(wrModernRead, refSend, 2)}  (goal ≥ 0.6×)`,
);
if (sdkSend && sdkRead && sdkJsonSend && sdkJsonRead) {
  console.log(
    `  workroom ÷ SDK server (SSE): send_message ${vs(wrSend, sdkSend, 1)}, read_messages ${vs(wrRead, sdkRead, 1)}  (goal ≥ 2×)`,
  );
  console.log(
    `  workroom 2026-07-28 ÷ SDK server (SSE): send_message ${vs(wrModernSend, sdkSend, 1)}, read_messages ${vs(wrModernRead, sdkRead, 1)}  (goal ≥ 2×)`,
  );
  console.log(
    `  workroom ÷ SDK server with enableJsonResponse: send_message ${vs(wrSend, sdkJsonSend, 1)}, read_messages ${vs(wrRead, sdkJsonRead, 1)}`,
  );
}
