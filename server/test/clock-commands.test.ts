import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * A command's response URL expires 30 minutes after the command by the server's clock
 * (operations/commands/response-token.ts): on a test clock the test moves the clock past it instead of
 * waiting. The URL's own `response_url_expires_at` and the signed `webhook-timestamp` come from the same
 * clock.
 */
describe('command response URLs on the test clock', () => {
  const clock = new TestClock('2027-03-01T10:00:00.000Z');
  let srv: TestServer;
  let rx: Receiver;
  let member: UserHandle;
  let bot: BotHandle;
  let channel: string;

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' }, { clock });
    const w = await World.create(srv.url);
    const org = await w.org();
    member = await w.user({ organization_id: org.id });
    bot = await w.bot(org.admin.api, {}, { webhook_url: rx.hook(uniq('cmd'), () => ({ status: 204 })) });
    expectStatus(await org.admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'later', description: 'Later' }),
      201,
    );
    channel = await w.channel(member.api);
    expectStatus(await member.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  it('works until 30 minutes after the command by the clock, then answers 404', async () => {
    const run = expectStatus(
      await member.api.post('/api/commands/execute', { text: '/later', channel_id: channel }),
      202,
    );
    const got = rx.received.find((r) => r.headers['webhook-id'] === run.invocation_id)!;
    expect(got).toBeDefined();
    const issuedAt = Number(got.headers['webhook-timestamp']) * 1000;
    expect(issuedAt).toBeGreaterThanOrEqual(Date.parse('2027-03-01T10:00:00.000Z'));
    const expiresAt = Date.parse(got.json.data.response_url_expires_at as string);
    expect(expiresAt - clock.now()).toBeGreaterThan(29 * 60_000);
    expect(expiresAt - clock.now()).toBeLessThanOrEqual(30 * 60_000);
    const path = new URL(got.json.data.response_url as string).pathname;
    const answer = (content: string) =>
      fetch(`${srv.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content }),
      });

    const t0 = performance.now();
    expect((await answer('at once')).status).toBe(200);
    clock.set(expiresAt - 1000); // 29+ minutes on: still valid
    expect((await answer('just in time')).status).toBe(200);
    clock.set(expiresAt);
    expect((await answer('too late')).status).toBe(404);
    const wallMs = performance.now() - t0;
    console.log(
      `[clock-commands] response URL through its 30 minutes: ${wallMs.toFixed(0)} ms of wall clock`,
    );

    const msgs = expectStatus(await member.api.get(`/api/channels/${channel}/messages`), 200).items as {
      content: string;
    }[];
    expect(msgs.map((m) => m.content).filter((c) => c !== '/later')).toEqual(['just in time', 'at once']);
  });
});
