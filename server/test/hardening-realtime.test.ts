import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { expectStatus } from './helpers/client.js';
import { closeAll, openMany, openPreAuth, type PreAuthSocket } from './helpers/live-flood.js';
import { LiveClient } from './helpers/realtime.js';
import { startResumeAttack } from './helpers/resume-attacker.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Issue 22, points 3 and 4, for the live stream (docs/REALTIME.md "Limits"): connections that never
 * authenticate cannot lock other clients out, and a user who resumes from far back, again and again,
 * cannot slow down another organization's requests. On Linux every 127.x.y.z address is the loopback:
 * sockets bound to 127.0.0.2 and up are other clients than the user on 127.0.0.1.
 */

const statuses = (socks: PreAuthSocket[]) => {
  const out: Record<number, number> = {};
  for (const s of socks) out[s.status] = (out[s.status] ?? 0) + 1;
  return out;
};

describe('realtime hardening: the pre-auth pool is shared per client address', () => {
  let srv: TestServer;
  let user: UserHandle;

  beforeAll(async () => {
    // The authentication window is long here: on a loaded machine opening 1,100 sockets took more than
    // its default 5 s, and the first 50, closed at the window's end, made room for 50 more (CI: 100 held).
    // The window itself is tested below.
    srv = await startTestServer({ WORKROOM_REALTIME_AUTH_TIMEOUT: '60s' });
    const w = await World.create(srv.url);
    user = await w.user({ organization_id: (await w.org()).id });
  });
  afterAll(async () => {
    await srv.close();
  });

  it('1,100 unauthenticated sockets from one address: 50 are held, the rest refused (503); a user connects live', async () => {
    const flood = await openMany(srv.url, '127.0.0.2', 1100);
    try {
      expect(statuses(flood)).toEqual({ 101: 50, 503: 1050 });
      const refused = flood.find((s) => s.status === 503)!;
      expect(JSON.parse(refused.body)).toMatchObject({
        error: { code: 'unavailable', message: expect.stringMatching(/this address.*at most 50/) },
      });
      expect(srv.app.realtime.pending.unauthenticated).toBe(50);
      const live = await LiveClient.connect(srv.url, user.token);
      expect(live.messages[0]).toMatchObject({ type: 'ready' });
      await live.close();
    } finally {
      await closeAll(flood);
    }
    await expect.poll(() => srv.app.realtime.pending.unauthenticated).toBe(0);
  });

  it('1,100 unauthenticated sockets open from 22 addresses: each address its 50; its 51st is refused; the user connects live', async () => {
    const addresses = Array.from({ length: 22 }, (_, i) => `127.0.0.${i + 2}`);
    const flood = (await Promise.all(addresses.map((a) => openMany(srv.url, a, 50, 50)))).flat();
    try {
      expect(statuses(flood)).toEqual({ 101: 1100 });
      expect(srv.app.realtime.pending.unauthenticated).toBe(1100);
      const fiftyFirst = await openPreAuth(srv.url, '127.0.0.2');
      expect(fiftyFirst.status).toBe(503);
      const live = await LiveClient.connect(srv.url, user.token);
      expect(live.messages[0]).toMatchObject({ type: 'ready' });
      // Every held socket is still open: the user got in beside them, not in place of one.
      expect(srv.app.realtime.pending.unauthenticated).toBe(1100);
      await live.close();
    } finally {
      await closeAll(flood);
    }
    await expect.poll(() => srv.app.realtime.pending.unauthenticated).toBe(0);
  });
});

describe('realtime hardening: a full pool is shared fairly', () => {
  let srv: TestServer;
  let user: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_REALTIME_PREAUTH_MAX: '100' });
    const w = await World.create(srv.url);
    user = await w.user({ organization_id: (await w.org()).id });
  });
  afterAll(async () => {
    await srv.close();
  });

  it('a full pool: a newcomer from another address takes the place of the biggest holder’s oldest socket', async () => {
    const a = await openMany(srv.url, '127.0.0.2', 50, 50);
    const b = await openMany(srv.url, '127.0.0.3', 50, 50);
    try {
      expect(statuses([...a, ...b])).toEqual({ 101: 100 });
      expect(srv.app.realtime.pending.unauthenticated).toBe(100);
      // The pool is full: a client of another address gets in, and the oldest socket of a biggest
      // holder makes room for it (closed with 1013).
      const c = new LiveClient(srv.url);
      await c.opened();
      expect(await Promise.race([a[0]!.closed, b[0]!.closed])).toBe(1013);
      c.send({ type: 'auth', token: user.token });
      await c.waitFor((m) => m.type === 'ready');
      await c.close();
    } finally {
      await closeAll([...a, ...b]);
    }
  });
});

describe('realtime hardening: the authentication window', () => {
  let srv: TestServer;
  let user: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_REALTIME_AUTH_TIMEOUT: '1500ms' });
    const w = await World.create(srv.url);
    user = await w.user({ organization_id: (await w.org()).id });
  });
  afterAll(async () => {
    await srv.close();
  });

  it('a socket that does not authenticate within the window is closed with 4401 and its place is free again', async () => {
    const held = await openMany(srv.url, '127.0.0.4', 50, 50);
    expect(statuses(held)).toEqual({ 101: 50 });
    expect((await openPreAuth(srv.url, '127.0.0.4')).status).toBe(503);
    const codes = await Promise.all(held.map((s) => s.closed));
    expect(new Set(codes)).toEqual(new Set([4401]));
    await expect.poll(() => srv.app.realtime.pending.unauthenticated).toBe(0);
    const again = await openMany(srv.url, '127.0.0.4', 50, 50);
    expect(statuses(again)).toEqual({ 101: 50 });
    await closeAll(again);
  });

  it('an upgrade that carries Authorization: Bearer is live at once, without an auth message', async () => {
    const c = new LiveClient(srv.url, { headers: { authorization: `Bearer ${user.token}` } });
    await c.waitFor((m) => m.type === 'ready');
    expect(srv.app.realtime.pending.unauthenticated).toBe(0);
    await c.close();
  });
});

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]!;
};

describe('realtime hardening: resumes from far back do not slow down another organization', () => {
  const SEEDED = 100_000;
  /** How far back the attacker resumes: the whole seeded history (the configured span allows it). */
  const BACK = 99_000;
  /** POSTs measured alone and during the attack. */
  const SAMPLES = 400;
  const ROUNDS = 4;
  /** Events replayed to the attacker while each attack round's POSTs are measured (at least). */
  const REPLAYED_PER_ROUND = 3_000;
  let srv: TestServer;
  let attacker: UserHandle;
  let poster: UserHandle;
  let channelB: string;
  let head = 0;

  const outboxHead = async (): Promise<number> => {
    const db = srv.app.services.storage.stores.db;
    const q =
      srv.dialect === 'postgres'
        ? sql<{ p: string | null }>`select max(position) as p from events`
        : sql<{ p: number | null }>`select max(seq) as p from events`;
    return Number((await q.execute(db)).rows[0]?.p ?? 0);
  };
  const fanoutCursor = async (): Promise<number> => {
    const q = sql<{ p: string }>`select position as p from outbox_cursors where name = 'webhook-fanout'`;
    return Number((await q.execute(srv.app.services.storage.stores.db)).rows[0]?.p ?? 0);
  };

  /** `n` sequential POSTs of org B's user; each one's latency in ms. */
  /** `n` POSTs' latencies, and more while `until` (if given) is not yet true (at most 60 s). */
  const postLatencies = async (n: number, until?: () => boolean): Promise<number[]> => {
    const out: number[] = [];
    const deadline = performance.now() + 60_000;
    for (let i = 0; i < n || (until && !until() && performance.now() < deadline); i++) {
      const t = performance.now();
      expectStatus(await poster.api.post(`/api/channels/${channelB}/messages`, { content: `b ${i}` }), 201);
      out.push(performance.now() - t);
    }
    return out;
  };

  beforeAll(async () => {
    // The span is raised so that the whole seeded history can be replayed: pacing and the bounds on
    // concurrent resumes, not the span, must keep the other organization's latency.
    srv = await startTestServer({ WORKROOM_REALTIME_RESUME_SPAN: '100000' });
    const w = await World.create(srv.url);
    const orgA = await w.org();
    const orgB = await w.org();
    attacker = await w.user({ organization_id: orgA.id });
    poster = await w.user({ organization_id: orgB.id });
    const channelA = await w.channel(attacker.api);
    channelB = await w.channel(poster.api);
    // One real message of org A gives the shape of the seeded events.
    expectStatus(await attacker.api.post(`/api/channels/${channelA}/messages`, { content: 'model' }), 201);
    const db = srv.app.services.storage.stores.db;
    const model = await db
      .selectFrom('events')
      .select(['data', 'org_id', 'type'])
      .where('type', '=', 'message.created')
      .where('org_id', '=', orgA.id)
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    const data = JSON.parse(model.data) as Record<string, unknown>;
    const started = performance.now();
    const now = new Date().toISOString();
    for (let i = 0; i < SEEDED; i += 1000) {
      const rows = Array.from({ length: 1000 }, (_, j) => ({
        id: randomUUID(),
        org_id: model.org_id,
        type: model.type,
        data: JSON.stringify({
          ...data,
          message_id: randomUUID(),
          content: `seeded message ${i + j} `.padEnd(200, 'x'),
        }),
        created_at: now,
      }));
      await db.insertInto('events').values(rows).execute();
    }
    // A real write wakes the outbox reader (and, on PostgreSQL, its sequencer numbers the seeded rows).
    expectStatus(await attacker.api.post(`/api/channels/${channelA}/messages`, { content: 'wake' }), 201);
    const settle = { timeout: 120_000, interval: 200 };
    if (srv.dialect === 'postgres') {
      const unnumbered = sql<{ n: string }>`select count(*) as n from events where position is null`;
      await vi.waitFor(async () => expect(Number((await unnumbered.execute(db)).rows[0]!.n)).toBe(0), settle);
    }
    head = await outboxHead();
    // The consumers (live hub, webhook fan-out) have read the seeded events: the baseline is quiet.
    await vi.waitFor(() => expect(srv.app.realtime.position).toBeGreaterThanOrEqual(head), settle);
    await vi.waitFor(async () => expect(await fanoutCursor()).toBeGreaterThanOrEqual(head), settle);
    console.log(`seeded ${SEEDED} events in ${Math.round(performance.now() - started)} ms; head ${head}`);
  }, 300_000);
  afterAll(async () => {
    await srv.close();
  });

  it('with the default span (10,000), a resume from further back answers reset at once; one within it replays', async () => {
    const span = loadConfig({}).realtime.resumeSpan;
    expect(span).toBe(10_000);
    const limits = srv.app.realtime.limits;
    const configured = limits.maxReplaySpan;
    limits.maxReplaySpan = span;
    try {
      const far = await LiveClient.connect(srv.url, attacker.token, head - span - 1, { light: true });
      expect(far.messages.map((m) => m.type)).toEqual(['reset', 'ready']);
      await far.close();
      // A paced replay of 10,000 events: seconds on a busy machine (PostgreSQL under CI load: over 5).
      const near = await LiveClient.connect(srv.url, attacker.token, head - span, {
        light: true,
        readyTimeoutMs: 60_000,
      });
      expect(near.events.length).toBeGreaterThanOrEqual(span - 10);
      await near.close();
    } finally {
      limits.maxReplaySpan = configured;
    }
  });

  it('org B’s POST p99 stays within 3× its baseline (never starved) while a user of org A loops resumes over ~100,000 events on 10 sockets', async () => {
    const hub = srv.app.realtime;
    await postLatencies(30); // warm-up
    // Baseline and attack alternate, ROUNDS times: the machine's other load falls on both alike.
    const base: number[] = [];
    const during: number[] = [];
    /** Each round's p99 alone, then under attack. */
    const roundP99: [number, number][] = [];
    let replayed = 0;
    let attackMs = 0;
    let maxRunning = 0;
    let maxQueued = 0;
    const attack = await startResumeAttack({
      url: srv.url,
      token: attacker.token,
      lastSeq: head - BACK,
      sockets: 10,
    });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const baseRound = await postLatencies(SAMPLES / ROUNDS);
        base.push(...baseRound);
        const startedAt = hub.stats.replayedEvents;
        attack.go();
        // The attack is under way: events are being replayed to the attacker.
        await expect
          .poll(() => hub.stats.replayedEvents - startedAt, { timeout: 30_000 })
          .toBeGreaterThan(1000);
        const sampler = setInterval(() => {
          maxRunning = Math.max(maxRunning, hub.pending.replaying);
          maxQueued = Math.max(maxQueued, hub.pending.queued);
        }, 5);
        const replayedBefore = hub.stats.replayedEvents;
        const t0 = performance.now();
        // Measured until this round's share of the replays has happened, not for a fixed number of POSTs:
        // the replay rate moves with the machine (3,112/s to 851/s in CI), and a window of 100 POSTs
        // on a fast run saw too few replays to show anything.
        const duringRound = await postLatencies(
          SAMPLES / ROUNDS,
          () => hub.stats.replayedEvents - replayedBefore > REPLAYED_PER_ROUND,
        );
        during.push(...duringRound);
        roundP99.push([percentile(baseRound, 0.99), percentile(duringRound, 0.99)]);
        attackMs += performance.now() - t0;
        replayed += hub.stats.replayedEvents - replayedBefore;
        clearInterval(sampler);
        await attack.pause();
      }
    } finally {
      const totals = await attack.stop();
      console.log(
        `attack: ${totals.rounds} resumes, ${totals.events} events, ${JSON.stringify(totals.outcomes)}`,
      );
    }
    const b50 = percentile(base, 0.5);
    const b99 = percentile(base, 0.99);
    const d50 = percentile(during, 0.5);
    const d99 = percentile(during, 0.99);
    console.log(
      `[${srv.dialect}] org B POST alone p50 ${b50.toFixed(1)} / p90 ${percentile(base, 0.9).toFixed(1)} / ` +
        `p99 ${b99.toFixed(1)} ms; during the attack p50 ${d50.toFixed(1)} / p90 ${percentile(during, 0.9).toFixed(1)} / ` +
        `p99 ${d99.toFixed(1)} ms (${base.length} POSTs alone and ${during.length} under attack, in ${ROUNDS} alternating rounds; while measured ` +
        `${replayed} events replayed, ${Math.round(replayed / (attackMs / 1000))}/s; replays running at most ` +
        `${maxRunning}, waiting at most ${maxQueued})`,
    );
    // The replays really ran during the measurement, 2 of the user's 10 resumes at a time.
    expect(replayed).toBeGreaterThan(ROUNDS * REPLAYED_PER_ROUND);
    expect(maxRunning).toBe(hub.limits.maxResumesPerUser);
    expect(maxQueued).toBeGreaterThan(0);
    // What this guards against is starvation: before #22 the attack cost seconds (p99 43 → 2,379 ms,
    // 55×). Replays are allowed a quarter of the event loop (replayShare) and their reads cost PostgreSQL
    // CPU on the same two cores, so a slower POST while they run is the design, not a fault: a quiet run
    // on PostgreSQL measured p50 10.5 → 22.9 and p99 35.8 → 69.9 ms. The bound is 3× the baseline with a
    // floor of +100 ms, judged round by round (each attack round against the baseline just before it) in
    // all rounds but one, because one round's spike (a checkpoint, another test file's burst) decides a
    // p99 of 100 samples: CI has seen rounds 74.1 → 157.7 beside 29.2 → 34.1 in one run, and a run where
    // the whole machine was slower throughout (2× missed in every round). Pooled, the attack may never
    // reach starvation: p99 under 1 s.
    const within = (b: number, d: number) => d <= Math.max(3 * b, b + 100);
    console.log(
      `per round p99 (alone → attack): ${roundP99.map(([b, d]) => `${b.toFixed(1)} → ${d.toFixed(1)}`).join(', ')}; pooled ${b99.toFixed(1)} → ${d99.toFixed(1)}`,
    );
    expect(roundP99.filter(([b, d]) => within(b, d)).length).toBeGreaterThanOrEqual(ROUNDS - 1);
    expect(d99).toBeLessThan(1000);
    // The median moves with the machine's other load too: the same bound as the p99's.
    expect(within(b50, d50)).toBe(true);
  }, 300_000);
});
