/**
 * Posting a message through the REST API, against the same-run reference (bare node:http + JSON parse +
 * one better-sqlite3 insert). Goal: Workroom ≥ 0.5× the reference. With BENCH_PG_URL set, also Workroom
 * on that PostgreSQL (in a schema of its own), for comparison.
 */
import { load, report, seed, startReference, startWorkroom, type LoadResult } from './lib.js';

const content = (i: number) =>
  JSON.stringify({ content: `Benchmark message number ${i} with a little **markdown**.` });

const ref = await startReference('rest');
const refResult = await load({ url: ref.url, method: 'POST', path: () => '/messages', body: content });
await ref.stop();

const wr = await startWorkroom();
const s = await seed(wr.url);
const asUser = await load({
  url: wr.url,
  method: 'POST',
  path: () => `/api/channels/${s.channelId}/messages`,
  headers: { authorization: `Bearer ${s.token}` },
  body: content,
});
const asBot = await load({
  url: wr.url,
  method: 'POST',
  path: () => `/api/channels/${s.channelId}/messages`,
  headers: { authorization: `Bearer ${s.botKey}` },
  body: content,
});
await wr.stop();

// The same on PostgreSQL, when BENCH_PG_URL names one (npm run bench does not need it).
const pgUrl = process.env.BENCH_PG_URL;
let onPg: LoadResult | undefined;
if (pgUrl) {
  const wrPg = await startWorkroom({ DATABASE_URL: pgUrl });
  const p = await seed(wrPg.url);
  onPg = await load({
    url: wrPg.url,
    method: 'POST',
    path: () => `/api/channels/${p.channelId}/messages`,
    headers: { authorization: `Bearer ${p.botKey}` },
    body: content,
  });
  await wrPg.stop();
}

report('POST a message (REST)', [
  ['reference: node:http + JSON + 1 insert', refResult],
  ['workroom POST /api/channels/{id}/messages (user)', asUser],
  ['workroom POST /api/channels/{id}/messages (bot)', asBot],
  ...(onPg ? [['workroom POST … (bot), PostgreSQL', onPg] as [string, LoadResult]] : []),
]);
