import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { ScheduledJobRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import {
  at,
  clearTables,
  dialectName,
  indexEntriesRead,
  openContractWorld,
} from './helpers/store-fixtures.js';

/**
 * Contract of ScheduledJobStore (storage/stores/scheduled-jobs.ts) on SQLite and PostgreSQL: the state
 * machine pending → running (lease, attempts + 1) → done / pending again / failed / cancelled, fenced by
 * the attempt number; claims in run_at order, limited, never the same job to two concurrent claimers.
 * Every time is passed explicitly (fixed instants), so nothing here depends on the clock.
 */
describe(`store contract: scheduled jobs (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let mkBot: () => Promise<{ id: string }>;

  beforeAll(async () => {
    const w = await openContractWorld();
    ({ storage, close, orgId } = w);
    mkBot = w.bot;
  });
  afterAll(() => close());
  // claim / expire / nextRunAt / prune look at every job: each test starts with none.
  beforeEach(() => clearTables(storage, ['scheduled_jobs']));

  const job = (botId: string, over: Partial<ScheduledJobRow> = {}): ScheduledJobRow => ({
    id: newId(),
    org_id: orgId,
    bot_id: botId,
    kind: 'test',
    dedupe_key: null,
    payload: '{}',
    run_at: at(0),
    state: 'pending',
    attempts: 0,
    lease_until: null,
    last_error: null,
    created_at: at(-100),
    updated_at: at(-100),
    done_at: null,
    ...over,
  });
  const jobs = () => storage.stores.scheduledJobs;
  // The scheduler claims and expires inside a transaction (scheduler.ts #claimOnce): so do these.
  type ClaimArgs = Parameters<Storage['stores']['scheduledJobs']['claim']>[0];
  type ExpireArgs = Parameters<Storage['stores']['scheduledJobs']['expire']>[0];
  const claim = (a: ClaimArgs) => storage.transaction((s) => s.scheduledJobs.claim(a));
  const expire = (a: ExpireArgs) => storage.transaction((s) => s.scheduledJobs.expire(a));
  const claimArgs = (now: number, over: Partial<ClaimArgs> = {}) => ({
    now: at(now),
    leaseUntil: at(now + 60),
    cutoff: at(now - 3600),
    maxAttempts: 3,
    limit: 100,
    ...over,
  });

  it('insert / get / byDedupeKey: a dedupe key is unique per bot (insert answers false, nothing changes); null keys never clash', async () => {
    const a = await mkBot();
    const b = await mkBot();
    const first = job(a.id, { dedupe_key: 'daily:1', payload: '{"n":1}' });
    expect(await jobs().insert(first)).toBe(true);
    expect(await jobs().get(first.id)).toEqual(first);
    expect(await jobs().insert(job(a.id, { dedupe_key: 'daily:1', payload: '{"n":2}' }))).toBe(false);
    expect((await jobs().byDedupeKey(a.id, 'daily:1'))?.payload).toBe('{"n":1}');
    // Same key, other bot: its own job.
    const other = job(b.id, { dedupe_key: 'daily:1' });
    expect(await jobs().insert(other)).toBe(true);
    expect((await jobs().byDedupeKey(b.id, 'daily:1'))?.id).toBe(other.id);
    // No key: any number.
    expect(await jobs().insert(job(a.id))).toBe(true);
    expect(await jobs().insert(job(a.id))).toBe(true);
    // The same id twice is refused the same way.
    expect(await jobs().insert({ ...first, dedupe_key: null })).toBe(false);
    expect(await jobs().byDedupeKey(a.id, 'nope')).toBeUndefined();
    expect(await jobs().get(newId())).toBeUndefined();
    expect(await jobs().countOpen(a.id)).toBe(3);
  });

  it('insert: concurrent transactions with one dedupe key insert exactly one job', async () => {
    const a = await mkBot();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        storage.transaction((s) =>
          s.scheduledJobs.insert(job(a.id, { dedupe_key: 'once', payload: `{"i":${i}}` })),
        ),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await jobs().countOpen(a.id)).toBe(1);
  });

  it('lockBot: count-then-insert under the bot lock holds a per-bot limit of 2 against 6 concurrent requests', async () => {
    const a = await mkBot();
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        storage.transaction(async (s) => {
          await s.scheduledJobs.lockBot(a.id);
          if ((await s.scheduledJobs.countOpen(a.id)) >= 2) return false;
          return s.scheduledJobs.insert(job(a.id));
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(2);
    expect(await jobs().countOpen(a.id)).toBe(2);
  });

  it('countOpen counts pending and running jobs only', async () => {
    const a = await mkBot();
    for (const state of ['pending', 'running', 'done', 'failed', 'cancelled'] as const)
      await jobs().insert(job(a.id, { state }));
    expect(await jobs().countOpen(a.id)).toBe(2);
    expect(await jobs().countOpen(newId())).toBe(0);
  });

  it('listForBot: run_at then id order, state filter, (run_at, id) cursor, limit; other bots excluded', async () => {
    const a = await mkBot();
    const b = await mkBot();
    const ids = ['j-c', 'j-a', 'j-b'];
    // Two jobs share run_at 10: ordered by id.
    await jobs().insert(job(a.id, { id: ids[0]!, run_at: at(10) }));
    await jobs().insert(job(a.id, { id: ids[1]!, run_at: at(20), state: 'done' }));
    await jobs().insert(job(a.id, { id: ids[2]!, run_at: at(10) }));
    await jobs().insert(job(b.id, { run_at: at(5) }));
    const all = await jobs().listForBot(a.id, { limit: 10 });
    expect(all.map((j) => j.id)).toEqual(['j-b', 'j-c', 'j-a']);
    expect((await jobs().listForBot(a.id, { limit: 2 })).map((j) => j.id)).toEqual(['j-b', 'j-c']);
    expect(
      (await jobs().listForBot(a.id, { limit: 10, after: { run_at: at(10), id: 'j-b' } })).map((j) => j.id),
    ).toEqual(['j-c', 'j-a']);
    expect((await jobs().listForBot(a.id, { limit: 10, state: 'done' })).map((j) => j.id)).toEqual(['j-a']);
    expect(await jobs().listForBot(a.id, { limit: 10, state: 'failed' })).toEqual([]);
  });

  it('cancel: a pending job of the bot becomes cancelled (done_at set); running, foreign or unknown jobs are not', async () => {
    const a = await mkBot();
    const b = await mkBot();
    const p = job(a.id);
    const r = job(a.id, { state: 'running', attempts: 1, lease_until: at(100) });
    await jobs().insert(p);
    await jobs().insert(r);
    expect(await jobs().cancel(a.id, p.id, at(5))).toMatchObject({
      id: p.id,
      state: 'cancelled',
      done_at: at(5),
      updated_at: at(5),
      lease_until: null,
    });
    expect(await jobs().cancel(a.id, r.id, at(5))).toMatchObject({ state: 'running', lease_until: at(100) });
    expect(await jobs().cancel(b.id, p.id, at(6))).toBeUndefined();
    expect(await jobs().cancel(a.id, newId(), at(6))).toBeUndefined();
    expect((await jobs().get(p.id))?.done_at).toBe(at(5));
  });

  it('claim: due pending jobs, earliest first, at most limit; each running with the lease and attempts + 1', async () => {
    const a = await mkBot();
    const late = job(a.id, { run_at: at(30) });
    const early = job(a.id, { run_at: at(10) });
    const mid = job(a.id, { run_at: at(20) });
    const future = job(a.id, { run_at: at(1000) });
    const tooOld = job(a.id, { run_at: at(-7200) }); // before the cutoff: expire's, not claim's
    for (const j of [late, early, mid, future, tooOld]) await jobs().insert(j);
    const got = await claim(claimArgs(100, { limit: 2 }));
    expect(got.map((j) => j.id)).toEqual([early.id, mid.id]);
    for (const j of got)
      expect(j).toMatchObject({ state: 'running', attempts: 1, lease_until: at(160), updated_at: at(100) });
    const rest = await claim(claimArgs(100));
    expect(rest.map((j) => j.id)).toEqual([late.id]);
    expect(await claim(claimArgs(100))).toEqual([]);
    expect((await jobs().get(future.id))?.state).toBe('pending');
    expect((await jobs().get(tooOld.id))?.state).toBe('pending');
    expect(await claim(claimArgs(100, { limit: 0 }))).toEqual([]);
  });

  it('claim: a running job whose lease ran out is claimed again (attempt + 1) until maxAttempts; the old runner is fenced off', async () => {
    const a = await mkBot();
    const j = job(a.id, { run_at: at(0) });
    await jobs().insert(j);
    const [first] = await claim(claimArgs(10, { maxAttempts: 2 }));
    expect(first?.attempts).toBe(1);
    // Lease still held: nothing.
    expect(await claim(claimArgs(69, { maxAttempts: 2 }))).toEqual([]);
    // Lease over (lease_until 70 <= now): taken over.
    const [second] = await claim(claimArgs(70, { maxAttempts: 2 }));
    expect(second).toMatchObject({ id: j.id, attempts: 2, lease_until: at(130) });
    // The first runner can no longer change the job.
    expect(await jobs().renew(j.id, 1, at(500))).toBe(false);
    expect(await jobs().complete(j.id, 1, at(71))).toBe(false);
    expect(await jobs().fail(j.id, 1, 'x', null, at(71))).toBe(false);
    // Its last attempt's lease runs out: not claimed a third time.
    expect(await claim(claimArgs(200, { maxAttempts: 2 }))).toEqual([]);
    expect((await jobs().get(j.id))?.state).toBe('running');
  });

  // A backlog of due jobs: an OR of the two claimable states read and sorted every due job for each
  // claim (and statistics taken before the backlog chose a full sort even per state). The claim reads
  // the due index in order per state up to the limit (migration 0024), whatever the statistics.
  it.runIf(dialectName() === 'postgres')(
    'claim on PostgreSQL reads each state in order up to the limit, not the whole backlog, with stale statistics',
    async () => {
      const a = await mkBot();
      await sql`analyze scheduled_jobs`.execute(storage.stores.db);
      const backlog = Array.from({ length: 2000 }, (_, i) =>
        job(a.id, { id: `backlog-${String(i).padStart(4, '0')}`, run_at: at(i % 400) }),
      );
      for (const j of backlog) await jobs().insert(j);
      // A job whose runner died (lease over), due earliest of all; one still leased is not claimable.
      const lapsed = job(a.id, { run_at: at(-10), state: 'running', attempts: 1, lease_until: at(50) });
      const leased = job(a.id, { run_at: at(-20), state: 'running', attempts: 1, lease_until: at(500) });
      await jobs().insert(lapsed);
      await jobs().insert(leased);
      const expected = [
        lapsed.id,
        ...backlog
          .sort((x, y) => (x.run_at < y.run_at ? -1 : x.run_at > y.run_at ? 1 : x.id < y.id ? -1 : 1))
          .slice(0, 7)
          .map((j) => j.id),
      ];
      const { got, indexRead } = await storage.transaction(async (s) => {
        const got = await s.scheduledJobs.claim(claimArgs(100, { limit: 8 }));
        return { got, indexRead: await indexEntriesRead(s.db, 'scheduled_jobs_due') };
      });
      expect(new Set(got.map((j) => j.id))).toEqual(new Set(expected));
      expect(got[0]).toMatchObject({ id: lapsed.id, attempts: 2, state: 'running' });
      // Up to the limit in each state (8 pending read, 2 running looked at); the backlog is 2,000.
      expect(indexRead).toBeGreaterThanOrEqual(8);
      expect(indexRead).toBeLessThan(100);
    },
  );

  it('claim: two concurrent claimers never get the same job (SKIP LOCKED on PostgreSQL: the second answers while the first holds its claim open)', async () => {
    const a = await mkBot();
    const all: ScheduledJobRow[] = [];
    for (let i = 0; i < 6; i++) all.push(job(a.id, { id: `job-${i}`, run_at: at(i) }));
    for (const j of all) await jobs().insert(j);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let claimed!: () => void;
    const firstClaimed = new Promise<void>((r) => (claimed = r));
    const first = storage.transaction(async (s) => {
      const got = await s.scheduledJobs.claim(claimArgs(100, { limit: 2 }));
      claimed();
      await gate; // hold the claim (and on PostgreSQL its row locks) open
      return got;
    });
    await firstClaimed;
    const second = storage.transaction((s) => s.scheduledJobs.claim(claimArgs(100, { limit: 2 })));
    // PostgreSQL: the second skips the locked rows (SKIP LOCKED) and answers while the first is still
    // open; SQLite has one writer, so it waits for the first. Either way it gets the next two jobs.
    if (storage.dialect === 'postgres') await second;
    release();
    const [x, y] = await Promise.all([first, second]);
    expect(x.map((j) => j.id)).toEqual(['job-0', 'job-1']);
    expect(y.map((j) => j.id)).toEqual(['job-2', 'job-3']);
    // Many claimers at once: every due job claimed exactly once.
    const more = await Promise.all(
      Array.from({ length: 4 }, () =>
        storage.transaction((s) => s.scheduledJobs.claim(claimArgs(100, { limit: 1 }))),
      ),
    );
    const ids = more.flat().map((j) => j.id);
    expect(ids.sort()).toEqual(['job-4', 'job-5']);
    for (const j of all) expect((await jobs().get(j.id))?.attempts).toBe(1);
  });

  it('renew / complete: only for the attempt that holds the claim; complete clears lease and error', async () => {
    const a = await mkBot();
    const j = job(a.id, { last_error: 'old' });
    await jobs().insert(j);
    const [c] = await claim(claimArgs(10));
    expect(c?.attempts).toBe(1);
    expect(await jobs().renew(j.id, 2, at(300))).toBe(false);
    expect(await jobs().renew(j.id, 1, at(300))).toBe(true);
    expect((await jobs().get(j.id))?.lease_until).toBe(at(300));
    expect(await jobs().complete(j.id, 2, at(20))).toBe(false);
    expect(await jobs().complete(j.id, 1, at(20))).toBe(true);
    expect(await jobs().get(j.id)).toMatchObject({
      state: 'done',
      lease_until: null,
      last_error: null,
      done_at: at(20),
      updated_at: at(20),
    });
    // Done: no second completion, no renewal.
    expect(await jobs().complete(j.id, 1, at(21))).toBe(false);
    expect(await jobs().renew(j.id, 1, at(400))).toBe(false);
  });

  it('fail: retry makes it pending at retryAt (claimable then, attempts kept); without retry failed or cancelled for good', async () => {
    const a = await mkBot();
    const r = job(a.id, { run_at: at(0) });
    const f = job(a.id, { run_at: at(1) });
    const c = job(a.id, { run_at: at(2) });
    for (const j of [r, f, c]) await jobs().insert(j);
    expect(await claim(claimArgs(10))).toHaveLength(3);
    expect(await jobs().fail(r.id, 1, 'boom', at(50), at(11))).toBe(true);
    expect(await jobs().get(r.id)).toMatchObject({
      state: 'pending',
      run_at: at(50),
      lease_until: null,
      last_error: 'boom',
      attempts: 1,
      done_at: null,
    });
    expect(await jobs().fail(f.id, 1, 'fatal', null, at(12))).toBe(true);
    expect(await jobs().get(f.id)).toMatchObject({ state: 'failed', last_error: 'fatal', done_at: at(12) });
    expect(await jobs().fail(c.id, 1, 'bot gone', null, at(13), 'cancelled')).toBe(true);
    expect((await jobs().get(c.id))?.state).toBe('cancelled');
    // Not claimed before its retry time; claimed (attempt 2) at it.
    expect(await claim(claimArgs(49))).toEqual([]);
    expect((await claim(claimArgs(50))).map((j) => [j.id, j.attempts])).toEqual([[r.id, 2]]);
    // A job not running cannot be failed.
    expect(await jobs().fail(f.id, 1, 'again', null, at(60))).toBe(false);
  });

  it('expire: pending jobs past the grace cutoff are missed; lapsed claims that were late or out of attempts are abandoned; others untouched', async () => {
    const a = await mkBot();
    const missed = job(a.id, { run_at: at(-5000) });
    const onTime = job(a.id, { run_at: at(-10) });
    const lapsedLastAttempt = job(a.id, {
      run_at: at(-100),
      state: 'running',
      attempts: 3,
      lease_until: at(-1),
    });
    const lapsedRetryable = job(a.id, {
      run_at: at(-100),
      state: 'running',
      attempts: 1,
      lease_until: at(-1),
    });
    const heldLate = job(a.id, { run_at: at(-5000), state: 'running', attempts: 1, lease_until: at(50) });
    const lapsedLate = job(a.id, { run_at: at(-4000), state: 'running', attempts: 1, lease_until: at(0) });
    const doneLate = job(a.id, { run_at: at(-5000), state: 'done' });
    for (const j of [missed, onTime, lapsedLastAttempt, lapsedRetryable, heldLate, lapsedLate, doneLate])
      await jobs().insert(j);
    const args = {
      now: at(0),
      cutoff: at(-3600),
      maxAttempts: 3,
      missedError: 'missed',
      abandonedError: 'abandoned',
      limit: 100,
    };
    const out = await expire(args);
    const byId = new Map(out.map((j) => [j.id, j]));
    expect([...byId.keys()].sort()).toEqual([missed.id, lapsedLastAttempt.id, lapsedLate.id].sort());
    expect(byId.get(missed.id)).toMatchObject({
      state: 'failed',
      last_error: 'missed',
      done_at: at(0),
      lease_until: null,
    });
    expect(byId.get(lapsedLate.id)?.last_error).toBe('missed');
    expect(byId.get(lapsedLastAttempt.id)?.last_error).toBe('abandoned');
    for (const j of [onTime, lapsedRetryable, heldLate, doneLate])
      expect((await jobs().get(j.id))?.state).toBe(j.state);
    expect(await expire(args)).toEqual([]);
    // limit, earliest run_at first
    const m1 = job(a.id, { run_at: at(-9000) });
    const m2 = job(a.id, { run_at: at(-8000) });
    await jobs().insert(m2);
    await jobs().insert(m1);
    expect((await expire({ ...args, limit: 1 })).map((j) => j.id)).toEqual([m1.id]);
  });

  it('nextRunAt: the earliest pending run_at, null when nothing is pending', async () => {
    const a = await mkBot();
    expect(await jobs().nextRunAt()).toBeNull();
    await jobs().insert(job(a.id, { run_at: at(5), state: 'running' }));
    await jobs().insert(job(a.id, { run_at: at(3), state: 'done' }));
    expect(await jobs().nextRunAt()).toBeNull();
    await jobs().insert(job(a.id, { run_at: at(40) }));
    await jobs().insert(job(a.id, { run_at: at(20) }));
    expect(await jobs().nextRunAt()).toBe(at(20));
  });

  it('prune: deletes finished jobs changed before the time, a batch at a time; open jobs stay', async () => {
    const a = await mkBot();
    const old = (state: ScheduledJobRow['state']) => job(a.id, { state, updated_at: at(-500) });
    const finished = [old('done'), old('failed'), old('cancelled')];
    const keep = [old('pending'), old('running'), job(a.id, { state: 'done', updated_at: at(0) })];
    for (const j of [...finished, ...keep]) await jobs().insert(j);
    expect(await jobs().prune(at(-1), 2)).toBe(2);
    expect(await jobs().prune(at(-1), 2)).toBe(1);
    expect(await jobs().prune(at(-1), 2)).toBe(0);
    for (const j of finished) expect(await jobs().get(j.id)).toBeUndefined();
    for (const j of keep) expect(await jobs().get(j.id)).toBeDefined();
  });
});
