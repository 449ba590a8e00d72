/**
 * The cost of agent grants on the hot path (issue 21): MCP tools/call send_message and read_messages
 * in a legacy 2025-03-26 session and as modern 2026-07-28 stateless requests, with a key that has no
 * grants and with one that has every kind (tools, containers, a write budget, mentions_all: false),
 * measured in turn on one server (A B B A, so that drift over the run falls on both). Goal: with grants
 * ≥ 0.95× without.
 */
import { readFileSync } from 'node:fs';
import { api, load, report, seed, startWorkroom, type LoadResult } from './lib.js';

/** CPU time the server process has used (user + system, all threads), in ms, from /proc. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks (100/s).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const ACCEPT = 'application/json, text/event-stream';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};

const wr = await startWorkroom();
const s = await seed(wr.url);
const granted = await api<{ key: string }>(wr.url, 'POST', `/api/bots/${s.botId}/api-keys`, s.token, {
  grants: {
    tools: ['send_message', 'read_messages', 'list_channels'],
    containers: [s.channelId],
    writes_per_hour: 1_000_000,
    mentions_all: false,
  },
});

async function session(key: string): Promise<Record<string, string>> {
  const h = { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${key}` };
  const res = await fetch(`${wr.url}/api/mcp`, {
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
  const sid = res.headers.get('mcp-session-id')!;
  const sh = { ...h, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' };
  await fetch(`${wr.url}/api/mcp`, {
    method: 'POST',
    headers: sh,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.text());
  return sh;
}

const args = (tool: string, i: number) =>
  tool === 'send_message'
    ? { channel_id: s.channelId, content: `Benchmark message number ${i} with a little **markdown**.` }
    : { channel_id: s.channelId, limit: 20 };
const legacyBody = (tool: string) => (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: tool, arguments: args(tool, i) },
  });
const modernBody = (tool: string) => (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: tool, arguments: args(tool, i), _meta: META },
  });
const modernHeaders = (key: string, tool: string) => ({
  accept: ACCEPT,
  authorization: `Bearer ${key}`,
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': tool,
});

/** A successful call: HTTP 200 with a result that is not an error (checked on a sample first). */
async function check(headers: Record<string, string>, body: string): Promise<void> {
  const r: any = await (
    await fetch(`${wr.url}/api/mcp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body,
    })
  ).json();
  if (!r.result || r.result.isError) throw new Error(`answered ${JSON.stringify(r)}`);
}

const keys = { plain: s.botKey, granted: granted.key };
const sessions = { plain: await session(keys.plain), granted: await session(keys.granted) };
const results = new Map<string, LoadResult[]>();
/** Server CPU ms and requests per row: CPU per request hardly depends on what else the machine runs. */
const cpu = new Map<string, { ms: number; requests: number }>();
async function run(label: string, who: 'plain' | 'granted', tool: string, modern: boolean): Promise<void> {
  const headers = modern ? modernHeaders(keys[who], tool) : sessions[who];
  const body = modern ? modernBody(tool) : legacyBody(tool);
  await check(headers, body(0));
  const c0 = cpuMs(wr.pid);
  const r = await load({
    url: wr.url,
    method: 'POST',
    path: () => '/api/mcp',
    headers,
    body,
    ok: (st) => st === 200,
  });
  const c = cpu.get(label) ?? { ms: 0, requests: 0 };
  cpu.set(label, { ms: c.ms + cpuMs(wr.pid) - c0, requests: c.requests + r.requests });
  results.set(label, [...(results.get(label) ?? []), r]);
}

// BENCH_GRANTS_ONLY: only the rows whose name contains it (e.g. "2026-07-28 send").
// BENCH_GRANTS_ROUNDS: rounds of A B B A per row (default 3); the machine's noise between runs is
// larger than the cost measured, so each round gives a ratio and the median of them is reported.
const only = process.env.BENCH_GRANTS_ONLY;
const rounds = Number(process.env.BENCH_GRANTS_ROUNDS ?? 3);
const ratios = new Map<string, number[]>();
for (const modern of [false, true]) {
  for (const tool of ['send_message', 'read_messages']) {
    const base = `${modern ? '2026-07-28' : '2025-03-26'} ${tool}`;
    if (only && !base.includes(only)) continue;
    for (let r = 0; r < rounds; r++) {
      const n = results.get(`${base}, no grants`)?.length ?? 0;
      await run(`${base}, no grants`, 'plain', tool, modern);
      await run(`${base}, grants`, 'granted', tool, modern);
      await run(`${base}, grants`, 'granted', tool, modern);
      await run(`${base}, no grants`, 'plain', tool, modern);
      const sum = (label: string) =>
        results
          .get(label)!
          .slice(n)
          .reduce((a, x) => a + x.rps, 0);
      ratios.set(base, [...(ratios.get(base) ?? []), sum(`${base}, grants`) / sum(`${base}, no grants`)]);
    }
  }
}
await wr.stop();

/** The two runs of a row as one: requests and time added. */
const merged = (rs: LoadResult[]): LoadResult => ({
  ...rs[0]!,
  rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
});
const rows = [...results].map(([name, rs]) => [name, merged(rs)] as [string, LoadResult]);
for (const [name, rs] of results)
  console.log(`  ${name}: runs ${rs.map((r) => Math.round(r.rps)).join(', ')} req/s`);
report('MCP tools/call with and without key grants (SQLite)', rows);
console.log('');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const perCall = (label: string) => (cpu.get(label)!.ms * 1000) / cpu.get(label)!.requests;
for (const [base, rs] of ratios) {
  const none = perCall(`${base}, no grants`);
  const granted = perCall(`${base}, grants`);
  console.log(
    `  ${base.padEnd(28)} server CPU per call: ${none.toFixed(0)} µs without grants, ${granted.toFixed(0)} µs with (${(none / granted).toFixed(3)}× the calls per CPU second)`,
  );
  console.log(
    `  ${base.padEnd(28)} grants ÷ none: median ${median(rs).toFixed(3)}× of rounds ${rs.map((x) => x.toFixed(2)).join(', ')}  (goal ≥ 0.95×)`,
  );
}
