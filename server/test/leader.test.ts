import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { LEASE_TTL_MS, type LeaderLease } from '../src/scheduler/leader.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';

/** The singleton work's lease (scheduler/leader.ts): one leader among the instances of a database. */
describe('the leader lease', () => {
  it('a lone instance leads (SQLite, or PostgreSQL with one instance)', async () => {
    const srv = await startTestServer();
    try {
      expect(srv.app.services.leader.isLeader).toBe(true);
    } finally {
      await srv.close();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('the leader lease among three instances on one database', () => {
  const instances: { srv: TestServer; clock: TestClock }[] = [];
  const leaders = () => instances.filter((i) => i.srv.app.services.leader.isLeader);
  const lease = (i: (typeof instances)[number]) => i.srv.app.services.leader as LeaderLease;
  /** Instances whose lease was stopped while their server runs on: they renew no more. */
  const stopped = new Set<(typeof instances)[number]>();
  /**
   * Moves the clocks of `group` on by `ms` and waits until each lease of it that runs has renewed since:
   * the sentinel after which "nothing changed" can be checked.
   */
  const advanceAndRenew = async (group: typeof instances, ms: number) => {
    const renewing = group.filter((i) => !stopped.has(i));
    const before = renewing.map((i) => lease(i).renewals);
    for (const i of group) i.clock.advance(ms);
    await vi.waitFor(() => renewing.forEach((i, k) => expect(lease(i).renewals).toBeGreaterThan(before[k]!)));
  };

  beforeAll(async () => {
    const key = randomBytes(32).toString('base64');
    const clock = new TestClock();
    const first = await startTestServer({ WORKROOM_ENCRYPTION_KEY: key }, { clock });
    instances.push({ srv: first, clock });
    for (let i = 0; i < 2; i++) {
      const c = new TestClock();
      const srv = await startTestServer(
        { WORKROOM_ENCRYPTION_KEY: key, ...sameDatabaseAs(first) },
        { clock: c },
      );
      instances.push({ srv, clock: c });
    }
  });
  afterAll(async () => {
    for (const i of instances.slice().reverse()) await i.srv.close();
  });

  it('exactly one leads; when it stops, another takes the lease at its next renewal', async () => {
    expect(leaders()).toHaveLength(1);
    const first = leaders()[0]!;
    // Renewals keep it with the leader.
    await advanceAndRenew(instances, LEASE_TTL_MS / 3);
    expect(leaders()).toEqual([first]);
    // The leader stops (a rolling restart): it gives the lease up, and the next renewal of another
    // instance takes it; the first instance (which owns the schema) is kept for last.
    const stopping = first;
    const rest = instances.filter((i) => i !== stopping);
    if (stopping === instances[0]) {
      // The schema's owner (closed last) leads: stop its lease as its instance's stop would.
      await lease(stopping).stop();
      stopped.add(stopping);
    } else {
      instances.splice(instances.indexOf(stopping), 1);
      await stopping.srv.close();
    }
    expect(rest.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(0);
    for (const i of rest) i.clock.advance(LEASE_TTL_MS / 3);
    await vi.waitFor(() => expect(rest.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(1));
  });

  it('a lease its holder stopped renewing (a crash) is taken once it expired, not before', async () => {
    const holder = leaders()[0]!;
    const others = instances.filter((i) => i !== holder && !i.srv.app.services.leader.isLeader);
    // The holder's clock stands still (it renews nothing); the others' move on, a renewal short of the
    // expiry: the lease is still the holder's.
    await advanceAndRenew(others, LEASE_TTL_MS - LEASE_TTL_MS / 3);
    expect(others.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(0);
    for (const i of others) i.clock.advance(LEASE_TTL_MS / 3 + 1000);
    await vi.waitFor(() => expect(others.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(1));
  });
});
