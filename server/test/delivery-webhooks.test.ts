import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { Receiver, type Answer, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Outgoing webhooks end to end: a real server delivers to a real HTTP receiver on 127.0.0.1 (private
 * URLs allowed for the test), with short retry delays and a 1 s time-out.
 */
describe('webhook delivery', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let owner: UserHandle;
  let channel: string;

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({
      WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      WORKROOM_WEBHOOK_RETRY_DELAYS: '200ms,400ms',
      WORKROOM_WEBHOOK_TIMEOUT: '1s',
      WORKROOM_WEBHOOK_PAUSE_AFTER: '5',
    });
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
  });
  afterAll(async () => {
    await srv.close();
    await rx.close();
  });

  /** A bot of `owner` with a webhook on the receiver and a signing secret, member of `channel`. */
  async function hookedBot(
    events: string[],
    behaviour?: (r: Received, nth: number) => Answer,
    opts: { by?: UserHandle; join?: string | null } = {},
  ): Promise<BotHandle & { url: string; secret: string }> {
    const by = opts.by ?? owner;
    const url = rx.hook(uniq('bot'), behaviour);
    const bot = await w.bot(by.api, {}, { webhook_url: url, events });
    const secret = expectStatus(await by.api.post(`/api/bots/${bot.id}/webhook-secret`), 201)
      .secret as string;
    const join = opts.join === undefined ? channel : opts.join;
    if (join) expectStatus(await by.api.post(`/api/channels/${join}/members`, { bot_id: bot.id }), 201);
    return { ...bot, url, secret };
  }

  const post = async (content: string, as: UserHandle = owner, where = channel) =>
    expectStatus(await as.api.post(`/api/channels/${where}/messages`, { content }), 201).id as string;

  const waitFor = async (url: string, n: number, timeout = 5000) => {
    await expect.poll(() => rx.at(url).length, { timeout, interval: 20 }).toBeGreaterThanOrEqual(n);
    return rx.at(url);
  };

  const deliveries = async (bot: { id: string }, query: Record<string, string> = {}) =>
    expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query }), 200).items as any[];

  function verifySignatures(r: Received, secret: string): void {
    // X-Workroom-Signature: HMAC over the raw body.
    const raw = `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`;
    expect(r.headers['x-workroom-signature']).toBe(raw);
    // `signature`, the body's last member: HMAC over the body without it.
    const m = /^(.*),"signature":"(sha256=[0-9a-f]{64})"\}$/s.exec(r.body);
    expect(m).not.toBeNull();
    const unsigned = `${m![1]}}`;
    expect(m![2]).toBe(`sha256=${createHmac('sha256', secret).update(unsigned).digest('hex')}`);
    const { signature: _omit, ...rest } = r.json;
    expect(JSON.stringify(rest)).toBe(unsigned);
    // Standard Webhooks, with the reference library.
    expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
  }

  it('delivers a signed message.created that every signature scheme verifies', async () => {
    const bot = await hookedBot(['message.created']);
    const messageId = await post('hello webhook');
    const [r] = await waitFor(bot.url, 1);
    verifySignatures(r!, bot.secret);
    expect(Object.keys(r!.json)).toEqual([
      'event_type',
      'timestamp',
      'bot_id',
      'data',
      'event_id',
      'signature',
    ]);
    expect(r!.json).toMatchObject({
      event_type: 'message.created',
      bot_id: bot.id,
      data: {
        message_id: messageId,
        content: 'hello webhook',
        channel_id: channel,
        sender_id: owner.id,
        sender_type: 'user',
      },
    });
    await expect.poll(async () => (await deliveries(bot))[0]?.state).toBe('delivered');
    const [d] = await deliveries(bot);
    expect(r!.headers['webhook-id']).toBe(d.id);
    expect(d).toMatchObject({ state: 'delivered', event_type: 'message.created', attempts: 1 });
    expect(d.attempt_log).toEqual([
      expect.objectContaining({ attempt: 1, status: 200, error: null, response_snippet: 'ok' }),
    ]);
    expect(() => new Webhook(bot.secret).verify(r!.body, { ...r!.headers, 'webhook-id': 'other' })).toThrow();
  });

  it('sends nothing to bots that are not subscribed, not in the channel, in another org, or the author', async () => {
    const marker = await hookedBot(['message.created']);
    const unsubscribed = await hookedBot(['task.created']);
    const outside = await hookedBot(['message.created'], undefined, { join: null });
    const org2 = await w.org();
    const otherChannel = await w.channel(org2.admin.api);
    const foreign = await hookedBot(['message.created'], undefined, { by: org2.admin, join: otherChannel });
    const author = await hookedBot(['message.created', 'message.updated', 'message.deleted']);
    // The author bot writes, edits and deletes its own message: others hear of it, it does not.
    const own = expectStatus(
      await author.api.post(`/api/channels/${channel}/messages`, { content: 'by a bot' }),
      201,
    );
    await post('for the marker');
    const got = await waitFor(marker.url, 2);
    expect(got.map((r) => r.json.data.content).sort()).toEqual(['by a bot', 'for the marker']);
    expect(got.find((r) => r.json.data.content === 'by a bot')!.json.data.sender_type).toBe('bot');
    expectStatus(await author.api.delete(`/api/messages/${own.id}`), 200);
    // The sentinel: a later message that the marker and the author both get. The fan-out takes events
    // in outbox order and a bot's deliveries go out in that order, so whatever the earlier events
    // made for these bots has been made (and sent to the author) by the time it arrives.
    await post('sentinel');
    await waitFor(marker.url, 3);
    await waitFor(author.url, 2);
    for (const b of [unsubscribed, outside, foreign]) {
      expect(rx.at(b.url)).toHaveLength(0);
      expect(await deliveries(b).catch(() => [])).toHaveLength(0);
    }
    // The author received only the owner's messages, none of its own actions.
    expect(rx.at(author.url).map((r) => r.json.data.content)).toEqual(['for the marker', 'sentinel']);
    expect((await deliveries(author)).map((d) => d.state)).toEqual(['delivered', 'delivered']);
  });

  it('retries a receiver that fails twice and delivers on the third attempt, same webhook-id', async () => {
    const bot = await hookedBot(['message.created'], (_r, nth) =>
      nth <= 2 ? { status: 500, body: 'boom' } : { status: 200 },
    );
    await post('third time lucky');
    const got = await waitFor(bot.url, 3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(150); // ~200 ms, ±10 % jitter
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(300); // ~400 ms
    for (const r of got) verifySignatures(r, bot.secret);
    await expect.poll(async () => (await deliveries(bot))[0]?.state).toBe('delivered');
    const [d] = await deliveries(bot);
    expect(d.attempt_log.map((a: any) => [a.status, a.error, a.response_snippet])).toEqual([
      [500, 'HTTP 500', 'boom'],
      [500, 'HTTP 500', 'boom'],
      [200, null, 'ok'],
    ]);
  });

  it('cuts a hanging receiver at the time-out and retries, while other bots keep receiving', async () => {
    const slow = await hookedBot(['message.created'], (_r, nth) => (nth === 1 ? 'hang' : { status: 200 }));
    const fast = await hookedBot(['message.created']);
    await post('one');
    const [fastOne] = await waitFor(fast.url, 1);
    const [slowOne] = await waitFor(slow.url, 1);
    // Not stuck behind the hanging attempt: it arrived before that attempt's time-out (1 s) ended.
    expect(fastOne!.at).toBeLessThan(slowOne!.at + 1000);
    await post('two');
    await waitFor(fast.url, 2);
    const got = await waitFor(slow.url, 3);
    // The hung delivery was tried again with its webhook-id.
    expect(got.slice(1).map((r) => r.headers['webhook-id'])).toContain(got[0]!.headers['webhook-id']);
    await expect.poll(async () => (await deliveries(slow, { state: 'delivered' })).length).toBe(2);
    const hung = (await deliveries(slow)).find((d) => d.attempt_log.length === 2);
    expect(hung.attempt_log[0].error).toMatch(/^timeout/);
    expect(hung.attempt_log[0].duration_ms).toBeGreaterThanOrEqual(900);
    expect(hung.attempt_log[0].duration_ms).toBeLessThan(2000);
  });

  it('signs with the new secret from the moment it is rotated', async () => {
    const bot = await hookedBot(['message.created']);
    await post('before rotation');
    await waitFor(bot.url, 1);
    const secret2 = expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201)
      .secret as string;
    await post('after rotation');
    const got = await waitFor(bot.url, 2);
    verifySignatures(got[0]!, bot.secret);
    verifySignatures(got[1]!, secret2);
    expect(() => new Webhook(bot.secret).verify(got[1]!.body, got[1]!.headers)).toThrow();
  });

  it('turns the webhook off on 410 Gone and tells the owner', async () => {
    const bot = await hookedBot(['message.created'], () => ({ status: 410 }));
    await post('gone');
    await waitFor(bot.url, 1);
    await expect.poll(async () => (await deliveries(bot))[0]?.state).toBe('failed');
    expect(rx.at(bot.url)).toHaveLength(1); // no retry
    expect(expectStatus(await owner.api.get(`/api/bots/${bot.id}`), 200).webhook_url).toBeNull();
    const notes = expectStatus(await owner.api.get('/api/notifications'), 200).items as any[];
    expect(notes.find((n) => n.data.bot_id === bot.id)).toMatchObject({
      kind: 'webhook.disabled',
      read_at: null,
    });
  });

  it('pauses and resumes: events meanwhile are kept and delivered on resume', async () => {
    const bot = await hookedBot(['message.created']);
    const paused = expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook/pause`), 200);
    expect(paused).toMatchObject({ paused: true, paused_reason: 'paused by a manager' });
    // The sentinel: a bot that is not paused, in the same channel, gets 'while paused' and then a later
    // message; the paused bot's delivery was made in the same fan-out pass as the first, and the worker
    // has looked for due work since (the later one was handed over or claimed after it).
    const sentinel = await hookedBot(['message.created']);
    await post('while paused');
    await post('after it');
    await waitFor(sentinel.url, 2);
    expect(rx.at(bot.url)).toHaveLength(0);
    expect((await deliveries(bot)).map((d) => d.state)).toEqual(['pending', 'pending']);
    expect(expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook/resume`), 200).paused).toBe(false);
    const got = await waitFor(bot.url, 2);
    expect(got.map((r) => r.json.data.content)).toEqual(['while paused', 'after it']);
  });

  it('pauses by itself after failures in a row and notifies the owner; a final failure too', async () => {
    const bot = await hookedBot(['message.created'], () => ({ status: 503 }));
    await post('f1');
    await post('f2');
    await expect
      .poll(async () => expectStatus(await owner.api.get(`/api/bots/${bot.id}/webhook`), 200).paused, {
        timeout: 8000,
      })
      .toBe(true);
    const status = expectStatus(await owner.api.get(`/api/bots/${bot.id}/webhook`), 200);
    // Paused at the fifth; an attempt already in flight then may add one more.
    expect(status.consecutive_failures).toBeGreaterThanOrEqual(5);
    expect(status.paused_reason).toBe('5 failed attempts in a row');
    const kinds = (expectStatus(await owner.api.get('/api/notifications'), 200).items as any[])
      .filter((n) => n.data.bot_id === bot.id)
      .map((n) => n.kind);
    expect(kinds).toContain('webhook.paused');
    expect(kinds).toContain('webhook.failed'); // the first event used its three attempts
  });

  it('redelivers with the same webhook-id and sends a test event', async () => {
    const bot = await hookedBot(['message.created']);
    await post('again please');
    await waitFor(bot.url, 1);
    const [d] = await deliveries(bot);
    const again = expectStatus(await owner.api.post(`/api/bots/${bot.id}/deliveries/${d.id}/redeliver`), 202);
    expect(again).toMatchObject({ id: d.id, state: 'pending', attempts: 0 });
    const got = await waitFor(bot.url, 2);
    expect(got[1]!.headers['webhook-id']).toBe(d.id);
    expect(got[1]!.json.event_id).toBe(got[0]!.json.event_id);

    const test = expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook/test`), 202);
    const t = (await waitFor(bot.url, 3))[2]!;
    verifySignatures(t, bot.secret);
    expect(t.headers['webhook-id']).toBe(test.id);
    expect(t.json).toMatchObject({
      event_type: 'webhook.test',
      bot_id: bot.id,
      data: { requested_by: owner.id },
    });
  });

  it('lets the bot (and its managers) catch up on its events after a position', async () => {
    const bot = await hookedBot(['message.created'], () => ({ status: 500 }));
    for (const c of ['c1', 'c2', 'c3']) await post(c);
    await expect.poll(async () => (await deliveries(bot)).length).toBe(3); // fanned out
    const read = async (after: number, key = bot.api) =>
      expectStatus(await key.get(`/api/bots/${bot.id}/events`, { query: { after, limit: 2 } }), 200);
    const page1 = await read(0);
    expect(page1.items.map((e: any) => e.data.content)).toEqual(['c1', 'c2']);
    const page2 = await read(page1.next_after);
    expect(page2.items.map((e: any) => e.data.content)).toEqual(['c3']);
    expect(page2.items[0].position).toBeGreaterThan(page1.next_after);
    expect((await read(page2.next_after)).items).toEqual([]);
    // A manager reads the same; another bot's key sees nothing there.
    expect((await read(0, owner.api)).items).toHaveLength(2);
    const other = await hookedBot(['message.created']);
    expect((await other.api.get(`/api/bots/${bot.id}/events`)).status).toBe(404);
    // A stranger (not a manager) of the same org is refused; another org does not see the bot at all.
    const stranger = await w.user({ role: 'member' });
    expect((await stranger.api.get(`/api/bots/${bot.id}/deliveries`)).status).toBe(403);
    const org2 = await w.org();
    expect((await org2.admin.api.get(`/api/bots/${bot.id}/deliveries`)).status).toBe(404);
  });

  it('answers bad input with clear 4xx', async () => {
    const bot = await hookedBot(['message.created']);
    const bad = await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query: { state: 'lost' } });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/state/);
    expect((await owner.api.get(`/api/bots/${bot.id}/deliveries`, { query: { cursor: 'x' } })).status).toBe(
      400,
    );
    expect((await bot.api.get(`/api/bots/${bot.id}/events`, { query: { after: -1 } })).status).toBe(400);
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await owner.api.post(`/api/bots/${bot.id}/deliveries/${unknown}/redeliver`)).status).toBe(404);
  });
  it('cuts a bot-to-bot loop: at most 60 bot-written messages a minute reach a bot from one container', async () => {
    const room = await w.channel(owner.api);
    const listener = await hookedBot(['message.created'], undefined, { join: room });
    const talker = await w.bot(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${room}/members`, { bot_id: talker.id }), 201);
    for (let i = 0; i < 63; i++)
      expectStatus(await talker.api.post(`/api/channels/${room}/messages`, { content: `ping ${i}` }), 201);
    await expect
      .poll(async () => (await deliveries(listener, { limit: '100' })).length, { timeout: 10_000 })
      .toBe(63);
    const failed = await deliveries(listener, { state: 'failed' });
    expect(failed).toHaveLength(3);
    expect(failed[0].last_error).toMatch(/^loop guard/);
    expect(failed[0].attempt_log).toEqual([]); // never sent
    await waitFor(listener.url, 60);
    // Every delivery has had its attempt recorded (none pending): nothing more can arrive.
    await expect
      .poll(async () => (await deliveries(listener, { state: 'pending' })).length, { timeout: 10_000 })
      .toBe(0);
    expect(rx.at(listener.url)).toHaveLength(60);
  });
});

describe('webhook delivery retention', () => {
  it('prunes delivered deliveries after WORKROOM_WEBHOOK_RETENTION', async () => {
    const rx = await Receiver.start();
    const srv = await startTestServer({
      WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      WORKROOM_WEBHOOK_RETENTION: '1s',
    });
    try {
      const w = await World.create(srv.url);
      const channel = await w.channel(w.admin.api);
      const url = rx.hook('retained');
      const bot = await w.bot(w.admin.api, {}, { webhook_url: url, events: ['message.created'] });
      expectStatus(await w.admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
      expectStatus(await w.admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
      expectStatus(
        await w.admin.api.post(`/api/channels/${channel}/messages`, { content: 'short-lived' }),
        201,
      );
      const log = async () =>
        expectStatus(await w.admin.api.get(`/api/bots/${bot.id}/deliveries`), 200).items as any[];
      await expect.poll(async () => (await log())[0]?.state, { timeout: 5000 }).toBe('delivered');
      // Pruned within the retention plus one pruning interval (1 s here).
      await expect.poll(async () => (await log()).length, { timeout: 6000, interval: 200 }).toBe(0);
      expect(rx.received).toHaveLength(1);
    } finally {
      await srv.close();
      await rx.close();
    }
  });
});
