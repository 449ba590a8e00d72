/**
 * Throughput of the blob stores (docs/SCALING.md, "Files"): a 20 MB file uploaded and downloaded over
 * HTTP through a real server (a child process, so this process's client and the server each get a
 * core), once with WORKROOM_BLOB_STORE=disk and once with =database, on the database of the run:
 * SQLite, or PostgreSQL when DATABASE_URL is set. Each store takes BENCH_BLOB_ROUNDS turns (default 5,
 * alternating with the other store, so that a noisy neighbour hits both); the median MB/s is printed,
 * with the local disk's own write and read speed of the same bytes as a reference.
 *
 * Run: npx tsx bench/blob-store.ts     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/blob-store.ts
 * (BENCH_BLOB_MB changes the size.)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BENCH_ADMIN, freePort, ROOT, spawnServer, type ServerProcess } from './lib.js';

const MB = Number(process.env.BENCH_BLOB_MB ?? 20);
const ROUNDS = Number(process.env.BENCH_BLOB_ROUNDS ?? 5);
const pgUrl = process.env.DATABASE_URL;

type Store = 'disk' | 'database';

async function start(store: Store): Promise<ServerProcess & { token: string; channel: string }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'wr-bench-blob-'));
  const schema = pgUrl ? `wr_bench_blob_${process.pid}_${port}` : undefined;
  const srv = await spawnServer(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'server/src/main.ts')],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_DATA_DIR: dataDir,
      WORKROOM_LOG_LEVEL: 'warn',
      WORKROOM_ADMIN_EMAIL: BENCH_ADMIN.email,
      WORKROOM_ADMIN_PASSWORD: BENCH_ADMIN.password,
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
      WORKROOM_METRICS_PORT: '0',
      WORKROOM_BLOB_STORE: store,
      WORKROOM_MAX_UPLOAD_BYTES: String((MB + 1) * 1_048_576),
      ...(pgUrl && schema ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema } : {}),
    },
    async (url) => (await fetch(`${url}/api/health`)).ok,
    port,
  );
  const login = await fetch(`${srv.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BENCH_ADMIN),
  });
  const { token } = (await login.json()) as { token: string };
  const ch = await fetch(`${srv.url}/api/channels`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: `bench-${store}` }),
  });
  const { id: channel } = (await ch.json()) as { id: string };
  return {
    ...srv,
    token,
    channel,
    async stop() {
      await srv.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (schema) {
        const c = new pg.Client({ connectionString: pgUrl });
        await c.connect();
        await c.query(`drop schema if exists "${schema}" cascade`);
        await c.end();
      }
    },
  };
}

async function upload(
  s: { url: string; token: string; channel: string },
  data: Blob,
): Promise<[string, number]> {
  const form = new FormData();
  form.append('file', data, 'bench.bin');
  const t = performance.now();
  const res = await fetch(`${s.url}/api/channels/${s.channel}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}` },
    body: form,
  });
  const body = (await res.json()) as { id: string };
  if (res.status !== 201) throw new Error(`upload: ${res.status} ${JSON.stringify(body)}`);
  return [body.id, performance.now() - t];
}

async function download(s: { url: string; token: string }, id: string, size: number): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${s.url}/api/files/${id}`, { headers: { authorization: `Bearer ${s.token}` } });
  let n = 0;
  for await (const chunk of res.body!) n += (chunk as Uint8Array).length;
  if (n !== size) throw new Error(`download: ${n} bytes of ${size}`);
  return performance.now() - t;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mbps = (ms: number) => MB / (ms / 1000);

async function main(): Promise<void> {
  const bytes = randomBytes(MB * 1_048_576);
  const blob = new Blob([new Uint8Array(bytes)]);
  // The reference: this machine's disk, the same bytes written (and fsynced by close) and read back.
  const dir = mkdtempSync(join(tmpdir(), 'wr-bench-blob-ref-'));
  const ref = { write: [] as number[], read: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    let t = performance.now();
    writeFileSync(join(dir, `f${i}`), bytes, { flush: true });
    ref.write.push(performance.now() - t);
    t = performance.now();
    readFileSync(join(dir, `f${i}`));
    ref.read.push(performance.now() - t);
  }
  rmSync(dir, { recursive: true, force: true });

  const stores: Store[] = ['disk', 'database'];
  const servers = Object.fromEntries(
    await Promise.all(stores.map(async (s) => [s, await start(s)] as const)),
  );
  const up: Record<Store, number[]> = { disk: [], database: [] };
  const down: Record<Store, number[]> = { disk: [], database: [] };
  try {
    for (let i = 0; i < ROUNDS + 1; i++)
      for (const s of i % 2 ? [...stores].reverse() : stores) {
        const [id, ms] = await upload(servers[s]!, blob);
        const dms = await download(servers[s]!, id, bytes.length);
        if (i === 0) continue; // warm-up
        up[s].push(ms);
        down[s].push(dms);
      }
  } finally {
    for (const s of stores) await servers[s]!.stop();
  }
  const db = pgUrl ? 'PostgreSQL' : 'SQLite';
  console.log(
    `Blob stores on ${db}: a ${MB} MB file over HTTP, median of ${ROUNDS} (load ${loadavg()[0]!.toFixed(2)})`,
  );
  console.log(
    `  reference (local disk, fs):   write ${mbps(median(ref.write)).toFixed(0)} MB/s, read ${mbps(median(ref.read)).toFixed(0)} MB/s`,
  );
  for (const s of stores)
    console.log(
      `  ${s.padEnd(9)} upload ${mbps(median(up[s])).toFixed(0).padStart(5)} MB/s (${median(up[s]).toFixed(0)} ms)` +
        `   download ${mbps(median(down[s])).toFixed(0).padStart(5)} MB/s (${median(down[s]).toFixed(0)} ms)`,
    );
  console.log(
    `  database/disk: upload ${(median(up.disk) / median(up.database)).toFixed(2)}x, download ${(median(down.disk) / median(down.database)).toFixed(2)}x`,
  );
}

await main();
