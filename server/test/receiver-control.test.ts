import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { Receiver, type Answer, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Receiver-controlled delivery (issue 20, point 4) against a real local receiver, on the test clock:
 * `webhook-delivery: abort-message` drops one message (aborted in the delivery log, not retried),
 * `webhook-delivery: disable` pauses the endpoint and notifies the bot's owner, `Retry-After` on any answer
 * holds the endpoint, and the owner's `max_per_minute` spaces deliveries; holds and the limit survive a
 * restart. "Nothing was sent meanwhile" ends on a sentinel: a second bot in the same channel got the same
 * event, so the held bot's delivery exists and was passed over by the same worker.
 */

interface Delivery {
  id: string;
  state: string;
  attempts: number;
  last_error: string | null;
  attempt_log: { attempt: number; started_at: string; status: number | null; error: string | null }[];
}
interface Status {
  paused: boolean;
  paused_reason: string | null;
  consecutive_failures: number;
  held_until: string | null;
  held_reason: string | null;
  max_per_minute: number | null;
}

describe('receiver-controlled delivery', () => {
  const clock = new TestClock();
  let rx: Receiver;
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let channel: string;
  let sentinel: BotHandle & { url: string };

  async function hookedBot(behaviour?: (r: Received, nth: number) => Answer) {
    const url = rx.hook(uniq('bot'), behaviour);
    const bot = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    return { ...bot, url };
  }
  const post = async (content: string) =>
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content }), 201).id as string;
  const deliveries = async (bot: { id: string }) =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query: { limit: '100' } }), 200)
      .items as Delivery[];
  const status = async (bot: { id: string }) =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/webhook`), 200) as Status;
  const received = async (url: string, n: number) => {
    await expect.poll(() => rx.at(url).length, { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(n);
    return rx.at(url);
  };
  /** Posts a message and waits until the sentinel bot received it (the fan-out and the worker passed it). */
  const postAndPass = async (content: string) => {
    const before = rx.at(sentinel.url).length;
    await post(content);
    await received(sentinel.url, before + 1);
  };

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' }, { clock });
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
    sentinel = await hookedBot();
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  it('abort-message: that message is dropped and logged as aborted, not retried; the next one is sent', async () => {
    const bot = await hookedBot((_r, nth) =>
      nth === 1 ? { status: 500, headers: { 'webhook-delivery': 'abort-message' } } : { status: 200 },
    );
    await post('drop me');
    await received(bot.url, 1);
    await expect.poll(async () => (await deliveries(bot))[0]?.state, { interval: 10 }).toBe('failed');
    const [d] = await deliveries(bot);
    expect(d!.attempts).toBe(1);
    expect(d!.last_error).toBe('aborted by the receiver (webhook-delivery: abort-message)');
    expect(d!.attempt_log[0]).toMatchObject({ status: 500 });
    expect(d!.attempt_log[0]!.error).toContain('aborted by the receiver');
    // Not the endpoint's failure: no failures in a row, nothing paused.
    expect(await status(bot)).toMatchObject({ consecutive_failures: 0, paused: false });
    // Not retried: 10 minutes later (past both default retries), the next message is the only new request.
    clock.advance(600_000);
    await post('keep me');
    const got = await received(bot.url, 2);
    expect(got.map((r) => JSON.parse(r.body).data.content)).toEqual(['drop me', 'keep me']);
    await expect.poll(async () => (await deliveries(bot))[0]?.state, { interval: 10 }).toBe('delivered');
  });

  it('disable: the endpoint is paused and its owner notified; resume sends what was kept', async () => {
    const bot = await hookedBot((_r, nth) =>
      nth === 1 ? { status: 200, headers: { 'webhook-delivery': 'disable' } } : { status: 200 },
    );
    await post('last one for now');
    await received(bot.url, 1);
    await expect.poll(async () => (await status(bot)).paused, { interval: 10 }).toBe(true);
    const s = await status(bot);
    expect(s.paused_reason).toContain('webhook-delivery: disable');
    // The delivery itself was answered 200: delivered.
    expect((await deliveries(bot))[0]!.state).toBe('delivered');
    const notes = expectStatus(await owner.api.get('/api/notifications'), 200).items as {
      kind: string;
      title: string;
    }[];
    expect(notes.find((n) => n.kind === 'webhook.paused')?.title).toContain('paused by its receiver');
    // While paused nothing is sent.
    await postAndPass('kept while paused');
    const kept = await deliveries(bot);
    expect(kept[0]).toMatchObject({ state: 'pending', attempts: 0 });
    expect(rx.at(bot.url)).toHaveLength(1);
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook/resume`), 200);
    const got = await received(bot.url, 2);
    expect(JSON.parse(got[1]!.body).data.content).toBe('kept while paused');
  });

  it('Retry-After on a 200 holds the endpoint that long, across a restart; then it is sent', async () => {
    const bot = await hookedBot((_r, nth) =>
      nth === 1 ? { status: 200, headers: { 'retry-after': '120' } } : { status: 200 },
    );
    await post('first');
    await received(bot.url, 1);
    await expect.poll(async () => (await status(bot)).held_until, { interval: 10 }).not.toBeNull();
    const s = await status(bot);
    const heldFor = Date.parse(s.held_until!) - clock.now();
    expect(heldFor).toBeGreaterThan(110_000);
    expect(heldFor).toBeLessThanOrEqual(120_000);
    expect(s.held_reason).toBe('Retry-After: 120 (answered with HTTP 200)');
    expect((await deliveries(bot))[0]!.state).toBe('delivered');

    await postAndPass('held');
    expect((await deliveries(bot))[0]).toMatchObject({ state: 'pending', attempts: 0 });
    // Durable: a restart keeps the hold.
    await srv.restart();
    await postAndPass('still held');
    expect(rx.at(bot.url)).toHaveLength(1);
    expect((await status(bot)).held_until).toBe(s.held_until);
    clock.advance(121_000);
    const got = await received(bot.url, 3);
    expect(got.slice(1).map((r) => JSON.parse(r.body).data.content)).toEqual(['held', 'still held']);
    expect((await status(bot)).held_until).toBeNull();
  });

  it('Retry-After on a 503: the retry and the endpoint wait for it (bounded by our schedule)', async () => {
    const bot = await hookedBot((_r, nth) =>
      nth === 1 ? { status: 503, headers: { 'retry-after': '900' } } : { status: 200 },
    );
    await post('busy');
    await received(bot.url, 1);
    await expect.poll(async () => (await deliveries(bot))[0]?.attempts, { interval: 10 }).toBe(1);
    const s = await status(bot);
    expect(Date.parse(s.held_until!) - clock.now()).toBeGreaterThan(890_000);
    // Past the default first retry (60 s) nothing is sent; past the Retry-After it is.
    clock.advance(120_000);
    await postAndPass('behind it');
    expect(rx.at(bot.url)).toHaveLength(1);
    clock.advance(800_000);
    const got = await received(bot.url, 3);
    expect(got.slice(1).map((r) => JSON.parse(r.body).data.content)).toEqual(['busy', 'behind it']);
  });

  it('max_per_minute: bad input 400, non-manager 403, another org 404; deliveries spaced, durably', async () => {
    const bot = await hookedBot();
    const path = `/api/bots/${bot.id}/webhook/rate-limit`;
    for (const bad of [0, 60_001, 1.5, 'ten', undefined]) {
      const res = await owner.api.put(path, { max_per_minute: bad });
      expect(res.status, String(bad)).toBe(400);
      expect(res.body.error.message).toContain('max_per_minute');
    }
    const stranger = await w.user({ role: 'member' });
    expect((await stranger.api.put(path, { max_per_minute: 2 })).status).toBe(403);
    const other = await w.org();
    expect((await other.admin.api.put(path, { max_per_minute: 2 })).status).toBe(404);
    expect((await w.anon.put(path, { max_per_minute: 2 })).status).toBe(401);
    const set = expectStatus(await owner.api.put(path, { max_per_minute: 2 }), 200) as Status;
    expect(set.max_per_minute).toBe(2);
    await srv.restart();
    expect((await status(bot)).max_per_minute).toBe(2);

    // Three events at once: one now, then one every 30 s of the server's clock.
    await post('r1');
    await post('r2');
    await postAndPass('r3');
    await received(bot.url, 1);
    await expect.poll(async () => (await status(bot)).held_reason, { interval: 10 }).toBe('max_per_minute 2');
    expect(rx.at(bot.url)).toHaveLength(1);
    clock.advance(30_000);
    await received(bot.url, 2);
    clock.advance(30_000);
    const got = await received(bot.url, 3);
    expect(got.map((r) => JSON.parse(r.body).data.content)).toEqual(['r1', 'r2', 'r3']);
    const stamps = got.map((r) => Number(r.headers['webhook-timestamp']));
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(29);
    expect(stamps[2]! - stamps[1]!).toBeGreaterThanOrEqual(29);
    // Removing the limit: the next event goes at once.
    expect(
      (expectStatus(await owner.api.put(path, { max_per_minute: null }), 200) as Status).max_per_minute,
    ).toBe(null);
    await post('r4');
    await received(bot.url, 4);
  });
});
