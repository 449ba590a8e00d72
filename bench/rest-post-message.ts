/**
 * Posting a message through the REST API, against the same-run reference (bare node:http + JSON parse +
 * one better-sqlite3 insert). Goal: Workroom ≥ 0.75× the reference (issue 18). With BENCH_PG_URL set,
 * also Workroom on that PostgreSQL (in a schema of its own) against the PostgreSQL reference (one
 * prepared insert on a pool of 10, same database; goal ≥ 0.6×). Each row also gives the server's CPU
 * time per request (user + system, from /proc), which moves less with other load than throughput.
 */
import {
  FIRST_ROW_WARMUP_MS,
  load,
  report,
  seed,
  startPgReference,
  startReference,
  startWorkroom,
} from './lib.js';

const content = (i: number) =>
  JSON.stringify({ content: `Benchmark message number ${i} with a little **markdown**.` });

const ref = await startReference('rest');
const refResult = await load({
  url: ref.url,
  pid: ref.pid,
  method: 'POST',
  path: () => '/messages',
  body: content,
  warmupMs: FIRST_ROW_WARMUP_MS,
});
await ref.stop();

const wr = await startWorkroom();
const s = await seed(wr.url);
const asUser = await load({
  url: wr.url,
  pid: wr.pid,
  method: 'POST',
  path: () => `/api/channels/${s.channelId}/messages`,
  headers: { authorization: `Bearer ${s.token}` },
  body: content,
  warmupMs: FIRST_ROW_WARMUP_MS,
});
const asBot = await load({
  url: wr.url,
  pid: wr.pid,
  method: 'POST',
  path: () => `/api/channels/${s.channelId}/messages`,
  headers: { authorization: `Bearer ${s.botKey}` },
  body: content,
});
await wr.stop();

report('POST a message (REST), SQLite', [
  ['reference: node:http + JSON + 1 insert', refResult],
  ['workroom POST /api/channels/{id}/messages (user)', asUser],
  ['workroom POST /api/channels/{id}/messages (bot)', asBot],
]);

// On PostgreSQL, when BENCH_PG_URL names one (npm run bench does not need it), against the PostgreSQL
// reference measured in the same run on the same database (issue 18: goal ≥ 0.6×): node:http + JSON +
// one prepared insert on a pool of 10.
const pgUrl = process.env.BENCH_PG_URL;
if (pgUrl) {
  const pgRef = await startPgReference(pgUrl);
  const pgRefResult = await load({
    url: pgRef.url,
    pid: pgRef.pid,
    method: 'POST',
    path: () => '/messages',
    body: content,
    warmupMs: FIRST_ROW_WARMUP_MS,
  });
  await pgRef.stop();
  const wrPg = await startWorkroom({ DATABASE_URL: pgUrl });
  const p = await seed(wrPg.url);
  const pgAs = (token: string, warmupMs?: number) =>
    load({
      warmupMs,
      url: wrPg.url,
      pid: wrPg.pid,
      method: 'POST',
      path: () => `/api/channels/${p.channelId}/messages`,
      headers: { authorization: `Bearer ${token}` },
      body: content,
    });
  const pgUser = await pgAs(p.token, FIRST_ROW_WARMUP_MS);
  const pgBot = await pgAs(p.botKey);
  await wrPg.stop();
  report('POST a message (REST), PostgreSQL', [
    ['reference: node:http + JSON + 1 pg insert (pool 10)', pgRefResult],
    ['workroom POST /api/channels/{id}/messages (user)', pgUser],
    ['workroom POST /api/channels/{id}/messages (bot)', pgBot],
  ]);
}
