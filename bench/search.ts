/**
 * Search at scale (issue 13), on SQLite and — with BENCH_PG_URL, or the local
 * postgres://postgres@127.0.0.1:5432/test when it answers — on PostgreSQL, in one run:
 *
 * 1. A corpus of BENCH_SEARCH_MESSAGES messages (default 1,000,000) in 5 channels, loaded straight
 *    into the database (not through HTTP): generated text with a Zipf-like word distribution
 *    (about 177 characters a message) and planted words of known frequency.
 * 2. Search latency p50/p99 through GET /api/search (a bot that reaches all 5 channels) for a rare
 *    word (10 messages), a missing word, a common word, a two-word query and a phrase.
 *    Goal: p99 ≤ 25 ms on SQLite, ≤ 50 ms on PostgreSQL.
 * 3. GET /api/health and POST a message, sequential, alone and while another client searches missing
 *    words in a loop, in alternating rounds. Goal: p99 within 2× of the run without searching.
 * 4. The size of the index next to the table's.
 * 5. POST throughput on fresh databases with the index against without it, in alternating pairs
 *    (median and spread of the ratios), and the server's CPU time per POST. Goal: ≥ 0.85×.
 *
 * Every figure carries the machine's 1-minute load average when it was taken (`load`): on a shared
 * machine the absolute latencies are mostly waiting for a CPU.
 *
 * Run: npx tsx bench/search.ts   (or npm run bench -- search). Environment:
 * - BENCH_SEARCH_MESSAGES=200000 for a quicker run; BENCH_SEARCH_SAMPLES searches per query (500);
 * - BENCH_SEARCH_ONLY=sqlite|postgresql runs one side;
 * - BENCH_SEARCH_PHASES=latency,interference,throughput (default all) chooses what to measure;
 * - BENCH_SEARCH_KEEP=<dir> keeps the loaded corpus there (PostgreSQL: in a schema named in
 *   <dir>/postgresql/bench.json) and reuses it on the next run, to measure again without loading;
 * - BENCH_SEARCH_PAIRS throughput pairs (default 5), BENCH_DURATION_MS each run's length.
 * The server runs from source through tsx (no build needed).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Pool } from 'undici';
import { indexPendingMessages } from '../server/src/storage/migrations/0007_search_index_at_commit.js';
import { BENCH_ADMIN, freePort, load, ROOT, seed, spawnServer, type LoadResult } from './lib.js';

const N = Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_SEARCH_SAMPLES ?? 500);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const KEEP = process.env.BENCH_SEARCH_KEEP;
const APP_NAME = `wr_bench_search_${process.pid}`;
const PAIRS = Number(process.env.BENCH_SEARCH_PAIRS ?? 5);
const PHASES = new Set(
  (process.env.BENCH_SEARCH_PHASES ?? 'latency,interference,throughput').split(',').map((s) => s.trim()),
);

/** The 1-minute load average now, for the figure being printed. */
const load1 = () => loadavg()[0]!.toFixed(1);

// --- the corpus ---

/** Small, seeded PRNG (mulberry32): the same corpus on every run and both databases. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STOP =
  'the of and to a in is it you that he was for on are with as i his they be at one have this from'.split(
    ' ',
  );
const SYLLABLES = 'ka ro mi te su na lo pe vi da ze bu fo ga hi ju ke la mo ni po ra si tu ve wa yo'.split(
  ' ',
);

/** A vocabulary: common English words first, then made-up words; rank r drawn with weight 1/r. */
function vocabulary(size: number, random: () => number): { words: string[]; cdf: Float64Array } {
  const words = [...STOP];
  const seen = new Set(words);
  while (words.length < size) {
    let w = '';
    const n = 2 + Math.floor(random() * 3);
    for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  const cdf = new Float64Array(size);
  let sum = 0;
  for (let r = 0; r < size; r++) cdf[r] = sum += 1 / (r + 1);
  for (let r = 0; r < size; r++) cdf[r]! /= sum;
  return { words, cdf };
}

function pick(cdf: Float64Array, x: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Planted words: how many messages have each (spread evenly through the history). */
const PLANTED = { rare: 'raretoken', kilo: 'kilotoken', phrase: 'quarterly revenue forecast' };
const RARE_COUNT = 10;
const KILO_COUNT = 1000;
const PHRASE_COUNT = 1000;

interface Row {
  id: string;
  channel: number;
  content: string;
  created_at: string;
}

const hex8_4 = (ms: number) => {
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}`;
};

/** Yields the corpus in batches, oldest first: ids and times increase together, like real ones. */
const VOCABULARY = vocabulary(30_000, rng(7));

function* corpus(batch: number): Generator<Row[]> {
  const random = rng(13);
  const { words, cdf } = VOCABULARY;
  const start = Date.now() - 365 * 86_400_000;
  const step = (365 * 86_400_000) / N;
  let rows: Row[] = [];
  for (let i = 0; i < N; i++) {
    const len = 10 + Math.floor(random() * 37); // 10–46 words: ~177 characters on average
    const ws: string[] = [];
    for (let j = 0; j < len; j++) ws.push(words[pick(cdf, random())]!);
    if (i % Math.floor(N / RARE_COUNT) === 7) ws.splice(3, 0, PLANTED.rare);
    if (i % Math.floor(N / KILO_COUNT) === 11) ws.splice(2, 0, PLANTED.kilo);
    if (i % Math.floor(N / PHRASE_COUNT) === 13) ws.splice(4, 0, PLANTED.phrase);
    ws[0] = ws[0]![0]!.toUpperCase() + ws[0]!.slice(1);
    const t = start + i * step;
    rows.push({
      // Laid out as the server's UUIDv7 ids (time first), so that they sort among them by time.
      id: `${hex8_4(Math.floor(t))}-7000-8000-${i.toString(16).padStart(12, '0')}`,
      channel: i % 5,
      content: `${ws.join(' ')}.`,
      created_at: new Date(t).toISOString(),
    });
    if (rows.length === batch) {
      yield rows;
      rows = [];
    }
  }
  if (rows.length) yield rows;
}

// --- servers ---

interface Running {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startServer(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  return spawnServer(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'server/src/main.ts')],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
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
}

/** What a loaded corpus needs to be searched again (kept in <dir>/bench.json with BENCH_SEARCH_KEEP). */
interface Loaded {
  messages: number;
  channels: string[];
  botKey: string;
  schema?: string;
}

/** One database under test: how to start a server on it, load rows into it, and drop its index. */
interface Target {
  name: string;
  env: Record<string, string>;
  dir: string;
  /** Loads the corpus with the server stopped (SQLite) or running (PostgreSQL). */
  loadCorpus(orgId: string, channels: string[], botId: string): Promise<number>;
  sizes(): Promise<string>;
  /** Deletes the latency probes an earlier run posted (the corpus is then as loaded). */
  deleteProbes(): Promise<number>;
  /** PostgreSQL: CPU time so far of the backends serving the server under test (ms). */
  backendsCpuMs?(): Promise<number>;
  dropIndex(): Promise<void>;
  cleanup(): Promise<void>;
  serverStoppedForLoad: boolean;
}

/** A fresh directory, or with `keep` that directory (created if missing, kept afterwards). */
function dirFor(keep: string | undefined, prefix: string): string {
  if (!keep) return mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(keep, { recursive: true });
  return keep;
}

function sqliteTarget(keep?: string): Target {
  const dir = dirFor(keep, 'wr-bench-search-');
  const file = join(dir, 'workroom.db');
  return {
    name: 'SQLite',
    dir,
    env: { WORKROOM_DATA_DIR: dir },
    serverStoppedForLoad: true,
    async loadCorpus(orgId, channels, botId) {
      const db = new BetterSqlite3(file);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = OFF');
      const insert = db.prepare(
        `insert into messages (id, org_id, channel_id, sender_type, sender_id, bot_id, content, created_at)
         values (?, ?, ?, 'bot', ?, ?, ?, ?)`,
      );
      const t0 = performance.now();
      // The triggers note each row as pending; they are indexed at the end of each batch's transaction
      // (what the server does before a commit, migration 0007).
      const indexPending = indexPendingMessages(db);
      const run = db.transaction((rows: Row[]) => {
        for (const r of rows)
          insert.run(r.id, orgId, channels[r.channel], botId, botId, r.content, r.created_at);
        indexPending?.(true);
      });
      let n = 0;
      for (const rows of corpus(50_000)) {
        run(rows);
        n += rows.length;
        if (n % 200_000 === 0) console.log(`  loaded ${n}`);
      }
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      return performance.now() - t0;
    },
    async sizes() {
      const db = new BetterSqlite3(file, { readonly: true });
      const rows = db.prepare(`select name, sum(pgsize) as bytes from dbstat group by name`).all() as {
        name: string;
        bytes: number;
      }[];
      db.close();
      const of = (p: (n: string) => boolean) =>
        rows.filter((r) => p(r.name)).reduce((s, r) => s + r.bytes, 0);
      const table = of((n) => n === 'messages');
      const indexes = of((n) => n.startsWith('messages_') && !n.startsWith('messages_fts'));
      const fts = of((n) => n.startsWith('messages_fts'));
      return `messages table ${mb(table)}, its b-tree indexes ${mb(indexes)}, FTS5 index ${mb(fts)} (${(fts / table).toFixed(2)}× the table)`;
    },
    async deleteProbes() {
      const db = new BetterSqlite3(file);
      const n = db.prepare(`delete from messages where content like 'latency probe %'`).run().changes;
      db.close();
      return n;
    },
    async dropIndex() {
      const db = new BetterSqlite3(file);
      for (const t of ['insert', 'update', 'delete']) db.exec(`drop trigger messages_fts_${t}`);
      db.exec('drop table messages_fts');
      db.exec('drop table if exists messages_fts_pending');
      db.close();
    },
    async cleanup() {
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function pgTarget(keep?: string): Target {
  const dir = dirFor(keep, 'wr-bench-search-pg-');
  const kept = keep && existsSync(join(dir, 'bench.json')) ? readLoaded(dir) : undefined;
  const schema = kept?.schema ?? `wr_bench_search_${process.pid}`;
  const client = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    try {
      await c.query(`set search_path = "${schema}"`);
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    name: 'PostgreSQL',
    dir,
    env: {
      WORKROOM_DATA_DIR: dir,
      // Named, so that its backends can be found in pg_stat_activity (their CPU time).
      DATABASE_URL: `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${APP_NAME}`,
      WORKROOM_DATABASE_SCHEMA: schema,
    },
    backendsCpuMs: () =>
      client(async (c) => {
        const r = await c.query<{ pid: number }>(
          'select pid from pg_stat_activity where application_name = $1',
          [APP_NAME],
        );
        // Backends that ended meanwhile are not counted: the pools keep theirs open.
        return r.rows.reduce((sum, { pid }) => sum + (cpuMs(pid) || 0), 0);
      }),
    serverStoppedForLoad: false,
    loadCorpus: (orgId, channels, botId) =>
      client(async (c) => {
        const t0 = performance.now();
        // As on a database indexed afterwards by the migration: rows first, then the GIN index.
        await c.query('drop index messages_search');
        let n = 0;
        for (const rows of corpus(20_000)) {
          await c.query(
            `insert into messages (id, org_id, channel_id, sender_type, sender_id, bot_id, content, created_at)
             select id, $1, ch, 'bot', $2, $2, content, created_at
             from unnest($3::text[], $4::text[], $5::text[], $6::text[]) as r(id, ch, content, created_at)`,
            [
              orgId,
              botId,
              rows.map((r) => r.id),
              rows.map((r) => channels[r.channel]),
              rows.map((r) => r.content),
              rows.map((r) => r.created_at),
            ],
          );
          n += rows.length;
          if (n % 200_000 === 0) console.log(`  loaded ${n}`);
        }
        const t1 = performance.now();
        await c.query(
          'create index messages_search on messages using gin (search_vector) where deleted_at is null',
        );
        console.log(`  GIN index built in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
        await c.query('vacuum analyze messages');
        return performance.now() - t0;
      }),
    sizes: () =>
      client(async (c) => {
        const r = await c.query(`select pg_relation_size('messages') as heap,
            pg_table_size('messages') as total,
            pg_relation_size('messages_search') as gin,
            (select sum(pg_column_size(search_vector)) from messages) as vectors,
            pg_indexes_size('messages') - pg_relation_size('messages_search') as others`);
        const [heap, total, gin, vectors, others] = ['heap', 'total', 'gin', 'vectors', 'others'].map((k) =>
          Number(r.rows[0][k]),
        );
        return (
          `messages table ${mb(total!)} (heap ${mb(heap!)}, of which tsvector column ${mb(vectors!)}; the rest TOAST and maps), ` +
          `its b-tree indexes ${mb(others!)}, GIN index ${mb(gin!)} (GIN + column: ${((gin! + vectors!) / (total! - vectors!)).toFixed(2)}× the rest of the table)`
        );
      }),
    deleteProbes: () =>
      client(async (c) => {
        const r = await c.query(`delete from messages where content like 'latency probe %'`);
        if (r.rowCount) await c.query('vacuum analyze messages');
        return r.rowCount ?? 0;
      }),
    dropIndex: () =>
      client(async (c) => {
        await c.query('drop index messages_search');
        await c.query('alter table messages drop column search_vector');
      }),
    async cleanup() {
      if (keep) return;
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`drop schema if exists "${schema}" cascade`);
      await c.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readLoaded(dir: string): Loaded {
  return JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8')) as Loaded;
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;

// --- measuring ---

function percentiles(lat: number[]): { p50: number; p99: number } {
  const s = [...lat].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Sequential requests on one connection: the latency of each, and the first answer's message count. */
async function timeRequests(
  url: string,
  count: number,
  req: (i: number) => { method: 'GET' | 'POST'; path: string; body?: string },
  headers: Record<string, string>,
): Promise<{ lat: number[]; found?: number }> {
  const pool = new Pool(url, { connections: 1 });
  const lat: number[] = [];
  let found: number | undefined;
  try {
    for (let i = -Math.min(20, count); i < count; i++) {
      const r = req(Math.abs(i));
      const t0 = performance.now();
      const res = await pool.request({ ...r, headers: { 'content-type': 'application/json', ...headers } });
      const text = await res.body.text();
      if (res.statusCode >= 300)
        throw new Error(`${r.method} ${r.path} → ${res.statusCode} ${text.slice(0, 300)}`);
      if (i >= 0) lat.push(performance.now() - t0);
      if (i === 0 && r.path.startsWith('/api/search'))
        found = (JSON.parse(text) as { messages: unknown[] }).messages.length;
    }
  } finally {
    await pool.close();
  }
  return { lat, ...(found !== undefined && { found }) };
}

/** Two words of middling frequency (ranks 100 and 300: each in roughly 1 message out of 60 and 200). */
const TWO = `${VOCABULARY.words[100]} ${VOCABULARY.words[300]}`;
const searchPath = (query: string) => `/api/search?type=messages&limit=10&query=${encodeURIComponent(query)}`;
const missing = (i: number) => `nosuchword${i.toString(36).replace(/\d/g, (d) => 'qwxzjvkyhf'[+d]!)}`;

/**
 * A client searching missing words in a loop, one at a time, in a child process; `stop` ends it and
 * resolves to the number of searches it made.
 */
function startSearchLoop(
  url: string,
  authorization: string,
  from: number,
): { started: Promise<void>; stop(): Promise<number> } {
  const script = `
    const [url, authorization, from] = process.argv.slice(1);
    const missing = ${missing.toString()};
    const searchPath = ${searchPath.toString()};
    let n = 0, on = true;
    process.on('SIGTERM', () => { on = false; });
    (async () => {
      process.stdout.write('started\\n');
      for (let i = Number(from); on; i++) {
        const res = await fetch(url + searchPath(missing(i)), { headers: { authorization } });
        await res.text();
        n++;
      }
      process.stdout.write('searches ' + n + '\\n');
    })();`;
  const child = spawn(process.execPath, ['-e', script, url, authorization, String(from)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const started = new Promise<void>((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('started')) resolve();
    }),
  );
  return {
    started,
    stop: () =>
      new Promise<number>((resolve) => {
        child.once('exit', () => resolve(Number(/searches (\d+)/.exec(out)?.[1] ?? 0)));
        child.kill('SIGTERM');
      }),
  };
}

/** Starts a server on a loaded corpus: loads it first unless BENCH_SEARCH_KEEP has it already. */
async function prepare(t: Target): Promise<{ srv: Running; loaded: Loaded }> {
  const state = join(t.dir, 'bench.json');
  if (KEEP && existsSync(state)) {
    const loaded = readLoaded(t.dir);
    const probes = await t.deleteProbes();
    console.log(
      `  reusing the ${loaded.messages.toLocaleString('en')} messages kept in ${t.dir} (${probes} latency probes of earlier runs deleted)`,
    );
    return { srv: await startServer(t.env), loaded };
  }
  let srv = await startServer(t.env);
  const s = await seed(srv.url);
  const token = s.token;
  const channels = [s.channelId];
  for (let i = 1; i < 5; i++) {
    const c = (await (
      await fetch(`${srv.url}/api/channels`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ name: `bench-search-${i}-${Date.now()}` }),
      })
    ).json()) as { id: string };
    await fetch(`${srv.url}/api/channels/${c.id}/members`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ bot_id: s.botId }),
    });
    channels.push(c.id);
  }
  const meRes = await fetch(`${srv.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
  const me = (await meRes.json()) as { org_id: string };
  if (t.serverStoppedForLoad) await srv.stop();
  const loadMs = await t.loadCorpus(me.org_id, channels, s.botId);
  console.log(`  corpus loaded and indexed in ${(loadMs / 1000).toFixed(0)} s (load ${load1()})`);
  if (t.serverStoppedForLoad) srv = await startServer(t.env);
  const loaded: Loaded = {
    messages: N,
    channels,
    botKey: s.botKey,
    ...(t.env.WORKROOM_DATABASE_SCHEMA && { schema: t.env.WORKROOM_DATABASE_SCHEMA }),
  };
  if (KEEP) writeFileSync(state, JSON.stringify(loaded));
  return { srv, loaded };
}

async function measure(t: Target): Promise<string[]> {
  const out: string[] = [];
  console.log(`\n## ${t.name}: ${N.toLocaleString('en')} messages`);
  const { srv, loaded } = await prepare(t);
  const { channels } = loaded;
  const size = loaded.messages.toLocaleString('en');
  const bot = { authorization: `Bearer ${loaded.botKey}` };
  // CPU time of the server's process (its worker threads included) and, on PostgreSQL, of the
  // database's backends serving it: the cost of a request, much less noisy than its latency on a
  // shared machine.
  const cpu = async () => ({ server: cpuMs(srv.pid), db: t.backendsCpuMs ? await t.backendsCpuMs() : 0 });
  // What the server spends when nobody asks anything (outbox and scheduler polls…), per millisecond:
  // taken off each query's CPU time.
  await new Promise((r) => setTimeout(r, 1000)); // the start's own work done
  const idleStart = { cpu: await cpu(), at: performance.now() };
  await new Promise((r) => setTimeout(r, 3000));
  const idleEnd = await cpu();
  const idleMs = performance.now() - idleStart.at;
  const idlePerMs = {
    server: (idleEnd.server - idleStart.cpu.server) / idleMs,
    db: (idleEnd.db - idleStart.cpu.db) / idleMs,
  };
  console.log(
    `  idle CPU: server ${(idlePerMs.server * 1000).toFixed(0)} ms a second, database ${(idlePerMs.db * 1000).toFixed(0)}`,
  );

  if (PHASES.has('latency')) {
    const queries: [string, (i: number) => string][] = [
      [`rare word (${RARE_COUNT} messages)`, () => PLANTED.rare],
      ['missing word', (i) => missing(i)],
      [`word in ${KILO_COUNT} messages`, () => PLANTED.kilo],
      ['common word ("the", in most messages; also a prefix)', () => 'the'],
      // The last word is also a prefix (search while typing): beyond the 2- and 3-character prefix
      // indexes, every word it begins is read.
      ['frequent 4-letter word ("have", ~10% of messages; also a prefix)', () => 'have'],
      [`two words ("${TWO}")`, () => TWO],
      // Between rare and common: the most work for an index that cannot hand out matches newest first.
      [`word in ~2,400 messages ("${VOCABULARY.words[1000]}")`, () => VOCABULARY.words[1000]!],
      [`word in ~8,300 messages ("${VOCABULARY.words[300]}")`, () => VOCABULARY.words[300]!],
      [`phrase ("${PLANTED.phrase}", ${PHRASE_COUNT} messages)`, () => `"${PLANTED.phrase}"`],
    ];
    out.push(
      `| ${t.name} search (${size} messages) | p50 ms | p99 ms | results | CPU ms a search${t.backendsCpuMs ? ' (server + PostgreSQL)' : ''} | load |`,
      '|---|---|---|---|---|---|',
    );
    for (const [name, q] of queries) {
      const c0 = await cpu();
      const t0 = performance.now();
      const r = await timeRequests(srv.url, SAMPLES, (i) => ({ method: 'GET', path: searchPath(q(i)) }), bot);
      const elapsed = performance.now() - t0;
      const c1 = await cpu();
      const per = (k: 'server' | 'db') => (c1[k] - c0[k] - elapsed * idlePerMs[k]) / (r.lat.length + 20); // 20 warm-up requests
      const c = t.backendsCpuMs
        ? `${(per('server') + per('db')).toFixed(2)} (${per('server').toFixed(2)} + ${per('db').toFixed(2)})`
        : per('server').toFixed(2);
      const p = percentiles(r.lat);
      out.push(`| ${name} | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | ${r.found} | ${c} | ${load1()} |`);
      console.log(`  ${out.at(-1)}`);
    }
    out.push('');
  }

  if (PHASES.has('interference')) {
    // Health and POST latency, alone and next to a client searching missing words in a loop, in
    // alternating rounds (so that a change of the machine's load meets both alike).
    const post = (i: number) => ({
      method: 'POST' as const,
      path: `/api/channels/${channels[0]}/messages`,
      body: JSON.stringify({ content: `latency probe ${i}` }),
    });
    const health = () => ({ method: 'GET' as const, path: '/api/health' });
    const probes = { health: { req: health, n: 1000 }, post: { req: post, n: 500 } };
    const lat = {
      quiet: { health: [] as number[], post: [] as number[] },
      busy: { health: [] as number[], post: [] as number[] },
    };
    const roundRatios = { health: [] as number[], post: [] as number[] };
    const loads: string[] = [];
    let searches = 0;
    for (let round = 0; round < 3; round++) {
      const quiet = {
        health: (await timeRequests(srv.url, probes.health.n, probes.health.req, bot)).lat,
        post: (await timeRequests(srv.url, probes.post.n, probes.post.req, bot)).lat,
      };
      // The search loop runs in a process of its own, so that its answers never delay the probes'
      // (this process's event loop times them).
      const searcher = startSearchLoop(srv.url, bot.authorization, 100_000 * (round + 1));
      await searcher.started;
      const busy = {
        health: (await timeRequests(srv.url, probes.health.n, probes.health.req, bot)).lat,
        post: (await timeRequests(srv.url, probes.post.n, probes.post.req, bot)).lat,
      };
      searches += await searcher.stop();
      loads.push(load1());
      for (const k of ['health', 'post'] as const) {
        lat.quiet[k].push(...quiet[k]);
        lat.busy[k].push(...busy[k]);
        roundRatios[k].push(percentiles(busy[k]).p99 / percentiles(quiet[k]).p99);
      }
    }
    out.push(
      `| ${t.name} latency, 3 rounds | alone p50 / p99 ms | next to a missing-word search loop p50 / p99 ms | p99 ratio (rounds) | load |`,
      '|---|---|---|---|---|',
    );
    for (const k of ['health', 'post'] as const) {
      const q = percentiles(lat.quiet[k]);
      const b = percentiles(lat.busy[k]);
      out.push(
        `| ${k === 'health' ? 'GET /api/health' : 'POST a message'} | ${q.p50.toFixed(1)} / ${q.p99.toFixed(1)} | ${b.p50.toFixed(1)} / ${b.p99.toFixed(1)} | ${(b.p99 / q.p99).toFixed(2)} (${roundRatios[k].map((r) => r.toFixed(2)).join(', ')}) | ${loads.join(', ')} |`,
      );
      console.log(`  ${out.at(-1)}`);
    }
    out.push(`(the search loop ran ${searches} searches meanwhile)`, '');
  }
  out.push(`Size: ${await t.sizes()}`);
  await srv.stop();
  return out;
}

/** CPU time (user + system) the process has used so far, in milliseconds (Linux /proc). */
function cpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (100 Hz)
  } catch {
    return NaN;
  }
}

/**
 * POST throughput on fresh databases, one with the index and one without (triggers/column dropped),
 * both running, measured in PAIRS alternating runs; the median ratio and its spread, and the server's
 * CPU time per POST (on SQLite the whole write path, index included, runs in the server's process).
 */
async function postThroughput(make: () => Target): Promise<string> {
  const sides: { t: Target; srv: Running; s: Awaited<ReturnType<typeof seed>> }[] = [];
  for (const withIndex of [true, false]) {
    const t = make();
    let srv = await startServer(t.env);
    if (!withIndex) {
      if (t.serverStoppedForLoad) await srv.stop();
      await t.dropIndex();
      if (t.serverStoppedForLoad) srv = await startServer(t.env);
    }
    sides.push({ t, srv, s: await seed(srv.url) });
  }
  const runs: { with: LoadResult; without: LoadResult; cpu: [number, number]; load: string }[] = [];
  try {
    for (let i = 0; i < PAIRS; i++) {
      const pair: LoadResult[] = [];
      const cpu: number[] = [];
      // Alternate which side goes first, so that neither always meets the same moment of the machine.
      const order = i % 2 ? [1, 0] : [0, 1];
      for (const k of order) {
        const { srv, s } = sides[k]!;
        const c0 = cpuMs(srv.pid);
        const r = await load({
          url: srv.url,
          method: 'POST',
          path: () => `/api/channels/${s.channelId}/messages`,
          headers: { authorization: `Bearer ${s.botKey}` },
          body: (n) =>
            JSON.stringify({ content: `Benchmark message number ${n} with a little **markdown** and café` }),
          durationMs: Number(process.env.BENCH_DURATION_MS ?? 3000),
        });
        pair[k] = r;
        cpu[k] = (cpuMs(srv.pid) - c0) / r.requests;
      }
      runs.push({ with: pair[0]!, without: pair[1]!, cpu: [cpu[0]!, cpu[1]!], load: load1() });
    }
  } finally {
    for (const { t, srv } of sides) {
      await srv.stop();
      await t.cleanup();
    }
  }
  const ratios = runs.map((r) => r.with.rps / r.without.rps);
  const cpuRatios = runs.map((r) => r.cpu[1] / r.cpu[0]);
  const name = sides[0]!.t.name;
  const cpu =
    name === 'SQLite'
      ? `${(median(runs.map((r) => r.cpu[0])) * 1000).toFixed(0)} / ${(median(runs.map((r) => r.cpu[1])) * 1000).toFixed(0)} µs (${median(cpuRatios).toFixed(2)}×)`
      : 'n/a (the index work is in PostgreSQL)';
  return (
    `| ${name} POST /api/channels/{id}/messages, ${PAIRS} pairs | ${median(runs.map((r) => r.with.rps)).toFixed(0)} | ` +
    `${median(runs.map((r) => r.without.rps)).toFixed(0)} | ${median(ratios).toFixed(2)} ` +
    `(${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}; ${ratios.map((r) => r.toFixed(2)).join(', ')}) | ` +
    `${cpu} | ${runs.map((r) => r.load).join(', ')} |`
  );
}

async function pgAvailable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

const only = process.env.BENCH_SEARCH_ONLY; // 'sqlite' or 'postgresql', to run one side
const makers: { make: (keep?: string) => Target; key: string }[] = [];
if (only !== 'postgresql') makers.push({ make: sqliteTarget, key: 'sqlite' });
if (only !== 'sqlite') {
  if (await pgAvailable()) makers.push({ make: pgTarget, key: 'postgresql' });
  else console.log(`(no PostgreSQL at ${PG_URL}: SQLite only)`);
}
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(', ')}`,
);
const lines: string[] = [];
if (PHASES.has('latency') || PHASES.has('interference'))
  for (const { make, key } of makers) {
    const t = make(KEEP && join(KEEP, key));
    try {
      lines.push(...(await measure(t)), '');
    } finally {
      await t.cleanup();
    }
  }
if (PHASES.has('throughput')) {
  lines.push(
    '| POST throughput (fresh databases) | with index req/s (median) | without req/s (median) | ratio: median (min–max; each pair) | server CPU a POST with / without | load |',
    '|---|---|---|---|---|---|',
  );
  for (const { make } of makers) {
    lines.push(await postThroughput(() => make()));
    console.log(`  ${lines.at(-1)}`);
  }
}
console.log(`\n${lines.join('\n')}`);
