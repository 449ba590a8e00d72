/**
 * The PostgreSQL rows of bench/rest-post-message.ts alone (reference, then Workroom user and bot), for
 * profiling the PostgreSQL write path without the SQLite rows before it:
 * `BENCH_PG_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/rest-post-message-pg.ts`.
 * BENCH_SKIP_REFERENCE=1 leaves the reference out (a profile of Workroom only). Each row also gives
 * the CPU of that server's own PostgreSQL backends per request (by application_name, PGAPPNAME).
 */
import {
  FIRST_ROW_WARMUP_MS,
  load,
  pgBackendCpu,
  report,
  seed,
  startPgReference,
  startWorkroom,
  type LoadResult,
} from './lib.js';

const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const content = (i: number) =>
  JSON.stringify({ content: `Benchmark message number ${i} with a little **markdown**.` });

const rows: [string, LoadResult][] = [];
if (!process.env.BENCH_SKIP_REFERENCE) {
  process.env.PGAPPNAME = `wr-bench-ref-${process.pid}`;
  const pgRef = await startPgReference(pgUrl);
  rows.push([
    'reference: node:http + JSON + 1 pg insert (pool 10)',
    await load({
      url: pgRef.url,
      pid: pgRef.pid,
      method: 'POST',
      path: () => '/messages',
      body: content,
      otherCpu: pgBackendCpu(pgUrl, process.env.PGAPPNAME),
      warmupMs: FIRST_ROW_WARMUP_MS,
    }),
  ]);
  await pgRef.stop();
}
const appName = `wr-bench-wr-${process.pid}`;
const wr = await startWorkroom({ DATABASE_URL: pgUrl, PGAPPNAME: appName });
const p = await seed(wr.url);
const as = (token: string, warmupMs?: number) =>
  load({
    warmupMs,
    url: wr.url,
    pid: wr.pid,
    method: 'POST',
    path: () => `/api/channels/${p.channelId}/messages`,
    headers: { authorization: `Bearer ${token}` },
    body: content,
    otherCpu: pgBackendCpu(pgUrl, appName),
  });
rows.push(['workroom POST /api/channels/{id}/messages (user)', await as(p.token, FIRST_ROW_WARMUP_MS)]);
rows.push(['workroom POST /api/channels/{id}/messages (bot)', await as(p.botKey)]);
await wr.stop();
report('POST a message (REST), PostgreSQL', rows);
for (const [name, r] of rows)
  console.log(
    `  ${name.padEnd(50)} postgres backends ${((r.otherCpuMsPerRequest ?? NaN) * 1000).toFixed(0)} µs/req`,
  );
