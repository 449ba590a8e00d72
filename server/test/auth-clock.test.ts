import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { FrozenClock } from './helpers/frozen-clock.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * Sessions, API keys and device tokens expire by the server's clock (issue 23, point 1): a test moves
 * the clock past the expiry instead of waiting for it.
 */
const DAY = 86_400_000;
const PASSWORD = 'user-password-1';

describe('credentials expire by the server clock', () => {
  let s: TestServer;
  // 30 days ahead of real time: whatever the server stamps by the real clock shows.
  const clock = new FrozenClock(Date.now() + 30 * DAY);

  beforeAll(async () => {
    s = await startTestServer({ WORKROOM_SESSION_TTL: '2h' }, { clock });
  });
  afterAll(() => s?.close());

  it('a session ends when the clock passes its expires_at', async () => {
    const w = await World.create(s.url); // the admin signs in at the clock's time now
    const u = await w.user();
    const res = await new Api(s.url).post('/api/auth/login', { email: u.email, password: PASSWORD });
    const session = expectStatus(res, 200);
    expect(session.expires_at).toBe(new Date(clock.now() + 2 * 3_600_000).toISOString());
    const api = new Api(s.url).as(session.token as string);
    expectStatus(await api.get('/api/auth/me'), 200);
    clock.advance(2 * 3_600_000 - 1000);
    expectStatus(await api.get('/api/auth/me'), 200);
    clock.advance(1000);
    const expired = await api.get('/api/auth/me');
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('unauthenticated');
  });

  it('an API key ends when the clock passes its expiry, and is listed as expired', async () => {
    const w = await World.create(s.url); // the admin signs in at the clock's time now
    const bot = await w.bot(w.admin.api, { expires_in_days: 1 });
    expectStatus(await bot.api.post('/api/bots/auth'), 200);
    // Listed by an admin signed in now (sessions last 2 h here).
    const listed = async () => (await World.create(s.url)).admin.api.get(`/api/bots/${bot.id}/api-keys`);
    const state = async () =>
      (expectStatus(await listed(), 200).items as { id: string; state: string }[]).find(
        (k) => k.id === bot.keyId,
      )?.state;
    expect(await state()).toBe('active');
    clock.advance(DAY - 1000);
    expectStatus(await bot.api.post('/api/bots/auth'), 200);
    clock.advance(1000);
    const expired = await bot.api.post('/api/bots/auth');
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toBe('The API key has expired');
    expect(await state()).toBe('expired');
  });

  it('a device token carries the clock’s time of its sign-in and is honoured by that clock', async () => {
    const w = await World.create(s.url); // the admin signs in at the clock's time now
    const u = await w.user();
    const res = await new Api(s.url).post('/api/auth/login', { email: u.email, password: PASSWORD });
    const device = expectStatus(res, 200).device_token as string;
    expect(Number(device.split('.')[2])).toBe(Math.floor(clock.now() / 1000));
    const signIn = (password: string, withDevice: boolean) =>
      new Api(s.url).post(
        '/api/auth/login',
        { email: u.email, password },
        withDevice ? { headers: { 'x-workroom-device': device } } : {},
      );
    /** Spends this address's 5 tries on the account (they come back one a minute). */
    const exhaust = async () => {
      for (let i = 0; i < 5; i++) expect((await signIn('guess', false)).status).toBe(401);
      expect((await signIn(PASSWORD, false)).status).toBe(429);
    };
    await exhaust();
    expect((await signIn(PASSWORD, true)).status).toBe(200); // recognized: its own bucket
    // 180 days on (by the clock) the token is no longer honoured: the address's tries decide.
    clock.advance(180 * DAY + 1000);
    await exhaust();
    expect((await signIn(PASSWORD, true)).status).toBe(429);
  });
});
