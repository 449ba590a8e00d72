/**
 * Statements per POST on PostgreSQL: starts Workroom with a preload that counts pg Client#query calls
 * by text (bench/pg-count-preload.cjs), posts N messages one after another (user, then bot), waits for
 * the work after them (outbox numbering, fan-out, deliveries) to settle, and prints the counts per POST.
 * `BENCH_PG_URL=postgres://… npx tsx bench/count-pg-statements.ts [N]`
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { ROOT, api, load, seed, startWorkroom } from './lib.js';

const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const n = Number(process.argv[2] ?? 100);
const out = join(tmpdir(), `pg-count-${process.pid}.txt`);
process.env.BENCH_SERVER_NODE_ARGS = `${process.env.BENCH_SERVER_NODE_ARGS ?? ''} --require ${join(ROOT, 'bench/pg-count-preload.cjs')}`;
const wr = await startWorkroom({ DATABASE_URL: pgUrl, PGCOUNT_OUT: out });
const s = await seed(wr.url);
const settle = () => new Promise((r) => setTimeout(r, 1500));
// Messages in the server's schema: under load the POSTs of a phase are the messages it added (wrk's
// warm-up second included, as its statements are; with group commit one INSERT carries several).
const db = new pg.Client({ connectionString: pgUrl });
await db.connect();
const messages = async () =>
  Number((await db.query(`select count(*) as n from "${wr.schema}".messages`)).rows[0].n);
const phase = async (label: string, token: string, loaded = false) => {
  await settle();
  process.kill(wr.pid!, 'SIGUSR2'); // reset
  await settle();
  rmSync(out, { force: true });
  process.kill(wr.pid!, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 200));
  rmSync(out, { force: true });
  let posts = n;
  const before = await messages();
  if (loaded) {
    const r = await load({
      url: wr.url,
      method: 'POST',
      path: () => `/api/channels/${s.channelId}/messages`,
      headers: { authorization: `Bearer ${token}` },
      body: (i) => JSON.stringify({ content: `count ${i}` }),
      durationMs: 3000,
      warmupMs: 0,
    });
    if (r.errors > 0) console.error(`  ${r.errors} errors`);
  } else {
    for (let i = 0; i < n; i++) {
      await api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, token, { content: `count ${i}` });
    }
  }
  await settle();
  process.kill(wr.pid!, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 300));
  const text = readFileSync(out, 'utf8');
  const lines = text.split('\n').filter((l) => l && !l.startsWith('==='));
  const total = lines.reduce((a, l) => a + Number(l.split('\t')[0]), 0);
  if (loaded) posts = (await messages()) - before;
  const what = loaded ? 'POSTs under load (closed loop)' : 'POSTs one after another';
  console.log(
    `\n## ${label}: ${posts} ${what}, ${total} statements (${(total / posts).toFixed(2)} per POST)`,
  );
  for (const l of lines) {
    const [c, t] = l.split('\t');
    console.log(`${(Number(c) / posts).toFixed(3).padStart(6)}  ${t!.slice(0, 160)}`);
  }
};
await phase('user', s.token);
await phase('bot', s.botKey);
await phase('user, loaded', s.token, true);
await phase('bot, loaded', s.botKey, true);
await db.end();
await wr.stop();
rmSync(out, { force: true });
