import { createHook } from 'node:async_hooks';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD_COST } from '../src/domain/secrets.js';
import { Api, expectStatus } from './helpers/client.js';
import { FrozenClock } from './helpers/frozen-clock.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Sign-in that an attacker cannot lock (issue 22, point 4 / problem 6), the small sign-in body, and
 * users.create refusing before it hashes (point 10). Each test fails on the code before the fix.
 */

const PASSWORD = 'user-password-1';

interface LoginAnswer {
  status: number;
  body: any;
  setCookie: string | null;
  ms: number;
}

/** One sign-in as the client at `from` (X-Forwarded-For; the server trusts its proxy). */
async function signIn(
  url: string,
  email: string,
  password: string,
  from: string,
  extra: { device?: string | undefined; cookie?: string | undefined; proto?: string } = {},
): Promise<LoginAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-forwarded-for': from };
  if (extra.device !== undefined) headers['x-workroom-device'] = extra.device;
  if (extra.cookie !== undefined) headers.cookie = extra.cookie;
  if (extra.proto !== undefined) headers['x-forwarded-proto'] = extra.proto;
  const started = performance.now();
  const res = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ email, password }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? JSON.parse(text) : undefined,
    setCookie: res.headers.get('set-cookie'),
    ms: performance.now() - started,
  };
}

describe('sign-in during a lockout attack', () => {
  let s: TestServer;
  let w: World;
  let victim: UserHandle;
  let other: UserHandle;
  /** The victim's device token, from a sign-in on its own device before the attack. */
  let victimDevice: string | undefined;
  let otherDevice: string | undefined;
  // The throttle refills only when a test moves this clock (none does here): what the buckets admit
  // does not depend on how fast the machine runs the attack.
  const clock = new FrozenClock();

  beforeAll(async () => {
    // The server's own password cost (helpers/server.ts): the real user's sign-in hashes as in production
    // while the flood below fills the queue.
    s = await startTestServer({ WORKROOM_TRUST_PROXY: 'true' }, { clock, passwordCost: PASSWORD_COST });
    w = await World.create(s.url);
    victim = await w.user();
    other = await w.user();
    victimDevice = (await signIn(s.url, victim.email, PASSWORD, '10.1.0.1')).body.device_token;
    otherDevice = (await signIn(s.url, other.email, PASSWORD, '10.1.0.2')).body.device_token;
  });
  afterAll(() => s?.close());

  it('the real user, on a device it signed in from before, signs in on the first try while 60 addresses guess its password', async () => {
    // 60 attacking addresses, each sending a wrong password every 100 ms (the reported attack).
    let stop = false;
    const attackStatuses = new Map<number, number>();
    const attacker = async (i: number) => {
      while (!stop) {
        const r = await signIn(s.url, victim.email, 'wrong-password', `10.66.0.${i}`);
        attackStatuses.set(r.status, (attackStatuses.get(r.status) ?? 0) + 1);
        if (!stop) await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const attackers = Array.from({ length: 60 }, (_, i) => attacker(i + 1));
    const fresh = () => signIn(s.url, victim.email, PASSWORD, '10.77.0.1');
    try {
      // The account's bucket is empty: a client without a device token, right password, gets 429.
      await expect.poll(async () => (await fresh()).status, { timeout: 30_000, interval: 50 }).toBe(429);

      const outcomes: { how: string; status: number; ms: number }[] = [];
      const record = async (how: string, p: Promise<LoginAnswer>) => {
        const r = await p;
        outcomes.push({ how, status: r.status, ms: Math.round(r.ms) });
        return r;
      };
      // Several sign-ins, each the first and only try: the header (API clients), from its own address,
      // from a new one, and from one of the attacking addresses; the cookie (browsers).
      for (let i = 0; i < 3; i++)
        await record('header', signIn(s.url, victim.email, PASSWORD, '10.1.0.1', { device: victimDevice }));
      await record(
        'header, new address',
        signIn(s.url, victim.email, PASSWORD, '10.2.0.9', { device: victimDevice }),
      );
      await record(
        'header, attacking address',
        signIn(s.url, victim.email, PASSWORD, '10.66.0.7', { device: victimDevice }),
      );
      for (let i = 0; i < 3; i++)
        await record(
          'cookie',
          signIn(s.url, victim.email, PASSWORD, '10.1.0.1', {
            cookie: `theme=dark; workroom_device=${victimDevice}`,
          }),
        );
      console.info('real user during the attack:', JSON.stringify(outcomes));
      expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));

      // Still under attack after the real user's sign-ins: a client without a device token is refused
      // (polled; on the clock that stands, the account's bucket regains no token for this client to get).
      await expect.poll(async () => (await fresh()).status, { timeout: 30_000, interval: 50 }).toBe(429);
    } finally {
      stop = true;
      await Promise.all(attackers);
    }
    console.info('attack answers:', JSON.stringify(Object.fromEntries(attackStatuses)));
    expect(attackStatuses.get(429) ?? 0).toBeGreaterThan(0);
  }, 60_000);

  it("a device token counts only for its own account, and a stolen one gets only its own bucket's guesses", async () => {
    // This address has used up its 5 tries on the target's account (one more a minute): from here,
    // only a device token of the target's account gets a try.
    const target = await w.user();
    const targetDevice = (await signIn(s.url, target.email, PASSWORD, '10.1.0.3')).body
      .device_token as string;
    const from = '10.5.0.1';
    for (let i = 0; i < 5; i++) expect((await signIn(s.url, target.email, 'guess', from)).status).toBe(401);
    expect((await signIn(s.url, target.email, PASSWORD, from)).status).toBe(429);
    // Another account's device token (header or cookie) or a forged one does not help.
    expect((await signIn(s.url, target.email, PASSWORD, from, { device: otherDevice })).status).toBe(429);
    expect(
      (await signIn(s.url, target.email, PASSWORD, from, { cookie: `workroom_device=${otherDevice}` }))
        .status,
    ).toBe(429);
    const forged = [
      targetDevice.replace(/\.(\d+)\./, (_, t: string) => `.${Number(t) + 1}.`), // another issue time
      targetDevice.replace(/^wrdv1\.[^.]+/, `wrdv1.${other.id}`), // another account
      targetDevice.slice(0, -2) + (targetDevice.endsWith('AA') ? 'AB' : 'AA'), // another signature
      'wrdv1.x.1.AAAAAAAAAAA.' + 'A'.repeat(43),
      targetDevice.replace(/\.([0-9A-Za-z_-]{11})\./, '.AAAAAAAAAAA.'), // another nonce
    ];
    for (const device of forged)
      expect((await signIn(s.url, target.email, PASSWORD, from, { device })).status).toBe(429);
    // The target's own token does.
    const own = await signIn(s.url, target.email, PASSWORD, from, { device: targetDevice });
    expect(own.status).toBe(200);

    // A thief with one of the target's device tokens (the one just issued) guesses 5 times, then is
    // counted like any client from that address: refused.
    const stolen = own.body.device_token as string;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await signIn(s.url, target.email, 'guess', from, { device: stolen })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    // The target's other device token is a bucket of its own.
    expect((await signIn(s.url, target.email, PASSWORD, from, { device: targetDevice })).status).toBe(200);
  });

  it('guesses sent all at once are admitted no more often than one after another', async () => {
    const target = await w.user();
    const from = '10.6.0.1';
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async () => (await signIn(s.url, target.email, 'guess', from)).status),
    );
    // The pair bucket (5) admits 5; the 15 others are refused before any hashing.
    expect(statuses.filter((st) => st === 401)).toHaveLength(5);
    expect(statuses.filter((st) => st === 429)).toHaveLength(15);
  });

  it('a flood of sign-ins that fills the hashing queue does not turn the real user away', async () => {
    // Attempts on ever new accounts from ever new addresses pass every bucket, so each one waits for
    // scrypt; 80 of them at a time keep the queue (2 hashing, 64 waiting) full, the rest get 503 and
    // try again 50 ms later (pacing the load generator, so that it does not just burn the CPU).
    let stop = false;
    let n = 0;
    const statuses = new Map<number, number>();
    const flooder = async () => {
      while (!stop) {
        const k = n++;
        const r = await signIn(
          s.url,
          `nobody-${k}@test.local`,
          'x',
          `10.${100 + ((k >> 16) & 63)}.${(k >> 8) & 255}.${k & 255}`,
        );
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 503 && !stop) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const t0 = performance.now();
    const phases: Record<string, number> = {};
    const mark = (name: string) => (phases[name] = Math.round(performance.now() - t0));
    const flooders = Array.from({ length: 80 }, () => flooder());
    try {
      await expect.poll(() => statuses.get(503) ?? 0, { timeout: 20_000, interval: 20 }).toBeGreaterThan(0);
      mark('queue full');
      const mine: LoginAnswer[] = [];
      for (let i = 0; i < 3; i++)
        mine.push(await signIn(s.url, victim.email, PASSWORD, '10.1.0.1', { device: victimDevice }));
      mark('signed in');
      const before = statuses.get(503) ?? 0;
      // The flood was still being refused around the real user's sign-ins.
      await expect
        .poll(() => (statuses.get(503) ?? 0) > before, { timeout: 20_000, interval: 20 })
        .toBe(true);
      console.info(
        'real user during a hashing flood:',
        JSON.stringify(mine.map((r) => ({ status: r.status, ms: Math.round(r.ms) }))),
      );
      expect(mine.map((r) => r.status)).toEqual([200, 200, 200]);
    } finally {
      mark('still full');
      stop = true;
      await Promise.all(flooders);
      mark('flood ended');
    }
    console.info(
      'flood answers:',
      JSON.stringify(Object.fromEntries(statuses)),
      'ms:',
      JSON.stringify(phases),
    );
  }, 60_000);

  it('the device token is an HttpOnly, SameSite=Strict cookie for /api/auth, Secure over https', async () => {
    const plain = await signIn(s.url, other.email, PASSWORD, '10.1.0.2');
    expect(plain.status).toBe(200);
    expect(plain.body.device_token).toMatch(/^wrdv1\./);
    expect(plain.setCookie).toBe(
      `workroom_device=${plain.body.device_token}; Path=/api/auth; Max-Age=15552000; HttpOnly; SameSite=Strict`,
    );
    // Behind a trusted proxy that terminates TLS.
    const tls = await signIn(s.url, other.email, PASSWORD, '10.1.0.2', { proto: 'https' });
    expect(tls.setCookie).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    // A failed sign-in sets no cookie.
    expect((await signIn(s.url, other.email, 'wrong', '10.1.0.2')).setCookie).toBeNull();
  });

  it('the sign-in body is small: over 8 KiB answers 413; every valid input fits', async () => {
    const big = await fetch(`${s.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.3.0.1' },
      body: JSON.stringify({ email: victim.email, password: 'x'.repeat(9000) }),
    });
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).error.code).toBe('payload_too_large');
    // The same without a Content-Length (chunked): cut off while reading.
    const chunks = async function* () {
      for (let i = 0; i < 10; i++)
        yield new TextEncoder().encode(`${i === 0 ? '{"email":"' : ''}${'y'.repeat(1000)}`);
    };
    const chunked = await fetch(`${s.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.3.0.1' },
      body: chunks(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    // The largest input LoginInput accepts, every character escaped (\u00e9, 6 bytes each), is not 413.
    const esc = (n: number) => '\\u00e9'.repeat(n);
    const largest = `{"email":"${esc(320)}","password":"${esc(1024)}"}`;
    expect(largest.length).toBeGreaterThan(8000);
    const answer = await new Api(s.url).post('/api/auth/login', undefined, {
      raw: largest,
      headers: { 'x-forwarded-for': '10.3.0.2' },
    });
    expect(answer.status).toBe(401);
  });
});

describe('sign-in while strangers hold the body budget', () => {
  let s: TestServer;
  let w: World;
  beforeAll(async () => {
    s = await startTestServer({
      WORKROOM_TRUST_PROXY: 'true',
      WORKROOM_UNAUTHENTICATED_BODY_BYTES: String(64 * 1024),
      WORKROOM_UNAUTHENTICATED_BODY_BYTES_PER_ADDRESS: String(64 * 1024),
    });
    w = await World.create(s.url);
  });
  afterAll(() => s?.close());

  it('a client with a device token signs in while stalled sign-in bodies fill the budget', async () => {
    const u = await w.user();
    const device = (await signIn(s.url, u.email, PASSWORD, '10.1.0.1')).body.device_token as string;
    const { hostname, port } = new URL(s.url);
    // Connections from 12 addresses each declare a body of 8 KiB and stall: any 8 of them hold the
    // whole budget (64 KiB).
    const stalled = Array.from({ length: 12 }, (_, i) => {
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.write(
        `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.9.0.${i}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 8192\r\n\r\n{"email":`,
      );
      return socket;
    });
    // A probe that holds its 2 bytes only for a moment (400 without hashing) until the budget is full.
    const probe = async () =>
      (
        await fetch(`${s.url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.2.0.9' },
          body: '{}',
        })
      ).status;
    try {
      await expect.poll(probe, { timeout: 20_000 }).toBe(503);
      // A client without a device token is refused (503: the budget is full); one with a token is not.
      expect((await signIn(s.url, u.email, PASSWORD, '10.2.0.1')).status).toBe(503);
      expect((await signIn(s.url, u.email, PASSWORD, '10.2.0.1', { device })).status).toBe(200);
      expect(
        (await signIn(s.url, u.email, PASSWORD, '10.2.0.2', { cookie: `workroom_device=${device}` })).status,
      ).toBe(200);
      // Still full afterwards.
      expect((await signIn(s.url, u.email, PASSWORD, '10.2.0.1')).status).toBe(503);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });
});

describe('the device cookie when the public URL is https', () => {
  let s: TestServer;
  let w: World;
  beforeAll(async () => {
    s = await startTestServer({ WORKROOM_PUBLIC_URL: 'https://workroom.example' });
    w = await World.create(s.url);
  });
  afterAll(() => s?.close());

  it('is Secure', async () => {
    const u = await w.user();
    const r = await signIn(s.url, u.email, PASSWORD, '10.1.0.1');
    expect(r.status).toBe(200);
    expect(r.setCookie).toMatch(/; Secure$/);
  });
});

describe('users.create checks the caller before hashing the password', () => {
  let s: TestServer;
  let w: World;
  beforeAll(async () => {
    s = await startTestServer();
    w = await World.create(s.url);
  });
  afterAll(() => s?.close());

  /**
   * How many scrypt computations the process started while `fn` ran: Node creates one async resource of
   * type SCRYPTREQUEST for each crypto.scrypt call (the server runs in this process).
   */
  async function scryptsDuring<T>(fn: () => Promise<T>): Promise<{ result: T; scrypts: number }> {
    let scrypts = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'SCRYPTREQUEST') scrypts++;
      },
    }).enable();
    try {
      return { result: await fn(), scrypts };
    } finally {
      hook.disable();
    }
  }

  it('a member, a dept_admin outside its department and a duplicate email are refused without any scrypt', async () => {
    const member = await w.user();
    const deptA = await w.user({ role: 'dept_admin', department: 'Dept A' });
    await w.user({ department: 'Dept B' });
    const body = (extra: Record<string, unknown> = {}) => ({
      email: `new-${Math.random().toString(36).slice(2)}@test.local`,
      display_name: 'New',
      password: 'long-enough-password',
      ...extra,
    });

    const started = performance.now();
    const members = await scryptsDuring(() =>
      Promise.all(Array.from({ length: 40 }, () => member.api.post('/api/users', body()))),
    );
    const memberMs = performance.now() - started;
    expect(members.result.map((r) => r.status)).toEqual(members.result.map(() => 403));
    expect(members.scrypts).toBe(0);

    const refused = await scryptsDuring(async () => [
      await deptA.api.post('/api/users', body({ department: 'Dept B' })),
      await deptA.api.post('/api/users', body({ department: 'A department that does not exist' })),
      await deptA.api.post('/api/users', body({ role: 'org_admin' })),
      await w.admin.api.post('/api/users', body({ email: member.email })),
    ]);
    expect(refused.result.map((r) => r.status)).toEqual([403, 403, 403, 409]);
    expect(refused.scrypts).toBe(0);
    // The department that did not exist was not created by the refused call.
    const depts = expectStatus(await w.admin.api.get('/api/departments'), 200);
    expect(JSON.stringify(depts)).not.toContain('does not exist');

    // The probe does see the server's scrypt: a permitted creation hashes once.
    const allowed = await scryptsDuring(() => deptA.api.post('/api/users', body()));
    expect(allowed.result.status).toBe(201);
    expect(allowed.scrypts).toBe(1);
    console.info(`40 refused member calls in ${Math.round(memberMs)} ms, 0 scrypt`);
  });
});
