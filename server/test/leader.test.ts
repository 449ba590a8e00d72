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
    for (const i of instances) i.clock.advance(LEASE_TTL_MS / 3);
    await new Promise((r) => setTimeout(r, 200));
    expect(leaders()).toEqual([first]);
    // The leader stops (a rolling restart): it gives the lease up, and the next renewal of another
    // instance takes it; the first instance (which owns the schema) is kept for last.
    const stopping = first;
    const rest = instances.filter((i) => i !== stopping);
    if (stopping === instances[0]) {
      // The schema's owner (closed last) leads: stop its lease as its instance's stop would.
      await (stopping.srv.app.services.leader as LeaderLease).stop();
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
    for (const i of others) i.clock.advance(LEASE_TTL_MS - LEASE_TTL_MS / 3);
    await new Promise((r) => setTimeout(r, 200));
    expect(others.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(0);
    for (const i of others) i.clock.advance(LEASE_TTL_MS / 3 + 1000);
    await vi.waitFor(() => expect(others.filter((i) => i.srv.app.services.leader.isLeader)).toHaveLength(1));
  });
});
