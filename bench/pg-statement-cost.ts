/**
 * PostgreSQL's own CPU per statement of the POST path: starts Workroom on PostgreSQL with the counting
 * preload (bench/pg-count-preload.cjs) recording one sample (SQL + parameters) of every statement,
 * posts a few messages (user and bot), then runs each sampled statement of the request path N times
 * as a named statement on one connection and reads that backend's CPU time from /proc. Writes are
 * repeated with fresh ids (committed, in the bench's schema, dropped afterwards).
 * `BENCH_PG_URL=postgres://… npx tsx bench/pg-statement-cost.ts [N]`
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ROOT, api, cpuMsOf, seed, startWorkroom } from './lib.js';

const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const n = Number(process.argv[2] ?? 2000);
const samples = join(tmpdir(), `pg-samples-${process.pid}.jsonl`);
process.env.BENCH_SERVER_NODE_ARGS = `${process.env.BENCH_SERVER_NODE_ARGS ?? ''} --require ${join(ROOT, 'bench/pg-count-preload.cjs')}`;
const wr = await startWorkroom({ DATABASE_URL: pgUrl, PGCOUNT_SAMPLES: samples });
try {
  const s = await seed(wr.url);
  process.kill(wr.pid, 'SIGUSR2'); // the preload forgets what it has seen: every statement sampled again
  await new Promise((r) => setTimeout(r, 200));
  rmSync(samples, { force: true });
  for (const token of [s.token, s.botKey])
    for (let i = 0; i < 3; i++)
      await api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, token, { content: `sample ${i}` });
  await new Promise((r) => setTimeout(r, 1000));
  const seen = readFileSync(samples, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { text: string; values: unknown[] });
  const client = new pg.Client({ connectionString: pgUrl, options: `-c search_path="${wr.schema}"` });
  await client.connect();
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  // The ids of the sampled messages and events (replaced by fresh ones when a write is repeated).
  const rowIds = new Set(
    (await client.query<{ id: string }>('select id from messages union all select id from events')).rows.map(
      (r) => r.id,
    ),
  );
  const time = async (label: string, text: string, values: unknown[], write: boolean) => {
    const name = `cost_${label.length}_${Math.random().toString(36).slice(2, 8)}`;
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const once = async () => {
      // Fresh ids for a write (the sampled rows exist), the same fresh id for the same sampled one.
      const fresh = new Map<string, string>();
      const v = write
        ? values.map((x) =>
            typeof x === 'string' && UUID.test(x) && (rowIds.has(x) || label.startsWith('reference'))
              ? (fresh.get(x) ?? fresh.set(x, randomUUID()).get(x))
              : x,
          )
        : values;
      await client.query({ name, text, values: v });
    };
    for (let i = 0; i < 50; i++) await once();
    const c0 = cpuMsOf(pid);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await once();
    const us = ((cpuMsOf(pid) - c0) * 1000) / n;
    const wall = ((performance.now() - t0) * 1000) / n;
    console.log(
      `${us.toFixed(0).padStart(6)} µs backend CPU  ${wall.toFixed(0).padStart(5)} µs wall  ${label}`,
    );
  };
  if (process.env.BENCH_SHOW_SCHEMA) {
    const show = async (q: string) =>
      console.log((await client.query(q)).rows.map((r) => Object.values(r).join(' ')).join('\n'));
    await show(
      "select indexdef from pg_indexes where schemaname = current_schema() and tablename in ('messages', 'events')",
    );
    await show('select tgrelid::regclass, tgname from pg_trigger where not tgisinternal');
    await show(
      "select column_name, generation_expression from information_schema.columns where table_schema = current_schema() and table_name in ('messages','events') and is_generated = 'ALWAYS'",
    );
  }
  await time('baseline: select 1', 'select 1', [], false);
  // The reference's insert (bench/reference-server-pg.mjs), on a table like its own.
  await client.query(
    'create table if not exists ref_messages (id text primary key, channel_id text not null, content text not null, created_at text not null)',
  );
  await time(
    'reference insert (bench/reference-server-pg.mjs)',
    'insert into ref_messages (id, channel_id, content, created_at) values ($1, $2, $3, $4)',
    [randomUUID(), 'c', 'Benchmark message number 1 with a little **markdown**.', new Date().toISOString()],
    true,
  );
  for (const { text, values } of seen) {
    const flat = text.replace(/\s+/g, ' ');
    const write = /^\s*(with w0 as \(insert|insert|update|delete)/i.test(flat);
    if (
      /^(begin|commit|rollback)$/.test(flat) ||
      /for update|workroom_number_events|^ ?update|^ ?delete|^ ?insert into leases|scheduled_jobs/i.test(flat)
    )
      continue;
    await time(flat.slice(0, 110), text, values, write);
  }
  await client.end();
} finally {
  await wr.stop();
  rmSync(samples, { force: true });
}
