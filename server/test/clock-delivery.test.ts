import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { Receiver, type Answer, type Received } from './helpers/receiver.js';
import { startTestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Webhook delivery on the test clock (runtime/clock.ts): retries, their back-off and the endpoint's
 * auto-pause are due by the server's clock, so a test moves the clock instead of waiting minutes. A
 * real server delivers to a real HTTP receiver on 127.0.0.1 with the default schedule (60 s, 300 s)
 * or a long one; only business time jumps. The real-clock seam (retries that wait real time) stays
 * in delivery-webhooks.test.ts ('pauses by itself after failures in a row…', 200 ms/400 ms delays).
 *
 * Each test logs its wall time (the clock-driven part) and asserts it is far below the business time
 * it covers.
 */

interface Delivery {
  id: string;
  state: string;
  attempts: number;
  next_attempt_at: string | null;
  attempt_log: { attempt: number; started_at: string; status: number | null; error: string | null }[];
}

async function setUp(env: Record<string, string>) {
  const clock = new TestClock();
  const rx = await Receiver.start();
  const srv = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true', ...env }, { clock });
  const w = await World.create(srv.url);
  const owner = await w.user({ role: 'member' });
  const channel = await w.channel(owner.api);

  async function hookedBot(
    behaviour?: (r: Received, nth: number) => Answer,
  ): Promise<BotHandle & { url: string }> {
    const url = rx.hook(uniq('bot'), behaviour);
    const bot = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    return { ...bot, url };
  }
  const post = async (content: string, as: UserHandle = owner) =>
    expectStatus(await as.api.post(`/api/channels/${channel}/messages`, { content }), 201).id as string;
  const deliveries = async (bot: { id: string }): Promise<Delivery[]> =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query: { limit: '100' } }), 200)
      .items as Delivery[];
  const health = async (bot: { id: string }) =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/webhook`), 200) as {
      paused: boolean;
      paused_reason: string | null;
      consecutive_failures: number;
    };
  /** Resolves once the receiver got `n` requests for `url` (each one is an attempt's proof). */
  const received = async (url: string, n: number) => {
    await expect.poll(() => rx.at(url).length, { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(n);
    return rx.at(url);
  };
  const close = async () => {
    await srv.close();
    await rx.close();
  };
  return { clock, rx, srv, owner, hookedBot, post, deliveries, health, received, close };
}

describe('webhook retries on the test clock', () => {
  let t: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    t = await setUp({}); // the default schedule: retries after 60 s and 300 s (±10 %)
  });
  afterAll(() => t?.close());

  it('a retry after 5 min: 503, 503, then 200 on the default schedule, each attempt when it is due', async () => {
    const bot = await t.hookedBot((_r, nth) => (nth <= 2 ? { status: 503 } : { status: 200 }));
    await t.post('retry me');
    await t.received(bot.url, 1);
    // Recorded as failed, due again after 60 s ± 10 % of the server's clock.
    await expect.poll(async () => (await t.deliveries(bot))[0]?.attempts, { interval: 10 }).toBe(1);
    const [first] = await t.deliveries(bot);
    const firstAt = Date.parse(first!.attempt_log[0]!.started_at);
    const due1 = Date.parse(first!.next_attempt_at!);
    expect(first!.state).toBe('pending');
    expect(due1 - firstAt).toBeGreaterThanOrEqual(54_000 - 50);
    expect(due1 - firstAt).toBeLessThanOrEqual(66_000 + 2000); // + the time until it was recorded

    const t0 = performance.now();
    t.clock.set(due1);
    const got2 = await t.received(bot.url, 2);
    await expect.poll(async () => (await t.deliveries(bot))[0]?.attempts, { interval: 10 }).toBe(2);
    const [second] = await t.deliveries(bot);
    const due2 = Date.parse(second!.next_attempt_at!);
    // The attempt was made at (or after) its due time by the server's clock: the header and the log say so.
    expect(Number(got2[1]!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Math.floor(due1 / 1000));
    const secondAt = Date.parse(second!.attempt_log[1]!.started_at);
    expect(secondAt).toBeGreaterThanOrEqual(due1);
    expect(due2 - secondAt).toBeGreaterThanOrEqual(270_000 - 50); // 5 min ± 10 %
    expect(due2 - secondAt).toBeLessThanOrEqual(330_000 + 2000);

    t.clock.set(due2);
    const got3 = await t.received(bot.url, 3);
    await expect.poll(async () => (await t.deliveries(bot))[0]?.state, { interval: 10 }).toBe('delivered');
    const wallMs = performance.now() - t0;
    console.log(`[clock-delivery] retry after 1 min and 5 min: ${wallMs.toFixed(0)} ms of wall clock`);
    expect(wallMs).toBeLessThan(5000); // ~6 minutes of business time

    const [done] = await t.deliveries(bot);
    expect(done!.attempts).toBe(3);
    expect(done!.attempt_log.map((a) => a.status)).toEqual([503, 503, 200]);
    expect(Date.parse(done!.attempt_log[2]!.started_at)).toBeGreaterThanOrEqual(due2);
    // One delivery throughout: the same webhook-id on every attempt.
    expect(new Set([...got2, got3[2]!].map((r) => r.headers['webhook-id']))).toEqual(new Set([done!.id]));
  });

  it('a Retry-After of 10 min is honoured: the retry is due then, not at 60 s', async () => {
    const bot = await t.hookedBot((_r, nth) =>
      nth === 1 ? { status: 429, headers: { 'retry-after': '600' } } : { status: 200 },
    );
    await t.post('slow down');
    await t.received(bot.url, 1);
    await expect.poll(async () => (await t.deliveries(bot))[0]?.attempts, { interval: 10 }).toBe(1);
    const [d] = await t.deliveries(bot);
    const due = Date.parse(d!.next_attempt_at!);
    expect(due - Date.parse(d!.attempt_log[0]!.started_at)).toBeGreaterThanOrEqual(600_000);
    t.clock.set(due);
    await expect.poll(async () => (await t.deliveries(bot))[0]?.state, { interval: 10 }).toBe('delivered');
    expect(t.rx.at(bot.url)).toHaveLength(2);
  });
});

describe('webhook auto-pause on the test clock', () => {
  let t: Awaited<ReturnType<typeof setUp>>;
  // Four attempts per delivery (the first at once, then these); WORKROOM_WEBHOOK_PAUSE_AFTER is 50.
  // 17 deliveries fail together in rounds of 17 (the endpoint's slots take them all at once): the
  // 50th failure is in the third round, which is sent whole (51 attempts).
  const delays = [60_000, 300_000, 1_800_000];
  const N = 17;
  beforeAll(async () => {
    t = await setUp({
      WORKROOM_WEBHOOK_RETRY_DELAYS: delays.map((d) => `${d / 1000}s`).join(','),
      WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT: '20',
    });
  });
  afterAll(() => t?.close());

  it('a webhook endpoint is auto-paused after 50 failures in a row, tells its owner, and sends nothing more', async () => {
    expect(t.srv.app.services.config.webhooks.pauseAfter).toBe(50);
    const dead = await t.hookedBot(() => ({ status: 503 }));
    for (let i = 0; i < N; i++) await t.post(`m${i}`);
    await t.received(dead.url, N);

    const t0 = performance.now();
    let attempts = 1;
    while (!(await t.health(dead)).paused) {
      expect(attempts).toBeLessThan(4);
      // Every attempt of this round recorded (none in flight, whose lease a jump would cut short).
      await expect
        .poll(async () => (await t.deliveries(dead)).every((d) => d.attempts === attempts), { interval: 10 })
        .toBe(true);
      if ((await t.health(dead)).paused) break;
      t.clock.advance(delays[attempts - 1]! * 1.1 + 1000);
      attempts++;
      await t.received(dead.url, N * attempts);
    }
    const wallMs = performance.now() - t0;
    console.log(`[clock-delivery] auto-pause after 50 failures: ${wallMs.toFixed(0)} ms of wall clock`);
    expect(wallMs).toBeLessThan(5000); // ~7 minutes of business time

    // Paused at the 50th failure, in the third round.
    const h = await t.health(dead);
    expect(h.paused).toBe(true);
    expect(h.paused_reason).toBe('50 failed attempts in a row');
    expect(h.consecutive_failures).toBeGreaterThanOrEqual(50);
    expect(attempts).toBe(3);
    await expect
      .poll(async () => (await t.deliveries(dead)).filter((d) => d.attempts === 3).length, { interval: 10 })
      .toBe(N);
    const notes = expectStatus(await t.owner.api.get('/api/notifications'), 200).items as {
      kind: string;
      data: { bot_id: string };
    }[];
    expect(notes.filter((n) => n.data.bot_id === dead.id).map((n) => n.kind)).toEqual(['webhook.paused']);

    // The deliveries are kept, due, and not sent. The sentinel: another bot whose first attempt of a
    // new message fails; its retry, due after the jump past every retry of the paused bot's, goes out
    // from a claim that had all of those due too. Then nothing more has reached the paused endpoint.
    expect(t.rx.at(dead.url)).toHaveLength(3 * N);
    const sentinel = await t.hookedBot((_r, nth) => (nth === 1 ? { status: 500 } : { status: 200 }));
    await t.post('after the pause');
    await t.received(sentinel.url, 1);
    await expect.poll(async () => (await t.deliveries(sentinel))[0]?.attempts, { interval: 10 }).toBe(1);
    t.clock.advance(2 * 3_600_000);
    await expect
      .poll(async () => (await t.deliveries(sentinel))[0]?.state, { interval: 10 })
      .toBe('delivered');
    expect(t.rx.at(dead.url)).toHaveLength(3 * N);
    const kept = await t.deliveries(dead);
    expect(kept.map((d) => d.state)).toEqual(Array(N + 1).fill('pending'));
    expect(kept.filter((d) => d.attempts === 0)).toHaveLength(1); // 'after the pause', never sent
  });
});
