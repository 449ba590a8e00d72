/**
 * Throughput of 1, 2 and 3 Workroom instances on one PostgreSQL behind Debian's HAProxy (round-robin, the
 * configuration docs/SCALING.md documents), posting messages as a bot (issue 18: "expect little gain on
 * two cores; show where the time goes"). Each row gives the requests a second through the balancer, the
 * ratio to one instance, and the CPU time per request of the instances together and of PostgreSQL's
 * backends (every `postgres` process of the machine: run it on an otherwise quiet machine).
 *
 * Run: BENCH_PG_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/cluster-throughput.ts
 * (npm run build first; HAProxy: apt-get install haproxy). BENCH_INSTANCES=1,2,3 picks the counts.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { startHaproxy } from '../server/test/helpers/haproxy.js';
import { cpuMsOf, fmt, load, seed, startWorkroom, type LoadResult } from './lib.js';

const pgUrl = process.env.BENCH_PG_URL;
if (!pgUrl) {
  console.error('BENCH_PG_URL must name a PostgreSQL database');
  process.exit(2);
}
const counts = (process.env.BENCH_INSTANCES ?? '1,2,3').split(',').map(Number);

/** CPU time (ms) of every process named `postgres` on the machine (its backends and helpers). */
function postgresCpuMs(): number {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMsOf(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

const content = (i: number) => JSON.stringify({ content: `Benchmark message number ${i} on a cluster.` });
const rows: { n: number; r: LoadResult }[] = [];

for (const n of counts) {
  const schema = `wr_bench_cluster_${process.pid}_${n}`;
  const env = {
    DATABASE_URL: pgUrl,
    WORKROOM_DATABASE_SCHEMA: schema,
    WORKROOM_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  // The first instance sets the database up; the others join it.
  const first = await startWorkroom(env);
  const rest = await Promise.all(Array.from({ length: n - 1 }, () => startWorkroom(env)));
  const instances = [first, ...rest];
  const lb = await startHaproxy(
    instances.map((s, i) => ({ name: `i${i}`, port: Number(new URL(s.url).port) })),
  );
  const s = await seed(lb.url);
  const r = await load({
    url: lb.url,
    pid: instances.map((i) => i.pid),
    otherCpu: postgresCpuMs,
    method: 'POST',
    path: () => `/api/channels/${s.channelId}/messages`,
    headers: { authorization: `Bearer ${s.botKey}` },
    body: content,
  });
  rows.push({ n, r });
  await lb.stop();
  await Promise.all(instances.map((i) => i.stop()));
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

console.log('\nPOST a message (bot) through HAProxy, N instances on one PostgreSQL');
const one = rows[0]!.r.rps;
for (const { n, r } of rows) {
  console.log(
    `  ${String(n)} instance${n === 1 ? ' ' : 's'}  ${fmt(r)}  ratio ${(r.rps / one).toFixed(2)}  ` +
      `postgres ${((r.otherCpuMsPerRequest ?? NaN) * 1000).toFixed(0)} µs/req`,
  );
}
