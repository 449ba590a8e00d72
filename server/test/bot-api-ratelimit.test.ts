import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenBucketLimiter } from '../src/domain/token-bucket.js';
import { expectStatus } from './helpers/client.js';
import { FrozenClock } from './helpers/frozen-clock.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

describe('token bucket', () => {
  it('allows the burst, then refills at the rate', () => {
    let t = 0;
    const l = new TokenBucketLimiter(() => t);
    for (let i = 0; i < 3; i++) expect(l.take('a', 2, 3).allowed).toBe(true);
    const denied = l.take('a', 2, 3);
    expect(denied).toMatchObject({ allowed: false, remaining: 0, limit: 3, retryAfterSeconds: 1 });
    expect(l.take('b', 2, 3).allowed).toBe(true); // another key is untouched
    t = 500; // half a second: one token at 2/s
    expect(l.take('a', 2, 3).allowed).toBe(true);
    expect(l.take('a', 2, 3).allowed).toBe(false);
    t = 10_000;
    const full = l.take('a', 2, 3);
    expect(full).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 1 });
  });
});

describe('token bucket on an epoch clock', () => {
  it('a clock stepped backwards neither refills nor empties a bucket', () => {
    let t = 1_800_000_000_000;
    const l = new TokenBucketLimiter(() => t);
    expect(l.take('a', 1, 3).allowed).toBe(true); // 2 left
    t -= 3_600_000; // the system clock steps back an hour
    expect(l.take('a', 1, 3)).toMatchObject({ allowed: true, remaining: 1 });
    t += 1000; // one second on from there: one token back
    expect(l.take('a', 1, 3)).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('rate limits over HTTP', () => {
  let srv: TestServer;
  let w: World;
  // The buckets refill only when a test moves this clock, however slow the machine.
  const clock = new FrozenClock();
  beforeAll(async () => {
    srv = await startTestServer(
      {
        WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '1',
        WORKROOM_RATE_LIMIT_BOT_BURST: '3',
        WORKROOM_RATE_LIMIT_USER_PER_SECOND: '1',
        WORKROOM_RATE_LIMIT_USER_BURST: '40',
      },
      { clock },
    );
    w = await World.create(srv.url);
  });
  afterAll(() => srv.close());

  it('a noisy bot key gets 429 with Retry-After and RateLimit-*; other keys are not slowed', async () => {
    const noisy = await w.bot(w.admin.api);
    const quiet = await w.bot(w.admin.api);
    const first = await noisy.api.post('/api/bots/auth');
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('3');
    expect(first.headers.get('ratelimit-remaining')).toBe('2');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    expectStatus(await noisy.api.post('/api/bots/auth'), 200);
    expectStatus(await noisy.api.post('/api/bots/auth'), 200);
    const limited = await noisy.api.post('/api/bots/auth');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    // Every authenticated route is limited, not only one.
    expect((await noisy.api.get(`/api/bots/${noisy.id}/commands`)).status).toBe(429);
    // The quiet key of another bot, and a second key of the same bot, are not affected.
    const q = await quiet.api.post('/api/bots/auth');
    expect(q.status).toBe(200);
    expect(q.headers.get('ratelimit-remaining')).toBe('2');
    const k2 = expectStatus(await w.admin.api.post(`/api/bots/${noisy.id}/api-keys`, {}), 201);
    expectStatus(await noisy.api.post('/api/bots/auth', undefined, { token: k2.key }), 200);
    // Nothing refills while the clock stands; after Retry-After the key works again.
    expect((await noisy.api.post('/api/bots/auth')).status).toBe(429);
    clock.advance(Number(limited.headers.get('retry-after')) * 1000);
    expectStatus(await noisy.api.post('/api/bots/auth'), 200);
  });

  it('users have their own buckets; unauthenticated requests are not counted', async () => {
    const u = await w.user();
    let last;
    let n = 0;
    while (n < 100) {
      n++;
      last = await u.api.get('/api/auth/me');
      if (last.status !== 200) break;
    }
    // The burst of 40 passes (the clock stands: nothing refills meanwhile), then 429.
    expect(n).toBeGreaterThan(40);
    expect(n).toBe(41);
    expect(last!.status).toBe(429);
    expect(last!.headers.get('retry-after')).toBe('1');
    const other = await w.user();
    const res = await other.api.get('/api/auth/me');
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBe('40');
    expect((await w.anon.get('/api/auth/me')).status).toBe(401);
  });

  it('perSecond 0 disables the limit', async () => {
    const off = await startTestServer({
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
      WORKROOM_RATE_LIMIT_BOT_BURST: '1',
    });
    try {
      const ww = await World.create(off.url);
      const b = await ww.bot(ww.admin.api);
      for (let i = 0; i < 5; i++) {
        const res = await b.api.post('/api/bots/auth');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBeNull();
      }
    } finally {
      await off.close();
    }
  });
});
