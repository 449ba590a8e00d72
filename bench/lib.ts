/**
 * Benchmark toolkit: start servers as child processes (so the load generator in this process and the
 * server each get a core), drive them with a keep-alive undici pool for a fixed time, and print
 * throughputs with the ratio against the reference measured in the same run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Pool } from 'undici';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface ServerProcess {
  url: string;
  /** The server's process id (for reading its memory from /proc). */
  pid: number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// Servers started by this process are killed when it exits, also when a bench script throws.
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

/** Spawns a process and waits until `ready()` answers true (polling), or the process dies. */
export async function spawnServer(
  command: string,
  args: string[],
  env: Record<string, string>,
  ready: (url: string) => Promise<boolean>,
  port: number,
): Promise<ServerProcess> {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: ROOT,
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${command} exited with ${child.exitCode}: ${out.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${command} did not become ready: ${out.slice(-2000)}`);
    if (await ready(url).catch(() => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/** The same-run reference: bare node:http + JSON parse + one better-sqlite3 insert. */
export async function startReference(mode: 'rest' | 'jsonrpc'): Promise<ServerProcess> {
  const port = await freePort();
  return spawnServer(
    process.execPath,
    [join(ROOT, 'bench/reference-server.mjs')],
    { MODE: mode, PORT: String(port) },
    async (url) => (await fetch(url, { method: 'POST', body: '{}' })).status > 0,
    port,
  );
}

/**
 * The PostgreSQL reference: bare node:http + JSON parse + one prepared insert on a pg pool of 10, in a
 * schema of its own on `databaseUrl` (dropped by stop()).
 */
export async function startPgReference(databaseUrl: string): Promise<ServerProcess> {
  const port = await freePort();
  const schema = `wr_ref_${process.pid}_${port}`;
  const srv = await spawnServer(
    process.execPath,
    [join(ROOT, 'bench/reference-server-pg.mjs')],
    { DATABASE_URL: databaseUrl, REF_SCHEMA: schema, PORT: String(port) },
    async (url) => (await fetch(url, { method: 'POST', body: '{}' })).status > 0,
    port,
  );
  return {
    ...srv,
    async stop() {
      await srv.stop();
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}

export const BENCH_ADMIN = { email: 'bench@workroom.local', password: 'bench-password-1' };

/**
 * Workroom itself, built (`npm run build` first; `npm run bench` does it) and run as in production,
 * on a fresh SQLite database, logs at warn, rate limits off.
 */
export async function startWorkroom(
  env: Record<string, string> = {},
): Promise<ServerProcess & { dataDir: string; schema: string | undefined }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'wr-bench-'));
  // On PostgreSQL (env DATABASE_URL): a schema of its own, dropped afterwards.
  // A schema given in env (several instances on one database) is left for the caller to drop.
  const given = env.WORKROOM_DATABASE_SCHEMA;
  const schema = env.DATABASE_URL && !given ? `wr_bench_${process.pid}_${port}` : undefined;
  if (schema) env = { ...env, WORKROOM_DATABASE_SCHEMA: schema };
  const srv = await spawnServer(
    process.execPath,
    // BENCH_SERVER_NODE_ARGS: extra Node.js flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`.
    [
      ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      join(ROOT, 'server/dist/main.js'),
    ],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_DATA_DIR: dataDir,
      WORKROOM_LOG_LEVEL: 'warn',
      WORKROOM_ADMIN_EMAIL: BENCH_ADMIN.email,
      WORKROOM_ADMIN_PASSWORD: BENCH_ADMIN.password,
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
      ...env,
    },
    async (url) => (await fetch(`${url}/api/health`)).ok,
    port,
  );
  return {
    ...srv,
    dataDir,
    schema,
    async stop() {
      await srv.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (schema) {
        const client = new pg.Client({ connectionString: env.DATABASE_URL });
        await client.connect();
        await client.query(`drop schema if exists "${schema}" cascade`);
        await client.end();
      }
    },
  };
}

/**
 * Warm-up of a server's first measured row (each other row: 1 s). A server just started is still
 * tiering its code and finishing its start-up work: measured 2026-11-28, the MCP legacy send row, first
 * after Workroom's start, gave 4,794-5,850 req/s with 1 s of warm-up and 6,391 req/s when measured again
 * at the end of the same run. Every server (the references, Workroom, the SDK server) gets the same.
 */
export const FIRST_ROW_WARMUP_MS = 3000;

export interface LoadOptions {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path for request number i. */
  path: (i: number) => string;
  headers?: Record<string, string>;
  /** Body for request number i (JSON text); several: used in turn (request i gets body i mod n). */
  body?: ((i: number) => string) | ((i: number) => string)[];
  connections?: number;
  durationMs?: number;
  /** Load before the measured run (default 1 s); a server's first row takes FIRST_ROW_WARMUP_MS. */
  warmupMs?: number;
  /** Status that counts as success; default 2xx. */
  ok?: (status: number) => boolean;
  /** The server's process id (or several): their CPU time during the measured run is reported per request. */
  pid?: number | number[];
  /** Another CPU clock (ms) read around the measured run, reported per request as `otherCpuMsPerRequest`. */
  otherCpu?: () => number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50ms: number;
  p99ms: number;
  /** The server's CPU time (user + system) per successful request, when `pid` was given. */
  cpuMsPerRequest?: number;
  /** `otherCpu`'s time per successful request, when given. */
  otherCpuMsPerRequest?: number;
}

/** A process's CPU time so far in ms (user + system, from /proc; Linux only), or NaN. */
export function cpuMsOf(pid: number | number[] | undefined): number {
  if (pid === undefined) return NaN;
  if (Array.isArray(pid)) return pid.reduce((sum, p) => sum + cpuMsOf(p), 0);
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at state; utime and stime are
    // fields 14 and 15, in clock ticks (100 per second on Linux).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Closed-loop load with `connections` concurrent requests. Uses wrk (a C load generator: apt-get
 * install wrk) when it is installed, so that the client costs little CPU next to the server under
 * test; otherwise an undici pool in this process. BENCH_CLIENT=undici forces the latter.
 */
export async function load(o: LoadOptions): Promise<LoadResult> {
  if (process.env.BENCH_CLIENT !== 'undici' && hasWrk()) return loadWrk(o);
  return loadUndici(o);
}

let wrkAvailable: boolean | undefined;
function hasWrk(): boolean {
  wrkAvailable ??= spawnSync('wrk', ['--version']).error === undefined;
  return wrkAvailable;
}

const SENTINEL = 987654321;
const lua = (s: string) => JSON.stringify(s); // a JSON string is a valid Lua string literal here

const bodiesOf = (o: LoadOptions) => (o.body === undefined ? [] : Array.isArray(o.body) ? o.body : [o.body]);

async function loadWrk(o: LoadOptions): Promise<LoadResult> {
  const bodies = bodiesOf(o);
  const dir = mkdtempSync(join(tmpdir(), 'wr-wrk-'));
  const headers = { 'content-type': 'application/json', ...o.headers };
  const script = [
    `wrk.method = ${lua(o.method)}`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
    'local i = 0',
    'request = function()',
    '  i = i + 1',
    // Request number i: every occurrence of the sentinel number is replaced by i (string.gsub, so
    // that the sentinel may appear several times, e.g. as JSON-RPC id and in the content).
    `  local path = string.gsub(${lua(o.path(SENTINEL))}, "${SENTINEL}", tostring(i))`,
    bodies.length > 0
      ? `  local bodies = { ${bodies.map((b) => lua(b(SENTINEL))).join(', ')} }\n` +
        `  local body = string.gsub(bodies[(i % ${bodies.length}) + 1], "${SENTINEL}", tostring(i))\n` +
        '  return wrk.format(nil, path, nil, body)'
      : '  return wrk.format(nil, path)',
    'end',
  ].join('\n');
  writeFileSync(join(dir, 'load.lua'), script);
  const run = (seconds: number) =>
    spawnSync(
      'wrk',
      ['-t1', `-c${o.connections ?? 32}`, `-d${seconds}s`, '--latency', '-s', join(dir, 'load.lua'), o.url],
      { encoding: 'utf8' },
    );
  run(Math.max(1, Math.round((o.warmupMs ?? 1000) / 1000)));
  const cpu0 = cpuMsOf(o.pid);
  const other0 = o.otherCpu?.() ?? NaN;
  const r = run(
    Math.max(1, Math.round((o.durationMs ?? Number(process.env.BENCH_DURATION_MS ?? 5000)) / 1000)),
  );
  rmSync(dir, { recursive: true, force: true });
  const out = r.stdout;
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
  const ms = (re: RegExp) => {
    const m = re.exec(out);
    if (!m) return NaN;
    const v = Number(m[1]);
    return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
  };
  const total = num(/(\d+) requests in/);
  const non2xx = num(/Non-2xx or 3xx responses: (\d+)/) || 0;
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  const rps = num(/Requests\/sec:\s+([\d.]+)/) * (total > 0 ? (total - non2xx) / total : 1);
  if (non2xx > 0) console.error(`  wrk: ${non2xx} non-2xx responses`);
  const cpuMs = cpuMsOf(o.pid) - cpu0;
  const otherMs = (o.otherCpu?.() ?? NaN) - other0;
  return {
    requests: total - non2xx,
    errors,
    rps,
    cpuMsPerRequest: o.pid === undefined ? undefined : cpuMs / Math.max(1, total - non2xx),
    otherCpuMsPerRequest: o.otherCpu === undefined ? undefined : otherMs / Math.max(1, total - non2xx),
    p50ms: ms(/50%\s+([\d.]+)(us|ms|s)/),
    p99ms: ms(/99%\s+([\d.]+)(us|ms|s)/),
  };
}

async function loadUndici(o: LoadOptions): Promise<LoadResult> {
  const bodies = bodiesOf(o);
  const connections = o.connections ?? 32;
  const pool = new Pool(o.url, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...o.headers };
  const ok = o.ok ?? ((s: number) => s >= 200 && s < 300);
  let i = 0;
  let firstError: string | undefined;
  const run = async (until: number, record: boolean, lat: number[], counts: { n: number; e: number }) => {
    while (performance.now() < until) {
      const n = i++;
      const t0 = performance.now();
      try {
        const body = bodies.length > 0 ? bodies[n % bodies.length]!(n) : undefined;
        const res = await pool.request({ method: o.method, path: o.path(n), headers, body });
        const text = await res.body.text();
        if (record) {
          if (ok(res.statusCode)) counts.n++;
          else {
            counts.e++;
            firstError ??= `${res.statusCode} ${text.slice(0, 300)}`;
          }
        }
      } catch (err) {
        if (record) {
          counts.e++;
          firstError ??= String(err);
        }
      }
      if (record) lat.push(performance.now() - t0);
    }
  };
  const warm = { n: 0, e: 0 };
  await Promise.all(
    Array.from({ length: connections }, () => run(performance.now() + (o.warmupMs ?? 1000), false, [], warm)),
  );
  const lat: number[] = [];
  const counts = { n: 0, e: 0 };
  const cpu0 = cpuMsOf(o.pid);
  const other0 = o.otherCpu?.() ?? NaN;
  const t0 = performance.now();
  const duration = o.durationMs ?? Number(process.env.BENCH_DURATION_MS ?? 5000);
  await Promise.all(Array.from({ length: connections }, () => run(t0 + duration, true, lat, counts)));
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? 0;
  if (firstError) console.error(`  first error: ${firstError}`);
  const cpuMs = cpuMsOf(o.pid) - cpu0;
  const otherMs = (o.otherCpu?.() ?? NaN) - other0;
  return {
    requests: counts.n,
    errors: counts.e,
    rps: counts.n / elapsed,
    p50ms: pct(0.5),
    p99ms: pct(0.99),
    cpuMsPerRequest: o.pid === undefined ? undefined : cpuMs / Math.max(1, counts.n),
    otherCpuMsPerRequest: o.otherCpu === undefined ? undefined : otherMs / Math.max(1, counts.n),
  };
}

export function fmt(r: LoadResult): string {
  const cpu = r.cpuMsPerRequest === undefined ? '' : `  cpu ${(r.cpuMsPerRequest * 1000).toFixed(0)} µs/req`;
  return `${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms  errors ${r.errors}${cpu}`;
}

/** Prints one comparison table: every row's throughput and its ratio to the first (the reference). */
export function report(title: string, rows: [string, LoadResult][]): void {
  const ref = rows[0]![1];
  console.log(`\n${title}`);
  for (const [name, r] of rows) {
    const cpuRatio =
      r.cpuMsPerRequest && ref.cpuMsPerRequest
        ? `  cpu ratio ${(ref.cpuMsPerRequest / r.cpuMsPerRequest).toFixed(2)}`
        : '';
    console.log(`  ${name.padEnd(44)} ${fmt(r)}  ratio ${(r.rps / ref.rps).toFixed(2)}${cpuRatio}`);
  }
}

// --- setting up data through the public API ---

export async function api<T = any>(
  url: string,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Admin token, a channel, and a bot (member of the channel) with an all-scopes key. */
export async function seed(
  url: string,
): Promise<{ token: string; channelId: string; botId: string; botKey: string }> {
  const { token } = await api<{ token: string }>(url, 'POST', '/api/auth/login', undefined, BENCH_ADMIN);
  const channel = await api<{ id: string }>(url, 'POST', '/api/channels', token, {
    name: `bench-${Date.now()}`,
  });
  const bot = await api<{ bot_id: string }>(url, 'POST', '/api/bots', token, { name: 'bench-bot' });
  const key = await api<{ key: string }>(url, 'POST', `/api/bots/${bot.bot_id}/api-keys`, token, {});
  await api(url, 'POST', `/api/channels/${channel.id}/members`, token, { bot_id: bot.bot_id });
  return { token, channelId: channel.id, botId: bot.bot_id, botKey: key.key };
}

/**
 * The CPU time (ms) of the PostgreSQL backends whose connections carry `application_name` = `appName`
 * (set PGAPPNAME in a server's environment; pg reads it), looked up with psql on each call: PostgreSQL's
 * CPU per request for one server even while other work shares the database. For LoadOptions.otherCpu.
 */
export function pgBackendCpu(databaseUrl: string, appName: string): () => number {
  // A backend that exits between two calls (a pool closing an idle connection) keeps its last reading.
  const last = new Map<number, number>();
  return () => {
    const r = spawnSync(
      'psql',
      [databaseUrl, '-Atc', `select pid from pg_stat_activity where application_name = '${appName}'`],
      { encoding: 'utf8' },
    );
    for (const pid of r.stdout.split('\n').filter(Boolean).map(Number)) {
      const ms = cpuMsOf(pid);
      if (!Number.isNaN(ms)) last.set(pid, ms);
    }
    return [...last.values()].reduce((a, b) => a + b, 0);
  };
}
