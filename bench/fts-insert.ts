/**
 * What the FTS5 index of messages costs an insert, and why (docs/SEARCH.md, "Write throughput").
 *
 * One SQLite file per variant, with a table shaped like `messages` (and an outbox row a message, as a
 * POST writes), preloaded with BENCH_FTS_PRELOAD corpus-like messages (indexed with 'rebuild'). Then
 * inserts as the server makes them under group commit: groups of BENCH_FTS_GROUP transactions, each a
 * SAVEPOINT (insert the message, insert the event, RELEASE), one COMMIT a group. The variants run in
 * turn, in BENCH_FTS_ROUNDS rounds of BENCH_FTS_MESSAGES messages each (the order rotating), and each is
 * reported as CPU µs an insert and as a ratio against the variant without any index in the same round
 * (the median over rounds): on a shared machine only ratios from the same run compare.
 *
 * Variants (BENCH_FTS_VARIANTS, comma-separated names, default all):
 * - none: no full-text index (the reference);
 * - direct-*: triggers write the FTS5 table in the writing statement (migration 0002);
 *   FTS5 flushes its pending terms into a new segment at every savepoint, the statement journal of
 *   each INSERT included, so every message becomes a segment of its own;
 * - nosp-23: direct, but the group without a savepoint a transaction (to tell the two flushes apart);
 * - deferred-*: triggers only note the rowid in `messages_fts_pending`; the whole group is indexed by
 *   one INSERT … SELECT just before COMMIT (migration 0007);
 * - …-am0: automerge=0 (merging left to a background task: its CPU is reported apart).
 *
 * Then, for each variant, the index's segments and size, and the time of a few searches (newest 100
 * matches, as search does): a 2- and 3-letter prefix, a 4-letter prefix, a rare and a missing word.
 *
 * Run: npx tsx bench/fts-insert.ts   (BENCH_FTS_TEXT=corpus for 10–46 word messages instead of the
 * throughput benchmark's short one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  INDEX_PENDING_AT,
  indexPendingMessages,
} from '../server/src/storage/migrations/0007_search_index_at_commit.js';
import { PendingMatcher } from '../server/src/storage/stores/search-text.js';

const PRELOAD = Number(process.env.BENCH_FTS_PRELOAD ?? 50_000);
const GROUP = Number(process.env.BENCH_FTS_GROUP ?? 8);
const ROUNDS = Number(process.env.BENCH_FTS_ROUNDS ?? 7);
const PER_ROUND = Number(process.env.BENCH_FTS_MESSAGES ?? 2000);
const TEXT = process.env.BENCH_FTS_TEXT ?? 'short';

interface Variant {
  name: string;
  /** FTS5 options after the tokenizer (undefined: no index). */
  fts?: string;
  mode: 'none' | 'direct' | 'deferred' | 'batched';
  /** FTS5 configuration: (key, value) pairs. */
  config?: [string, number][];
  savepoints?: boolean;
  /** batched: when to index (default: the server's, INDEX_PENDING_AT). */
  at?: { rows: number; ms: number };
  /** Background merging between groups ('merge', N), automerge being 0. */
  backgroundMerge?: number;
}

const ALL: Variant[] = [
  { name: 'none', mode: 'none' },
  { name: 'direct-none', fts: '', mode: 'direct' },
  { name: 'direct-23', fts: "prefix='2 3'", mode: 'direct' },
  { name: 'direct-3', fts: "prefix='3'", mode: 'direct' },
  { name: 'direct-23-col', fts: "prefix='2 3', detail=column", mode: 'direct' },
  {
    name: 'direct-23-am0',
    fts: "prefix='2 3'",
    mode: 'direct',
    config: [
      ['automerge', 0],
      ['crisismerge', 64],
    ],
  },
  { name: 'direct-23-pg4k', fts: "prefix='2 3'", mode: 'direct', config: [['pgsz', 4000]] },
  { name: 'nosp-23', fts: "prefix='2 3'", mode: 'direct', savepoints: false },
  { name: 'deferred-none', fts: '', mode: 'deferred' },
  { name: 'deferred-23', fts: "prefix='2 3'", mode: 'deferred' },
  { name: 'deferred-234', fts: "prefix='2 3 4'", mode: 'deferred' },
  { name: 'deferred-23-am8', fts: "prefix='2 3'", mode: 'deferred', config: [['automerge', 8]] },
  { name: 'batched-23', fts: "prefix='2 3'", mode: 'batched' },
  // The pending list alone, never indexed: what the trigger costs (its statement journal included).
  { name: 'pending-only', fts: "prefix='2 3'", mode: 'batched', at: { rows: 1e9, ms: 1e9 } },
  { name: 'deferred-23-am16', fts: "prefix='2 3'", mode: 'deferred', config: [['automerge', 16]] },
  { name: 'deferred-23-pg1k', fts: "prefix='2 3'", mode: 'deferred', config: [['pgsz', 1000]] },
  { name: 'deferred-23-pg500', fts: "prefix='2 3'", mode: 'deferred', config: [['pgsz', 500]] },
  {
    name: 'deferred-23-pg1k-am8',
    fts: "prefix='2 3'",
    mode: 'deferred',
    config: [
      ['pgsz', 1000],
      ['automerge', 8],
    ],
  },
  {
    name: 'deferred-23-am0',
    fts: "prefix='2 3'",
    mode: 'deferred',
    config: [
      ['automerge', 0],
      ['crisismerge', 64],
    ],
    backgroundMerge: 200,
  },
];
const chosen = process.env.BENCH_FTS_VARIANTS?.split(',').map((s) => s.trim());
const VARIANTS = chosen ? ALL.filter((v) => v.name === 'none' || chosen.includes(v.name)) : ALL;

/** Small, seeded PRNG (mulberry32). */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Corpus-like text: words of a 30,000-word vocabulary with Zipf weights, as bench/search.ts. */
const random = rng(7);
const STOP =
  'the of and to a in is it you that he was for on are with as i his they be at one have this from'.split(
    ' ',
  );
const SYL = 'ka ro mi te su na lo pe vi da ze bu fo ga hi ju ke la mo ni po ra si tu ve wa yo'.split(' ');
const VOCAB = [...STOP];
for (const seen = new Set(VOCAB); VOCAB.length < 30_000;) {
  let w = '';
  const n = 2 + Math.floor(random() * 3);
  for (let i = 0; i < n; i++) w += SYL[Math.floor(random() * SYL.length)];
  if (!seen.has(w)) {
    seen.add(w);
    VOCAB.push(w);
  }
}
const CDF = new Float64Array(VOCAB.length);
{
  let sum = 0;
  for (let r = 0; r < VOCAB.length; r++) CDF[r] = sum += 1 / (r + 1);
  for (let r = 0; r < VOCAB.length; r++) CDF[r]! /= sum;
}
function word(): string {
  const x = random();
  let lo = 0;
  let hi = CDF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (CDF[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return VOCAB[lo]!;
}
function corpusText(n: number): string {
  const ws: string[] = [];
  const len = 10 + Math.floor(random() * 37);
  for (let j = 0; j < len; j++) ws.push(word());
  if (n % 5000 === 7) ws.splice(3, 0, 'raretoken');
  return `${ws.join(' ')}.`;
}
const text = (n: number) =>
  TEXT === 'corpus' ? corpusText(n) : `Benchmark message number ${n} with a little **markdown** and café`;

// --- one database per variant ---

interface Db {
  v: Variant;
  raw: BetterSqlite3.Database;
  dir: string;
  next: number;
  insert: BetterSqlite3.Statement;
  event: BetterSqlite3.Statement;
  flush: BetterSqlite3.Statement[];
  /** batched: the server's hook (migration 0007), run before each commit. */
  hook?: ((force?: boolean) => void) | undefined;
  merge?: BetterSqlite3.Statement;
  mergeCpuUs: number;
}

const FTS_TABLE = (opts: string) =>
  `create virtual table messages_fts using fts5(content, content='messages', content_rowid='rowid', ` +
  `tokenize='unicode61 remove_diacritics 2', columnsize=0${opts ? `, ${opts}` : ''})`;

function open(v: Variant): Db {
  const dir = mkdtempSync(join(tmpdir(), 'wr-fts-insert-'));
  const raw = new BetterSqlite3(join(dir, 'db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.exec(`
    create table messages (id text primary key, org_id text not null, channel_id text not null,
      sender_id text not null, content text not null, content_html text, created_at text not null,
      deleted_at text);
    create index messages_channel on messages (channel_id, created_at, id);
    create table events (seq integer primary key autoincrement, kind text not null, payload text not null);
  `);
  const insert = raw.prepare(
    `insert into messages (id, org_id, channel_id, sender_id, content, content_html, created_at)
     values (?, 'o1', 'c1', 'u1', ?, ?, ?)`,
  );
  // Preload without triggers, then index in one go.
  raw.transaction(() => {
    for (let i = 0; i < PRELOAD; i++) {
      const c = corpusText(i);
      insert.run(id(i), c, `<p>${c}</p>`, new Date(1.7e12 + i).toISOString());
    }
  })();
  let flush: BetterSqlite3.Statement[] = [];
  if (v.fts !== undefined) {
    raw.exec(FTS_TABLE(v.fts));
    for (const [k, val] of v.config ?? [])
      raw.exec(`insert into messages_fts(messages_fts, rank) values('${k}', ${val})`);
    raw.exec(`insert into messages_fts(messages_fts) values('rebuild')`);
    if (v.mode === 'direct') {
      raw.exec(`
        create trigger messages_fts_insert after insert on messages begin
          insert into messages_fts(rowid, content) select new.rowid, new.content where new.deleted_at is null; end;
        create trigger messages_fts_update after update of content, deleted_at on messages begin
          insert into messages_fts(messages_fts, rowid, content) select 'delete', old.rowid, old.content where old.deleted_at is null;
          insert into messages_fts(rowid, content) select new.rowid, new.content where new.deleted_at is null; end;
        create trigger messages_fts_delete after delete on messages begin
          insert into messages_fts(messages_fts, rowid, content) select 'delete', old.rowid, old.content where old.deleted_at is null; end;
      `);
    } else {
      raw.exec(`
        create table messages_fts_pending (rowid integer primary key);
        create trigger messages_fts_insert after insert on messages begin
          insert into messages_fts_pending(rowid) select new.rowid where new.deleted_at is null; end;
      `);
      if (v.mode === 'deferred')
        flush = [
          raw.prepare(
            `insert into messages_fts(rowid, content) select m.rowid, m.content from messages_fts_pending p
           join messages m on m.rowid = p.rowid`,
          ),
          raw.prepare('delete from messages_fts_pending'),
        ];
    }
  }
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const event = raw.prepare(`insert into events (kind, payload) values ('message.created', ?)`);
  const merge = v.backgroundMerge
    ? raw.prepare(`insert into messages_fts(messages_fts, rank) values('merge', ${v.backgroundMerge})`)
    : undefined;
  const hook = v.mode === 'batched' ? indexPendingMessages(raw, v.at) : undefined;
  return { v, raw, dir, next: PRELOAD, insert, event, flush, hook, ...(merge && { merge }), mergeCpuUs: 0 };
}

function id(n: number): string {
  return `m${String(n).padStart(9, '0')}`;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Inserts `count` messages in groups; returns CPU µs spent (background merges apart). */
function insertMessages(db: Db, count: number): number {
  const { raw, insert, event, flush, v } = db;
  const sp = v.savepoints !== false;
  const begin = raw.prepare('begin');
  const commit = raw.prepare('commit');
  const savepoint = raw.prepare('savepoint wr_tx');
  const release = raw.prepare('release wr_tx');
  const has = flush.length
    ? raw.prepare('select exists (select 1 from messages_fts_pending)').pluck()
    : undefined;
  let spent = 0;
  for (let done = 0; done < count;) {
    const t0 = cpuUs();
    begin.run();
    for (let g = 0; g < GROUP && done < count; g++, done++) {
      if (sp) savepoint.run();
      const n = db.next++;
      const c = text(n);
      insert.run(id(n), c, `<p>${c}</p>`, new Date(1.8e12 + n).toISOString());
      event.run(`{"id":"${id(n)}"}`);
      if (sp) release.run();
    }
    if (has?.get()) for (const s of flush) s.run();
    db.hook?.();
    commit.run();
    spent += cpuUs() - t0;
    if (db.merge) {
      // Between groups, as a background task on the writer would: a bounded step of merging.
      const m0 = cpuUs();
      raw.exec('begin');
      db.merge.run();
      raw.exec('commit');
      db.mergeCpuUs += cpuUs() - m0;
    }
  }
  return spent;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * The newest 100 matches, as search reads them: for the batched variant also the pending messages, in
 * the same statement, checked in code (SearchStore.messages).
 */
function timeQuery(db: Db, match: string): { us: number; n: number } {
  const { raw } = db;
  const batched = db.v.mode === 'batched';
  const stmt = raw.prepare(
    batched
      ? `select * from (select m.id, m.content, m.rowid from messages_fts join messages m on m.rowid = messages_fts.rowid
         where messages_fts match ? order by messages_fts.rowid desc limit 100)
         union all select m.id, m.content, -m.rowid from messages_fts_pending p cross join messages m on m.rowid = p.rowid`
      : `select m.id, m.content, m.rowid from messages_fts join messages m on m.rowid = messages_fts.rowid
         where messages_fts match ? order by messages_fts.rowid desc limit 100`,
  );
  const clause = { words: [match.replace(/["*]/g, '').trim()], prefix: match.endsWith('*') };
  const pending = new PendingMatcher();
  const run = () => {
    const rows = stmt.all(match) as { id: string; content: string; rowid: number }[];
    if (!batched) return rows.length;
    return rows.filter((r) => r.rowid > 0 || pending.matches(r.id, r.content, [clause])).length;
  };
  let n = run(); // warm
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    n = run();
    times.push((performance.now() - t0) * 1000);
  }
  return { us: median(times), n };
}

console.log(
  `FTS5 insert micro-benchmark: ${PRELOAD} messages preloaded, groups of ${GROUP}, ${ROUNDS} rounds of ${PER_ROUND} ` +
    `${TEXT} messages a variant; SQLite ${new BetterSqlite3(':memory:').prepare('select sqlite_version()').pluck().get() as string}; load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')}`,
);
const dbs = VARIANTS.map(open);
const perRound = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = dbs.map((_, i) => dbs[(i + round) % dbs.length]!);
  for (const db of order) perRound.get(db.v.name)!.push(insertMessages(db, PER_ROUND) / PER_ROUND);
}
const ref = perRound.get('none')!;
console.log(
  `\n| variant | CPU µs an insert (median) | ratio to none (median of rounds) | merge µs apart | load |`,
);
console.log('|---|---|---|---|---|');
for (const db of dbs) {
  const xs = perRound.get(db.v.name)!;
  const ratios = xs.map((x, i) => x / ref[i]!);
  const merge = db.merge ? (db.mergeCpuUs / (ROUNDS * PER_ROUND)).toFixed(1) : '';
  console.log(
    `| ${db.v.name} | ${median(xs).toFixed(1)} | ${median(ratios).toFixed(2)} | ${merge} | ${loadavg()[0]!.toFixed(1)} |`,
  );
}

console.log(
  `\n| variant | segments | index MB | "th" * µs | "the" * µs | "hav" * µs | "have" * µs | raretoken µs | missing µs | "ka" * µs |`,
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const db of dbs) {
  if (db.v.fts === undefined) continue;
  if (db.v.mode === 'batched') {
    // Searched with a full batch less one waiting (the most a search reads besides the index).
    const waiting = INDEX_PENDING_AT.rows - 1;
    db.hook!(true);
    db.raw.transaction(() => {
      for (let i = 0; i < waiting; i++) {
        const n = db.next++;
        db.insert.run(id(n), text(n), '', new Date(1.8e12 + n).toISOString());
      }
    })();
  }
  const segs = db.raw.prepare('select count(distinct segid) from messages_fts_idx').pluck().get() as number;
  const bytes = db.raw.prepare('select sum(length(block)) from messages_fts_data').pluck().get() as number;
  const q = ['"th" *', '"the" *', '"hav" *', '"have" *', 'raretoken', 'nosuchword', '"ka" *'].map((m) =>
    timeQuery(db, m).us.toFixed(0),
  );
  console.log(`| ${db.v.name} | ${segs} | ${(bytes / 1048576).toFixed(1)} | ${q.join(' | ')} |`);
}
for (const db of dbs) {
  db.raw.close();
  rmSync(db.dir, { recursive: true, force: true });
}
