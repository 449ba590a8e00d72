import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { TestClock } from '../src/runtime/clock.js';
import { BotJobHandler } from '../src/scheduler/bot-jobs.js';
import type { ScheduledJob } from '../src/scheduler/job.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { moveClockTo } from './helpers/platform-bots.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * The bot platform's scheduler and bot data over REST, on a real server (SQLite, or PostgreSQL with
 * DATABASE_URL): scheduling, dedupe, cancel, retries with backoff, job.due to a custom bot's webhook,
 * bot data with compare-and-set, every limit, and who may reach what.
 *
 * Jobs of kinds `test.*` are run by the test's handler (recorded; `test.flaky` throws for its first
 * `payload.fail` attempts); every other kind goes to the server's own handler (job.due).
 *
 * Time is the server's test clock (server/src/runtime/clock.ts): jobs due in a second come in real
 * time (the test clock's timers fire in real time too), retries after 5 and 10 minutes come when the
 * test moves the clock. "Nothing more runs" checks end on a sentinel job (`sentinel()`), never on a
 * quiet period. (The scheduler on the system clock, across real processes: scheduler-process.test.ts.)
 */
const RETRY = [5 * 60_000, 10 * 60_000];

describe('bot jobs and bot data (REST)', () => {
  let srv: TestServer;
  let rx: Receiver;
  let w: World;
  let member: UserHandle;
  let bot: BotHandle;
  let sibling: BotHandle;
  let foreign: BotHandle;
  const runs: (ScheduledJob & { at: number })[] = [];
  const runsOf = (id: string) => runs.filter((r) => r.id === id);
  const clock = new TestClock();

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer(
      {
        WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
        WORKROOM_SCHEDULER_POLL: '200ms',
        WORKROOM_SCHEDULER_RETRY_DELAYS: RETRY.map((ms) => `${ms}ms`).join(','),
        WORKROOM_SCHEDULER_LEASE: '3s',
      },
      {
        clock,
        jobHandler: (services) => {
          const real = new BotJobHandler(services);
          return {
            async run(job, signal) {
              if (!job.kind.startsWith('test.')) return real.run(job, signal);
              runs.push({ ...job, at: clock.now() });
              if (job.kind === 'test.flaky' && job.attempts <= Number(job.payload.fail)) {
                throw new Error(`flaky attempt ${job.attempts}`);
              }
            },
          };
        },
      },
    );
    w = await World.create(srv.url);
    const org = await w.org();
    member = await w.user({ organization_id: org.id });
    bot = await w.bot(member.api);
    sibling = await w.bot(member.api);
    const other = await w.org();
    foreign = await w.bot(other.admin.api);
  });
  // Every answer of these endpoints is checked against the served OpenAPI document at the end.
  const exchanges: RecordedExchange[] = [];
  const OURS = /^\/api\/bots\/[^/]+\/(jobs|data)(\/[^/]+)?$/;
  beforeAll(() => {
    Api.recorder = (x) => {
      if (OURS.test(x.path)) exchanges.push(x);
    };
  });
  afterAll(async () => {
    Api.recorder = undefined;
    await srv?.close();
    await rx?.close();
  });

  const jobs = (botId: string) => `/api/bots/${botId}/jobs`;
  const data = (botId: string, key?: string) =>
    key === undefined ? `/api/bots/${botId}/data` : `/api/bots/${botId}/data/${encodeURIComponent(key)}`;
  const inMs = (ms: number) => new Date(clock.now() + ms).toISOString();
  const job = async (api: Api, botId: string, id: string) =>
    (expectStatus(await api.get(jobs(botId), { query: { limit: 100 } }), 200).items as any[]).find(
      (j) => j.id === id,
    );
  /** Waits until none of these schedulers runs a job. */
  const idle = async (schedulers: Scheduler[] = [srv.app.scheduler]) =>
    expect
      .poll(() => schedulers.reduce((n, s) => n + s.running().length, 0), { timeout: 10_000, interval: 20 })
      .toBe(0);
  /**
   * A recorded job due now, waited for until it ran and the scheduler runs nothing more: every job due
   * before it that was going to be claimed has been claimed and run (claims take the earliest first).
   */
  const sentinel = async (schedulers?: Scheduler[]) => {
    const s = expectStatus(await bot.api.post(jobs(bot.id), { kind: 'test.sentinel', run_at: inMs(0) }), 201);
    await expect.poll(() => runsOf(s.id).length, { timeout: 10_000 }).toBe(1);
    await idle(schedulers);
  };

  /**
   * Takes a failing job through its first `n` retries: after each failed attempt, checks that the
   * retry is not run a second early, then moves the clock to the retry's run_at (the failed attempt's
   * time plus its delay, up to 10 % later) and waits for that attempt.
   */
  const retryThrough = async (id: string, n: number) => {
    for (let attempt = 1; attempt <= n; attempt++) {
      await expect
        .poll(
          async () => {
            const x = await job(bot.api, bot.id, id);
            return x?.state === 'pending' && x.attempts === attempt ? x : undefined;
          },
          { timeout: 8000 },
        )
        .toBeDefined();
      const pending = await job(bot.api, bot.id, id);
      const failedAt = runsOf(id)[attempt - 1]!.at;
      const due = Date.parse(pending.run_at);
      expect(due - failedAt).toBeGreaterThanOrEqual(RETRY[attempt - 1]!);
      expect(due - failedAt).toBeLessThanOrEqual(RETRY[attempt - 1]! * 1.1 + 5000);
      await moveClockTo(srv, clock, due - 1000);
      await sentinel();
      expect(runsOf(id)).toHaveLength(attempt); // not early
      await moveClockTo(srv, clock, due);
      await expect.poll(() => runsOf(id).length, { timeout: 8000 }).toBe(attempt + 1);
    }
  };

  describe('POST|GET /api/bots/{botId}/jobs, DELETE /api/bots/{botId}/jobs/{jobId}', () => {
    it('runs a job once, when it is due, with its payload', async () => {
      const runAt = inMs(400);
      const j = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.once', payload: { n: 1, s: 'x' }, run_at: runAt }),
        201,
      );
      expect(j).toMatchObject({
        bot_id: bot.id,
        kind: 'test.once',
        payload: { n: 1, s: 'x' },
        run_at: runAt,
        state: 'pending',
        attempts: 0,
        dedupe_key: null,
        created: true,
      });
      await expect
        .poll(async () => (await job(bot.api, bot.id, j.id))?.state, { timeout: 5000 })
        .toBe('done');
      const done = await job(bot.api, bot.id, j.id);
      expect(done).toMatchObject({ attempts: 1, last_error: null });
      expect(done.done_at).not.toBeNull();
      expect(runsOf(j.id)).toHaveLength(1);
      const r = runsOf(j.id)[0]!;
      expect(r).toMatchObject({ bot_id: bot.id, kind: 'test.once', payload: { n: 1, s: 'x' }, attempts: 1 });
      expect(r.at).toBeGreaterThanOrEqual(Date.parse(runAt)); // never early
      // Woken by its timer, not the poll (200 ms here): late by a few ms on an idle machine.
      console.log(`[scheduler-api ${srv.dialect}] job started ${r.at - Date.parse(runAt)} ms after run_at`);
      await sentinel();
      expect(runsOf(j.id)).toHaveLength(1);
    });

    it('a run_at within the last minute runs at once (clock skew)', async () => {
      const j = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.now', run_at: inMs(-5000) }),
        201,
      );
      await expect.poll(() => runsOf(j.id).length, { timeout: 3000 }).toBe(1);
    });

    it('dedupe_key: the same key answers the existing job (200), and it runs once', async () => {
      const key = uniq('standup:2025-06-02');
      const first = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.dedupe', run_at: inMs(500), dedupe_key: key }),
        201,
      );
      const again = await bot.api.post(jobs(bot.id), {
        kind: 'test.dedupe',
        run_at: inMs(900),
        payload: { other: true },
        dedupe_key: key,
      });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: first.id, created: false, payload: {}, run_at: first.run_at });
      // Another bot may use the same key.
      expectStatus(
        await sibling.api.post(jobs(sibling.id), { kind: 'x', run_at: inMs(60_000), dedupe_key: key }),
        201,
      );
      await expect.poll(() => runsOf(first.id).length, { timeout: 5000 }).toBe(1);
      // Still the same job once done: no second one.
      const late = await bot.api.post(jobs(bot.id), {
        kind: 'test.dedupe',
        run_at: inMs(100),
        dedupe_key: key,
      });
      expect(late.status).toBe(200);
      expect(late.body).toMatchObject({ id: first.id, state: 'done' });
      await sentinel();
      expect(runs.filter((r) => r.dedupe_key === key)).toHaveLength(1);
    });

    it('a throwing handler is retried after each delay, then succeeds', async () => {
      const j = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.flaky', payload: { fail: 2 }, run_at: inMs(0) }),
        201,
      );
      await retryThrough(j.id, 2);
      await expect
        .poll(async () => (await job(bot.api, bot.id, j.id))?.state, { timeout: 8000 })
        .toBe('done');
      const r = runsOf(j.id);
      expect(r.map((x) => x.attempts)).toEqual([1, 2, 3]);
      expect(r[1]!.at - r[0]!.at).toBeGreaterThanOrEqual(RETRY[0]!);
      expect(r[2]!.at - r[1]!.at).toBeGreaterThanOrEqual(RETRY[1]!);
      expect(await job(bot.api, bot.id, j.id)).toMatchObject({ attempts: 3, last_error: null });
    });

    it('fails for good when every attempt threw, with the last error', async () => {
      const j = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.flaky', payload: { fail: 99 }, run_at: inMs(0) }),
        201,
      );
      await retryThrough(j.id, 2);
      await expect
        .poll(async () => (await job(bot.api, bot.id, j.id))?.state, { timeout: 8000 })
        .toBe('failed');
      expect(await job(bot.api, bot.id, j.id)).toMatchObject({ attempts: 3, last_error: 'flaky attempt 3' });
      await moveClockTo(srv, clock, clock.now() + RETRY[1]! * 2);
      await sentinel();
      expect(runsOf(j.id)).toHaveLength(3);
    });

    it('cancels a pending job (again: the same answer); a finished one is 409, an unknown one 404', async () => {
      const j = expectStatus(
        await bot.api.post(jobs(bot.id), { kind: 'test.cancel', run_at: inMs(700) }),
        201,
      );
      const c = expectStatus(await bot.api.delete(`${jobs(bot.id)}/${j.id}`), 200);
      expect(c).toMatchObject({ id: j.id, state: 'cancelled' });
      expect(c.done_at).not.toBeNull();
      expect(expectStatus(await bot.api.delete(`${jobs(bot.id)}/${j.id}`), 200).state).toBe('cancelled');
      const d = expectStatus(await bot.api.post(jobs(bot.id), { kind: 'test.done', run_at: inMs(0) }), 201);
      await expect
        .poll(async () => (await job(bot.api, bot.id, d.id))?.state, { timeout: 3000 })
        .toBe('done');
      const busy = await bot.api.delete(`${jobs(bot.id)}/${d.id}`);
      expect(busy.status).toBe(409);
      expect(busy.body.error.code).toBe('conflict');
      expect((await bot.api.delete(`${jobs(bot.id)}/00000000-0000-7000-8000-000000000000`)).status).toBe(404);
      expect((await bot.api.delete(`${jobs(bot.id)}/not-a-uuid`)).status).toBe(400);
      // Another bot's job is not found through one's own path.
      const s = expectStatus(
        await sibling.api.post(jobs(sibling.id), { kind: 'x', run_at: inMs(60_000) }),
        201,
      );
      expect((await bot.api.delete(`${jobs(bot.id)}/${s.id}`)).status).toBe(404);
      await moveClockTo(srv, clock, Date.parse(j.run_at) + 1);
      await sentinel();
      expect(runsOf(j.id)).toHaveLength(0);
    });

    it('lists in run_at order, by state, page by page', async () => {
      const b = await w.bot(member.api);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          expectStatus(
            await b.api.post(jobs(b.id), { kind: 'later', run_at: inMs(3_600_000 - i * 1000) }),
            201,
          ).id,
        );
      }
      const p1 = expectStatus(await b.api.get(jobs(b.id), { query: { limit: 2 } }), 200);
      const p2 = expectStatus(
        await b.api.get(jobs(b.id), { query: { limit: 2, cursor: p1.next_cursor } }),
        200,
      );
      const p3 = expectStatus(
        await b.api.get(jobs(b.id), { query: { limit: 2, cursor: p2.next_cursor } }),
        200,
      );
      expect([...p1.items, ...p2.items, ...p3.items].map((j: any) => j.id)).toEqual([...ids].reverse());
      expect(p3.next_cursor).toBeNull();
      expectStatus(await b.api.delete(`${jobs(b.id)}/${ids[0]}`), 200);
      const cancelled = expectStatus(await b.api.get(jobs(b.id), { query: { state: 'cancelled' } }), 200);
      expect(cancelled.items.map((j: any) => j.id)).toEqual([ids[0]]);
      expect(
        expectStatus(await b.api.get(jobs(b.id), { query: { state: 'pending' } }), 200).items,
      ).toHaveLength(4);
      for (const query of [
        { state: 'sleeping' },
        { limit: 0 },
        { limit: 101 },
        { cursor: 'nonsense' },
        { x: 1 },
      ]) {
        expect((await b.api.get(jobs(b.id), { query })).status, JSON.stringify(query)).toBe(400);
      }
    });

    it('refuses bad input, naming the field', async () => {
      const ok = { kind: 'k', run_at: inMs(60_000) };
      const cases: [Record<string, unknown>, string][] = [
        [{ run_at: ok.run_at }, 'kind'],
        [{ ...ok, kind: '' }, 'kind'],
        [{ ...ok, kind: 'Upper' }, 'kind'],
        [{ ...ok, kind: 'with space' }, 'kind'],
        [{ ...ok, kind: 'k'.repeat(65) }, 'kind'],
        [{ ...ok, kind: 5 }, 'kind'],
        [{ kind: 'k' }, 'run_at'],
        [{ ...ok, run_at: 'tomorrow' }, 'run_at'],
        [{ ...ok, run_at: '2030-01-01T09:00:00' }, 'run_at'], // no offset
        [{ ...ok, run_at: inMs(-120_000) }, 'run_at'],
        [{ ...ok, run_at: inMs(367 * 86_400_000) }, 'run_at'],
        [{ ...ok, payload: [1, 2] }, 'payload'],
        [{ ...ok, payload: 'text' }, 'payload'],
        [{ ...ok, payload: { big: 'x'.repeat(16 * 1024) } }, 'payload'],
        [{ ...ok, dedupe_key: '' }, 'dedupe_key'],
        [{ ...ok, dedupe_key: 'd'.repeat(201) }, 'dedupe_key'],
        [{ ...ok, dedupe_key: 'a\nb' }, 'dedupe_key'],
        [{ ...ok, state: 'done' }, 'state'],
      ];
      for (const [body, field] of cases) {
        const r = await bot.api.post(jobs(bot.id), body);
        expect(r.status, JSON.stringify(body).slice(0, 100)).toBe(400);
        expect(r.body.error.code).toBe('invalid_input');
        expect(r.body.error.field, JSON.stringify(body).slice(0, 100)).toBe(field);
      }
      // At the limits: accepted.
      expectStatus(
        await bot.api.post(jobs(bot.id), {
          kind: 'a-z0-9_.:'.padEnd(64, 'x'),
          run_at: inMs(365 * 86_400_000),
          dedupe_key: 'd'.repeat(200),
          payload: { big: 'x'.repeat(16 * 1024 - 20) },
        }),
        201,
      );
      // Stored in UTC, whatever offset it was given with.
      const day = new Date(clock.now() + 30 * 86_400_000).toISOString().slice(0, 10);
      const local = expectStatus(
        await bot.api.post(jobs(bot.id), { ...ok, run_at: `${day}T10:00:00+02:00` }),
        201,
      );
      expect(local.run_at).toBe(`${day}T08:00:00.000Z`);
    });

    it('a bot reaches only its own jobs: other bot 403, other organization 404, users 403', async () => {
      const s = await bot.api.post(jobs(sibling.id), { kind: 'k', run_at: inMs(60_000) });
      expect(s.status).toBe(403);
      expect(s.body.error.code).toBe('forbidden');
      expect((await bot.api.get(jobs(sibling.id))).status).toBe(403);
      expect((await bot.api.post(jobs(foreign.id), { kind: 'k', run_at: inMs(60_000) })).status).toBe(404);
      expect((await bot.api.get(jobs(foreign.id))).status).toBe(404);
      expect((await bot.api.get(jobs('00000000-0000-7000-8000-000000000000'))).status).toBe(404);
      expect((await member.api.get(jobs(bot.id))).status).toBe(403);
      expect((await member.api.post(jobs(bot.id), { kind: 'k', run_at: inMs(60_000) })).status).toBe(403);
      expect((await w.anon.get(jobs(bot.id))).status).toBe(401);
      // Any key of the bot, whatever its scopes (the spec's scope list has none for this).
      const k = expectStatus(
        await member.api.post(`/api/bots/${bot.id}/api-keys`, { scopes: ['users:read'] }),
        201,
      );
      expectStatus(await w.anon.as(k.key).post(jobs(bot.id), { kind: 'k', run_at: inMs(60_000) }), 201);
    });

    it('at most 10,000 open jobs per bot', async () => {
      const b = await w.bot(member.api);
      const now = new Date().toISOString();
      const runAt = inMs(3_600_000);
      const orgId = await orgOf(b);
      await srv.app.services.storage.transaction(async (s) => {
        for (let i = 0; i < 10_000; i += 500) {
          await s.db
            .insertInto('scheduled_jobs')
            .values(
              Array.from({ length: 500 }, (_, k) => ({
                id: `${String(i + k).padStart(8, '0')}-0000-7000-8000-000000000000`,
                org_id: orgId,
                bot_id: b.id,
                kind: 'bulk',
                dedupe_key: null,
                payload: '{}',
                run_at: runAt,
                state: 'pending' as const,
                attempts: 0,
                lease_until: null,
                last_error: null,
                created_at: now,
                updated_at: now,
                done_at: null,
              })),
            )
            .execute();
        }
      });
      const over = await b.api.post(jobs(b.id), { kind: 'k', run_at: inMs(60_000) });
      expect(over.status).toBe(400);
      expect(over.body.error.message).toMatch(/10000 pending jobs/);
      // Freeing one makes room again.
      expectStatus(await b.api.delete(`${jobs(b.id)}/00000000-0000-7000-8000-000000000000`), 200);
      expectStatus(await b.api.post(jobs(b.id), { kind: 'k', run_at: inMs(60_000) }), 201);
    });

    it('three scheduler loops on one database never run one job twice', async () => {
      const record = { run: async (j: ScheduledJob) => void runs.push({ ...j, at: clock.now() }) };
      const extra = [1, 2].map(
        () =>
          new Scheduler({
            storage: srv.app.services.storage,
            log: srv.app.services.log,
            config: srv.app.services.config.scheduler,
            clock,
            handler: record,
          }),
      );
      for (const s of extra) s.start();
      try {
        const b = await w.bot(member.api);
        const runAt = inMs(600);
        const ids = new Set<string>();
        for (let i = 0; i < 150; i += 15) {
          const batch = await Promise.all(
            Array.from({ length: 15 }, () => b.api.post(jobs(b.id), { kind: 'test.many', run_at: runAt })),
          );
          for (const r of batch) ids.add(expectStatus(r, 201).id as string);
        }
        const mine = () => runs.filter((r) => ids.has(r.id));
        await expect.poll(() => mine().length, { timeout: 15_000 }).toBeGreaterThanOrEqual(150);
        await sentinel([srv.app.scheduler, ...extra]);
        expect(mine()).toHaveLength(150);
        expect(new Set(mine().map((r) => r.id)).size).toBe(150);
      } finally {
        await Promise.all(extra.map((s) => s.drain(Date.now() + 2000)));
      }
    });

    it("a custom bot's due job is a job.due event at its webhook, once", async () => {
      const url = rx.hook(uniq('due'));
      const b = await w.bot(member.api, {}, { webhook_url: url, events: ['message.created'] });
      expectStatus(await member.api.post(`/api/bots/${b.id}/webhook-secret`), 201);
      const j = expectStatus(
        await b.api.post(jobs(b.id), {
          kind: 'remind',
          payload: { task: 'water the plants' },
          run_at: inMs(300),
          dedupe_key: 'r1',
        }),
        201,
      );
      await expect.poll(() => rx.at(url).length, { timeout: 8000 }).toBe(1);
      const got = rx.at(url)[0]!;
      expect(got.json).toMatchObject({
        event_type: 'job.due',
        bot_id: b.id,
        data: {
          job_id: j.id,
          bot_id: b.id,
          kind: 'remind',
          payload: { task: 'water the plants' },
          run_at: j.run_at,
          dedupe_key: 'r1',
          attempt: 1,
        },
      });
      expect(got.headers['webhook-id']).toBeTruthy();
      expect(await job(b.api, b.id, j.id)).toMatchObject({ state: 'done', attempts: 1 });
      // In the bot's delivery log, and to no other bot.
      const log = expectStatus(await member.api.get(`/api/bots/${b.id}/deliveries`), 200);
      expect(log.items.filter((d: any) => d.event_type === 'job.due')).toHaveLength(1);
      // Sentinel: a later job of the same bot reaches the webhook (its deliveries go in outbox order).
      const later = expectStatus(
        await b.api.post(jobs(b.id), { kind: 'remind', run_at: inMs(0), dedupe_key: 'r2' }),
        201,
      );
      await expect
        .poll(() => rx.at(url).filter((r) => r.json.data?.job_id === later.id).length, { timeout: 8000 })
        .toBe(1);
      await idle();
      expect(
        rx.received.filter((r) => r.json.event_type === 'job.due' && r.json.data?.job_id === j.id),
      ).toHaveLength(1);
    });
  });

  describe('GET|PUT|DELETE /api/bots/{botId}/data/{key}, GET /api/bots/{botId}/data', () => {
    it('stores, reads, overwrites (version +1), lists and deletes', async () => {
      const key = 'poll/42/votes';
      const put = expectStatus(await bot.api.put(data(bot.id, key), { value: { yes: 1, no: 0 } }), 200);
      expect(put).toMatchObject({ key, value: { yes: 1, no: 0 }, version: 1 });
      expect(put.created_at).toBe(put.updated_at);
      expect(expectStatus(await bot.api.get(data(bot.id, key)), 200)).toMatchObject({ key, version: 1 });
      const v2 = expectStatus(await bot.api.put(data(bot.id, key), { value: [1, 'two', null] }), 200);
      expect(v2).toMatchObject({ value: [1, 'two', null], version: 2, created_at: put.created_at });
      for (const value of ['text', 42, true, null]) {
        expect(expectStatus(await bot.api.put(data(bot.id, 'scalar'), { value }), 200).value).toEqual(value);
      }
      const list = expectStatus(await bot.api.get(data(bot.id), { query: { prefix: 'poll/' } }), 200);
      expect(list.items.map((i: any) => [i.key, i.version])).toEqual([[key, 2]]);
      expect(list.next_cursor).toBeNull();
      expect(expectStatus(await bot.api.delete(data(bot.id, key)), 200)).toEqual({ key, deleted: true });
      expect((await bot.api.get(data(bot.id, key))).status).toBe(404);
      expect((await bot.api.delete(data(bot.id, key))).status).toBe(404);
      // A deleted key starts again at version 1.
      expect(expectStatus(await bot.api.put(data(bot.id, key), { value: 1 }), 200).version).toBe(1);
    });

    it('compare-and-set with if_version: 0 = create only; a stale version is 409 conflict', async () => {
      const key = uniq('cas');
      expect(
        expectStatus(await bot.api.put(data(bot.id, key), { value: 'a', if_version: 0 }), 200).version,
      ).toBe(1);
      const again = await bot.api.put(data(bot.id, key), { value: 'b', if_version: 0 });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('conflict');
      expect(
        expectStatus(await bot.api.put(data(bot.id, key), { value: 'b', if_version: 1 }), 200).version,
      ).toBe(2);
      const stale = await bot.api.put(data(bot.id, key), { value: 'c', if_version: 1 });
      expect(stale.status).toBe(409);
      expect(stale.body.error.message).toMatch(/version 2, not 1/);
      expect(expectStatus(await bot.api.get(data(bot.id, key)), 200)).toMatchObject({
        value: 'b',
        version: 2,
      });
      expect((await bot.api.put(data(bot.id, uniq('absent')), { value: 1, if_version: 3 })).status).toBe(409);
      expect((await bot.api.delete(data(bot.id, key), { query: { if_version: 1 } })).status).toBe(409);
      expectStatus(await bot.api.delete(data(bot.id, key), { query: { if_version: 2 } }), 200);
    });

    it('concurrent compare-and-set: exactly one writer of a version wins', async () => {
      const key = uniq('race');
      expectStatus(await bot.api.put(data(bot.id, key), { value: 0 }), 200);
      const tries = await Promise.all(
        Array.from({ length: 8 }, (_, i) => bot.api.put(data(bot.id, key), { value: i, if_version: 1 })),
      );
      expect(tries.filter((r) => r.status === 200)).toHaveLength(1);
      expect(tries.filter((r) => r.status === 409)).toHaveLength(7);
      // Without if_version every write lands, one after the other.
      await Promise.all(Array.from({ length: 8 }, (_, i) => bot.api.put(data(bot.id, key), { value: i })));
      expect(expectStatus(await bot.api.get(data(bot.id, key)), 200).version).toBe(10);
    });

    it('lists by prefix in byte order, page by page, and stops a page at 1 MB of values', async () => {
      const b = await w.bot(member.api);
      const keys = ['a', 'a-b', 'a.b', 'a/b', 'a/c', 'a:b', 'aB', 'ab', 'b', 'B', 'a_b', 'Z'];
      for (const k of keys) expectStatus(await b.api.put(data(b.id, k), { value: k }), 200);
      const all = expectStatus(await b.api.get(data(b.id), { query: { limit: 100 } }), 200);
      expect(all.items.map((i: any) => i.key)).toEqual([...keys].sort()); // JS sort is by UTF-16 code unit
      const a = expectStatus(await b.api.get(data(b.id), { query: { prefix: 'a' } }), 200);
      expect(a.items.map((i: any) => i.key)).toEqual([
        'a',
        'a-b',
        'a.b',
        'a/b',
        'a/c',
        'a:b',
        'aB',
        'a_b',
        'ab',
      ]);
      const slash = expectStatus(await b.api.get(data(b.id), { query: { prefix: 'a/' } }), 200);
      expect(slash.items.map((i: any) => i.key)).toEqual(['a/b', 'a/c']);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const r = expectStatus(
          await b.api.get(data(b.id), { query: { prefix: 'a', limit: 4, cursor } }),
          200,
        );
        seen.push(...r.items.map((i: any) => i.key));
        cursor = r.next_cursor ?? undefined;
        if (!cursor) break;
      }
      expect(seen).toEqual(a.items.map((i: any) => i.key));
      // Big values: a page holds at most about 1 MB of them.
      const big = 'x'.repeat(60 * 1024);
      for (let i = 0; i < 20; i++)
        expectStatus(await b.api.put(data(b.id, `big/${String(i).padStart(2, '0')}`), { value: big }), 200);
      const p = expectStatus(await b.api.get(data(b.id), { query: { prefix: 'big/', limit: 100 } }), 200);
      expect(p.items.length).toBeLessThan(20);
      expect(p.items.length).toBeGreaterThan(10);
      expect(p.next_cursor).not.toBeNull();
      const rest = expectStatus(
        await b.api.get(data(b.id), { query: { prefix: 'big/', limit: 100, cursor: p.next_cursor } }),
        200,
      );
      expect(p.items.length + rest.items.length).toBe(20);
    });

    it('refuses bad input, naming the field', async () => {
      const bad: [string, string, unknown][] = [
        ['PUT', data(bot.id, 'has space'), { value: 1 }],
        ['PUT', data(bot.id, 'ümlaut'), { value: 1 }],
        ['PUT', data(bot.id, 'k'.repeat(201)), { value: 1 }],
        ['PUT', data(bot.id, 'k'), {}],
        ['PUT', data(bot.id, 'k'), { value: 'x'.repeat(64 * 1024) }],
        ['PUT', data(bot.id, 'k'), { value: 1, if_version: -1 }],
        ['PUT', data(bot.id, 'k'), { value: 1, if_version: 1.5 }],
        ['PUT', data(bot.id, 'k'), { value: 1, if_version: 'one' }],
        ['PUT', data(bot.id, 'k'), { value: 1, extra: true }],
        ['GET', data(bot.id, 'bad*key'), undefined],
        ['DELETE', data(bot.id, 'k'), undefined],
      ];
      const fields = [
        'key',
        'key',
        'key',
        'value',
        'value',
        'if_version',
        'if_version',
        'if_version',
        'extra',
        'key',
      ];
      for (const [i, [method, path, body]] of bad.entries()) {
        const r =
          method === 'DELETE'
            ? await bot.api.delete(path, { query: { if_version: 0 } })
            : await bot.api.request(method, path, { body });
        expect(r.status, `${method} ${path}`).toBe(400);
        expect(r.body.error.code).toBe('invalid_input');
        if (fields[i]) expect(r.body.error.field, `${method} ${path}`).toBe(fields[i]);
      }
      for (const query of [
        { prefix: 'a b' },
        { prefix: 'p'.repeat(201) },
        { limit: 0 },
        { limit: 101 },
        { cursor: '!!' },
      ]) {
        expect((await bot.api.get(data(bot.id), { query })).status, JSON.stringify(query)).toBe(400);
      }
      // At the limits: accepted.
      expectStatus(
        await bot.api.put(data(bot.id, 'K'.repeat(200)), { value: 'x'.repeat(64 * 1024 - 2) }),
        200,
      );
      // A key holding "/" is one path segment when encoded; unencoded it is another path.
      expectStatus(await bot.api.put(data(bot.id, 'a/b/c'), { value: 1 }), 200);
      expect((await bot.api.get(`/api/bots/${bot.id}/data/a/b/c`)).status).toBe(404);
    });

    it('a bot reaches only its own data: other bot 403, other organization 404, users 403', async () => {
      expectStatus(await sibling.api.put(data(sibling.id, 'secret'), { value: 's' }), 200);
      for (const [method, path] of [
        ['GET', data(sibling.id, 'secret')],
        ['PUT', data(sibling.id, 'secret')],
        ['DELETE', data(sibling.id, 'secret')],
        ['GET', data(sibling.id)],
      ] as const) {
        const r = await bot.api.request(method, path, { body: method === 'PUT' ? { value: 1 } : undefined });
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.body.error.code).toBe('forbidden');
      }
      expect((await bot.api.get(data(foreign.id, 'secret'))).status).toBe(404);
      expect((await bot.api.put(data(foreign.id, 'x'), { value: 1 })).status).toBe(404);
      expect((await bot.api.get(data(foreign.id))).status).toBe(404);
      expect((await member.api.get(data(bot.id, 'x'))).status).toBe(403);
      expect((await member.api.put(data(bot.id, 'x'), { value: 1 })).status).toBe(403);
      expect((await w.anon.get(data(bot.id))).status).toBe(401);
      // Each bot sees its own documents only, even under the same key.
      expectStatus(await bot.api.put(data(bot.id, 'secret'), { value: 'mine' }), 200);
      expect(expectStatus(await sibling.api.get(data(sibling.id, 'secret')), 200).value).toBe('s');
      expect(expectStatus(await bot.api.get(data(bot.id, 'secret')), 200).value).toBe('mine');
    });

    it('at most 10,000 keys per bot; existing keys can still be written', async () => {
      const b = await w.bot(member.api);
      const now = new Date().toISOString();
      const orgId = await orgOf(b);
      await srv.app.services.storage.transaction(async (s) => {
        for (let i = 0; i < 10_000; i += 500) {
          await s.db
            .insertInto('bot_data')
            .values(
              Array.from({ length: 500 }, (_, k) => ({
                bot_id: b.id,
                key: `k${i + k}`,
                org_id: orgId,
                value: '1',
                version: 1,
                created_at: now,
                updated_at: now,
              })),
            )
            .execute();
        }
      });
      const over = await b.api.put(data(b.id, 'one-more'), { value: 1 });
      expect(over.status).toBe(400);
      expect(over.body.error).toMatchObject({ code: 'invalid_input', field: 'key' });
      expect(over.body.error.message).toMatch(/10000 keys/);
      expect(expectStatus(await b.api.put(data(b.id, 'k7'), { value: 2 }), 200).version).toBe(2);
      expectStatus(await b.api.delete(data(b.id, 'k7')), 200);
      expectStatus(await b.api.put(data(b.id, 'one-more'), { value: 1 }), 200);
    });
  });

  it('every answer above matches the served OpenAPI document', async () => {
    const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    const r = checkAgainstOpenApi(doc, exchanges);
    expect(r.problems).toEqual([]);
    expect([...r.statuses].sort()).toEqual([200, 201, 400, 401, 403, 404, 409]);
    expect(r.validated).toBeGreaterThan(100);
  });

  async function orgOf(b: BotHandle): Promise<string> {
    return expectStatus(await member.api.get(`/api/bots/${b.id}`), 200).org_id as string;
  }
});

describe('scheduler configuration', () => {
  it('has defaults and refuses values out of range, naming the variable', () => {
    expect(loadConfig({}).scheduler).toEqual({
      graceMs: 6 * 3_600_000,
      retryDelaysMs: [30_000, 120_000, 600_000],
      leaseMs: 60_000,
      jobTimeoutMs: 300_000,
      pollMs: 5000,
      concurrency: 8,
    });
    const bad: Record<string, string>[] = [
      { WORKROOM_SCHEDULER_GRACE: '25h' },
      { WORKROOM_SCHEDULER_GRACE: 'soon' },
      { WORKROOM_SCHEDULER_RETRY_DELAYS: '7h,6h' },
      { WORKROOM_SCHEDULER_RETRY_DELAYS: '1s,x' },
      { WORKROOM_SCHEDULER_RETRY_DELAYS: Array(11).fill('1s').join(',') },
      { WORKROOM_SCHEDULER_LEASE: '500ms' },
      { WORKROOM_SCHEDULER_JOB_TIMEOUT: '2h' },
      { WORKROOM_SCHEDULER_POLL: '10ms' },
      { WORKROOM_SCHEDULER_CONCURRENCY: '0' },
    ];
    for (const env of bad) {
      const name = Object.keys(env)[0]!;
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      try {
        loadConfig(env);
      } catch (e) {
        expect((e as ConfigError).problems.join(' ')).toContain(name);
      }
    }
    expect(
      loadConfig({ WORKROOM_SCHEDULER_RETRY_DELAYS: '6h,6h', WORKROOM_SCHEDULER_GRACE: '24h' }).scheduler,
    ).toMatchObject({
      retryDelaysMs: [21_600_000, 21_600_000],
      graceMs: 86_400_000,
    });
  });
});
