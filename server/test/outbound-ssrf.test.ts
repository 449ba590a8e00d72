import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AddressPolicy,
  checkWebhookUrl,
  OutboundClient,
  OutboundError,
  type Resolver,
} from '../src/outbound/client.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * The one outbound HTTP client against real local receivers: what it refuses (SSRF), what the
 * allow-switches open, and its time-out, redirect and answer-size rules. Then the same policy at bot
 * registration, through the real REST API.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A self-signed certificate for localhost / 127.0.0.1, made for this test only (no one trusts it). */
const TEST_KEY = [
  '-----BEGIN PRIVATE KEY-----',
  'MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQguHHIWk6LE46HRpEY',
  'Irj/0J79lys3uiRkFZXEhjMhWZ+hRANCAATTMKj2P+HiUZ1armoJ5Lu+19LMLUbN',
  'O0TSbbsAmuE8/NIM6Ncc5d8cjlQHAzgEor4UpWZjf5fGoUuXxeqO3w+J',
  '-----END PRIVATE KEY-----',
].join('\n');
const TEST_CERT = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBnDCCAUGgAwIBAgIUKW2K8k3u06zbfL5rv++/6KEPt98wCgYIKoZIzj0EAwIw',
  'FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMzExMTIzMFoYDzIxMjYxMDMw',
  'MTExMjMwWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO',
  'PQMBBwNCAATTMKj2P+HiUZ1armoJ5Lu+19LMLUbNO0TSbbsAmuE8/NIM6Ncc5d8c',
  'jlQHAzgEor4UpWZjf5fGoUuXxeqO3w+Jo28wbTAdBgNVHQ4EFgQUTyybX09yysxY',
  'JA9p8jMoXEsNX7EwHwYDVR0jBBgwFoAUTyybX09yysxYJA9p8jMoXEsNX7EwDwYD',
  'VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI',
  'zj0EAwIDSQAwRgIhAImlte5WJsta0IFw6AiywrlBhC9mXBszJ+urwO7pA5M6AiEA',
  'lEVkUIJxZYog36/VrBWsNKxhL0NxjmrstKFFYAZqVLc=',
  '-----END CERTIFICATE-----',
].join('\n');

/** A real HTTP receiver on 127.0.0.1 that counts what reaches it. */
async function receiver(
  handler: Handler,
): Promise<{ port: number; hits: () => number; connections: () => number; close(): Promise<void> }> {
  let hits = 0;
  let connections = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    handler(req, res);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    hits: () => hits,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A resolver with fixed answers, of dns.lookup's shape (the client's lookup is what is tested). */
const fixedResolver =
  (answers: Record<string, string[]>): Resolver =>
  (hostname, _options, callback) => {
    const list = answers[hostname];
    if (!list) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    callback(
      null,
      list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundError);
    return err as OutboundError;
  }
  throw new Error('expected the call to fail');
}

const ok: Handler = (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-echo-signature': String(req.headers['x-sig']),
    });
    res.end(JSON.stringify({ got: Buffer.concat(chunks).toString() }));
  });
};

describe('OutboundClient: SSRF policy', () => {
  let rx: Awaited<ReturnType<typeof receiver>>;
  const clients: OutboundClient[] = [];
  const client = (opts: Partial<ConstructorParameters<typeof OutboundClient>[0]> = {}) => {
    const c = new OutboundClient({ allowPrivate: false, allowedRanges: [], timeoutMs: 2000, ...opts });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    rx = await receiver(ok);
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await rx.close();
  });

  it('refuses every private, loopback, link-local and disguised address by default, before connecting', async () => {
    const c = client({
      lookup: fixedResolver({
        'internal.example.test': ['10.1.2.3'],
        'mixed.example.test': ['93.184.216.34', '127.0.0.1'],
      }),
    });
    const refused = [
      `http://127.0.0.1:${rx.port}/hook`,
      `http://127.1.2.3:${rx.port}/hook`,
      'http://10.0.0.1/hook',
      'http://172.16.0.1/hook',
      'http://172.31.255.254/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://0.0.0.0/hook',
      'http://224.0.0.1/hook',
      'http://255.255.255.255/hook',
      `http://[::1]:${rx.port}/hook`,
      'http://[::]/hook',
      `http://[::ffff:127.0.0.1]:${rx.port}/hook`,
      'http://[::ffff:169.254.169.254]/hook',
      'http://[64:ff9b::a00:1]/hook', // NAT64 of 10.0.0.1
      'http://[2002:c0a8:101::1]/hook', // 6to4 of 192.168.1.1
      'http://[fd00::1]/hook',
      'http://[fe80::1]/hook',
      `http://2130706433:${rx.port}/hook`, // decimal 127.0.0.1
      `http://0x7f000001:${rx.port}/hook`, // hex
      `http://0177.0.0.1:${rx.port}/hook`, // octal
      'http://internal.example.test/hook', // a name that resolves to a private address
      'http://mixed.example.test/hook', // one private address among public ones is enough
      `http://localhost:${rx.port}/hook`, // the system resolver: 127.0.0.1 / ::1
    ];
    for (const url of refused) {
      const lookup = url.includes('localhost') ? client() : c;
      const err = await failure(lookup.post(url, '{}', {}));
      expect(err.kind, url).toBe('blocked_address');
    }
    expect(rx.hits()).toBe(0);
  });

  it('passes public addresses, also in their IPv6 forms (the policy alone: no call leaves the machine)', () => {
    const policy = new AddressPolicy({ allowPrivate: false, allowedRanges: [] });
    for (const a of [
      '93.184.216.34',
      '8.8.8.8',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
    ]) {
      expect(policy.refusal(a), a).toBeNull();
    }
    for (const a of ['192.0.2.1', '198.18.0.1', '2001:db8::1', '::127.0.0.1', 'not-an-ip']) {
      expect(policy.refusal(a), a).not.toBeNull();
    }
  });

  it('judges an IPv4 address the same in every form it can be written in (property)', () => {
    const policy = new AddressPolicy({ allowPrivate: false, allowedRanges: [] });
    const strict = { allowPrivate: false, allowedRanges: [] };
    const refusedRanges: [number, number][] = [
      [0x7f000000, 8], // loopback
      [0x0a000000, 8], // 10/8
      [0xac100000, 12], // 172.16/12
      [0xc0a80000, 16], // 192.168/16
      [0xa9fe0000, 16], // link-local, metadata
      [0x64400000, 10], // CGNAT
    ];
    const inRange = fc
      .tuple(fc.constantFrom(...refusedRanges), fc.integer({ min: 0, max: 2 ** 24 - 1 }))
      .map(([[base, bits], r]) => (base | (r & (2 ** (32 - bits) - 1))) >>> 0);
    const hex = (n: number) => [(n >>> 16).toString(16), (n & 0xffff).toString(16)].join(':');
    const dotted = (n: number) => [24, 16, 8, 0].map((sh) => (n >>> sh) & 255).join('.');
    fc.assert(
      fc.property(inRange, (n) => {
        for (const form of [
          dotted(n),
          `::ffff:${dotted(n)}`,
          `::ffff:${hex(n)}`,
          `64:ff9b::${hex(n)}`,
          `2002:${hex(n)}::1`,
        ]) {
          expect(policy.refusal(form), form).not.toBeNull();
        }
        for (const host of [String(n), `0x${n.toString(16)}`, `[::ffff:${dotted(n)}]`]) {
          expect(checkWebhookUrl(`http://${host}/hook`, strict), host).toMatch(/private address/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('allowPrivate opens loopback: a real receiver gets the body and headers', async () => {
    const c = client({ allowPrivate: true });
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '2130706433']) {
      const res = await c.post(`http://${host}:${rx.port}/hook?x=1`, '{"a":1}', {
        'x-sig': 's1',
        'content-type': 'application/json',
      });
      expect(res.status, host).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ got: '{"a":1}' });
      expect(res.headers['x-echo-signature']).toBe('s1');
      expect(res.durationMs).toBeGreaterThanOrEqual(0);
    }
  });

  it('allowed ranges open exactly their range', async () => {
    const c = client({
      allowedRanges: ['127.0.0.0/8', '10.20.0.0/16'],
      lookup: fixedResolver({ 'inside.test': ['127.0.0.1'], 'outside.test': ['10.21.0.1'] }),
    });
    expect((await c.post(`http://127.0.0.1:${rx.port}/`, '{}', {})).status).toBe(200);
    expect((await c.post(`http://inside.test:${rx.port}/`, '{}', {})).status).toBe(200);
    expect((await c.post(`http://[::ffff:127.0.0.1]:${rx.port}/`, '{}', {})).status).toBe(200);
    for (const url of [
      'http://10.21.0.1/',
      'http://outside.test/',
      'http://192.168.0.1/',
      `http://[::1]:${rx.port}/`,
    ]) {
      expect((await failure(c.post(url, '{}', {}))).kind, url).toBe('blocked_address');
    }
    expect(
      () => new OutboundClient({ allowPrivate: false, allowedRanges: ['10.0.0.0'], timeoutMs: 1000 }),
    ).toThrow(/CIDR/);
  });

  it('refuses other schemes and malformed URLs', async () => {
    const c = client({ allowPrivate: true });
    for (const url of ['ftp://example.com/x', 'file:///etc/passwd', 'gopher://x/', 'not a url', 'http://']) {
      expect((await failure(c.post(url, '{}', {}))).kind, url).toBe('invalid_url');
    }
  });

  it('names a TLS failure, and checks https URLs alike', async () => {
    const server = createHttpsServer({ key: TEST_KEY, cert: TEST_CERT }, ok);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const err = await failure(client({ allowPrivate: true }).post(`https://localhost:${port}/`, '{}', {}));
    expect(err.kind).toBe('tls');
    for (const host of ['localhost', '127.0.0.1', '[::ffff:127.0.0.1]']) {
      expect((await failure(client().post(`https://${host}:${port}/`, '{}', {}))).kind, host).toBe(
        'blocked_address',
      );
    }
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('names DNS and connection failures', async () => {
    const c = client({ allowPrivate: true, lookup: fixedResolver({}) });
    expect((await failure(c.post('http://nowhere.test/', '{}', {}))).kind).toBe('dns');
    const closed = await receiver(ok);
    const port = closed.port;
    await closed.close();
    expect((await failure(c.post(`http://127.0.0.1:${port}/`, '{}', {}))).kind).toBe('connect');
  });
});

describe('OutboundClient: time-out, redirects, answer size', () => {
  const c = new OutboundClient({
    allowPrivate: true,
    allowedRanges: [],
    timeoutMs: 400,
    maxResponseBytes: 1024,
  });
  afterAll(() => c.close());

  it('cuts a receiver that never answers at the time-out', async () => {
    const rx = await receiver(() => {
      // never answers
    });
    const t0 = Date.now();
    expect((await failure(c.post(`http://127.0.0.1:${rx.port}/`, '{}', {}))).kind).toBe('timeout');
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(380);
    expect(took).toBeLessThan(3000);
    await rx.close();
  });

  it('counts the body in the time-out: headers at once, then a body that trickles forever', async () => {
    const rx = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a');
      const t = setInterval(() => res.write(''), 50);
      res.on('close', () => clearInterval(t));
    });
    const t0 = Date.now();
    expect((await failure(c.post(`http://127.0.0.1:${rx.port}/`, '{}', {}))).kind).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
    await rx.close();
  });

  it('a per-call time-out and an abort signal cut the call too', async () => {
    const rx = await receiver(() => {});
    // A client whose own time-out (10 s) would fail the test's 5 s limit: only the per-call ones act.
    const slow = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 10_000 });
    const t0 = Date.now();
    const cut = await failure(slow.post(`http://127.0.0.1:${rx.port}/`, '{}', {}, { timeoutMs: 100 }));
    expect(cut.kind).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(2000);
    const ac = new AbortController();
    // One signal for several calls (as the delivery worker's shutdown signal): a call that ended before
    // the abort keeps its answer; every call under way when it aborts is cancelled.
    const fast = await receiver(ok);
    expect((await slow.post(`http://127.0.0.1:${fast.port}/`, '{}', {}, { signal: ac.signal })).status).toBe(
      200,
    );
    setTimeout(() => ac.abort(), 50);
    const under = await Promise.all(
      [1, 2, 3].map(() =>
        failure(slow.post(`http://127.0.0.1:${rx.port}/`, '{}', {}, { signal: ac.signal })),
      ),
    );
    for (const aborted of under) {
      expect(aborted.kind).toBe('timeout');
      expect(aborted.message).toMatch(/cancelled/);
    }
    expect(Date.now() - t0).toBeLessThan(4000);
    const late = await failure(slow.post(`http://127.0.0.1:${rx.port}/`, '{}', {}, { signal: ac.signal }));
    expect(late.message).toMatch(/cancelled before it started/);
    slow.close();
    await fast.close();
    await rx.close();
  });

  it('does not follow redirects: the 3xx is the answer', async () => {
    const target = await receiver(ok);
    const rx = await receiver((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/elsewhere` });
      res.end();
    });
    const res = await c.post(`http://127.0.0.1:${rx.port}/`, '{}', {});
    expect(res.status).toBe(302);
    expect(res.headers.location).toContain('/elsewhere');
    expect(target.hits()).toBe(0);
    await rx.close();
    await target.close();
  });

  it('keeps only the first bytes of an answer and does not wait for the rest', async () => {
    // An answer that never ends: 4 KB at once, then more every 20 ms for as long as the connection lives.
    const rx = await receiver((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.write('x'.repeat(4096));
      const t = setInterval(() => res.write('y'.repeat(1024)), 20);
      res.on('close', () => clearInterval(t));
    });
    const patient = new OutboundClient({
      allowPrivate: true,
      allowedRanges: [],
      timeoutMs: 10_000,
      maxResponseBytes: 1024,
    });
    const t0 = Date.now();
    const res = await patient.post(`http://127.0.0.1:${rx.port}/`, '{}', {});
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(res.status).toBe(500);
    expect(res.body).toBe('x'.repeat(1024));
    patient.close();
    await rx.close();
  });

  it('answers calls in a row over kept-alive connections', async () => {
    const rx = await receiver(ok);
    const patient = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 5000 });
    for (let i = 0; i < 20; i++) {
      expect((await patient.post(`http://127.0.0.1:${rx.port}/`, `{"i":${i}}`, {})).status).toBe(200);
    }
    expect(rx.hits()).toBe(20);
    // undici's pool frees a connection on the turn after its answer, so a call made at once from the
    // answer's continuation takes a second connection; from then on the two take turns.
    expect(rx.connections()).toBeLessThanOrEqual(2);
    patient.close();
    await rx.close();
  });
  it('sends again on a fresh connection when a kept-alive one was closed under it', async () => {
    const served = new WeakMap<object, number>();
    // Each connection serves one request; a second request on it has its connection dropped, as a
    // receiver's idle time-out racing our reuse would.
    const rx = await receiver((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n > 1) req.socket.destroy();
      else ok(req, res);
    });
    const client = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 5000 });
    expect((await client.post(`http://127.0.0.1:${rx.port}/`, '{"n":1}', {})).status).toBe(200);
    // Once the pool has the first connection back (the turn after its answer), the next call reuses it.
    await new Promise((r) => setTimeout(r, 20));
    const second = await client.post(`http://127.0.0.1:${rx.port}/`, '{"n":2}', {});
    expect(second.status).toBe(200);
    expect(JSON.parse(second.body)).toEqual({ got: '{"n":2}' });
    expect(rx.connections()).toBe(2);
    client.close();
    await rx.close();
  });
});

describe('OutboundClient: the HTTP exchange', () => {
  const client = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 5000 });
  afterAll(() => client.close());

  it('sends the body and headers as given, with its length; credentials in the URL go as HTTP Basic', async () => {
    let seen: { url?: string; headers: IncomingMessage['headers']; body: string } | undefined;
    const rx = await receiver((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen = { url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() };
        res.end('ok');
      });
    });
    const body = JSON.stringify({ text: 'héllo ✓' });
    const res = await client.post(`http://bot%40x:p%3Ass@127.0.0.1:${rx.port}/hook?a=1`, body, {
      'content-type': 'application/json',
      'x-sig': 'abc',
    });
    expect(res.status).toBe(200);
    expect(seen!.url).toBe('/hook?a=1');
    expect(seen!.body).toBe(body);
    expect(seen!.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(seen!.headers['x-sig']).toBe('abc');
    expect(seen!.headers.authorization).toBe(`Basic ${Buffer.from('bot@x:p:ss').toString('base64')}`);
    await rx.close();
  });

  it('reads a chunked answer whole and joins repeated answer headers', async () => {
    const rx = await receiver((_req, res) => {
      res.setHeader('x-many', ['a', 'b']);
      res.writeHead(201, { 'content-type': 'text/plain' });
      res.write('one ');
      setTimeout(() => res.end('two'), 20);
    });
    const res = await client.post(`http://127.0.0.1:${rx.port}/`, '{}', {});
    expect(res).toMatchObject({ status: 201, body: 'one two' });
    expect(res.headers['x-many']).toBe('a, b');
    expect(res.headers['content-type']).toBe('text/plain');
    await rx.close();
  });

  it('a receiver that closes every connection after answering is served on a new one each time', async () => {
    const rx = await receiver((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { connection: 'close' });
        res.end('bye');
      });
    });
    for (let i = 0; i < 5; i++)
      expect((await client.post(`http://127.0.0.1:${rx.port}/`, '{}', {})).status).toBe(200);
    expect(rx.hits()).toBe(5);
    expect(rx.connections()).toBe(5);
    await rx.close();
  });

  it('a fresh connection dropped without an answer fails once, and is not sent again', async () => {
    const rx = await receiver((req) => req.socket.destroy());
    const err = await failure(client.post(`http://127.0.0.1:${rx.port}/`, '{}', {}));
    expect(err.kind).toBe('connect');
    expect(err.message).toMatch(/closed/);
    expect(rx.hits()).toBe(1);
    await rx.close();
  });
});

describe('checkWebhookUrl (registration)', () => {
  const strict = { allowPrivate: false, allowedRanges: [] };
  it('names what is wrong, or passes', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x', strict)).toBeNull();
    expect(checkWebhookUrl('http://internal.example.test/x', strict)).toBeNull(); // caught at delivery
    expect(checkWebhookUrl('ftp://x.test/', strict)).toMatch(/http/);
    expect(checkWebhookUrl('::', strict)).toMatch(/valid URL/);
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/x',
      'http://app.localhost/x',
      'http://[::1]/',
      'http://2130706433/',
      'http://169.254.169.254/',
      'http://[::ffff:10.0.0.1]/',
    ]) {
      expect(checkWebhookUrl(url, strict), url).toMatch(/private address/);
    }
    expect(checkWebhookUrl('http://127.0.0.1/x', { allowPrivate: true, allowedRanges: [] })).toBeNull();
    expect(
      checkWebhookUrl('http://localhost/x', { allowPrivate: false, allowedRanges: ['127.0.0.0/8'] }),
    ).toBeNull();
    expect(
      checkWebhookUrl('http://10.0.0.1/x', { allowPrivate: false, allowedRanges: ['127.0.0.0/8'] }),
    ).toMatch(/private/);
  });
});

describe('bot registration refuses private webhook URLs', () => {
  let srv: TestServer;
  let open: TestServer;
  let w: World;
  beforeAll(async () => {
    srv = await startTestServer();
    open = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
    w = await World.create(srv.url);
  });
  afterAll(async () => {
    await srv.close();
    await open.close();
  });

  const forms = [
    'http://127.0.0.1:4567/hook',
    'http://localhost:4567/hook',
    'http://10.0.0.1/hook',
    'http://172.16.0.1/hook',
    'http://192.168.1.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://2130706433/hook',
  ];

  it('POST /api/bots and PATCH /api/bots/{id} answer 400 naming webhook_url', async () => {
    const bot = expectStatus(await w.admin.api.post('/api/bots', { name: 'ssrf-patch' }), 201);
    for (const url of forms) {
      const created = await w.admin.api.post('/api/bots', { name: 'ssrf', webhook_url: url });
      expect(created.status, url).toBe(400);
      expect(created.body.error.code).toBe('invalid_input');
      expect(created.body.error.field).toBe('webhook_url');
      expect(created.body.error.message).toMatch(/webhook_url.*private address/);
      const patched = await w.admin.api.patch(`/api/bots/${bot.bot_id}`, { webhook_url: url });
      expect(patched.status, url).toBe(400);
      expect(patched.body.error.field).toBe('webhook_url');
    }
    expect(expectStatus(await w.admin.api.get(`/api/bots/${bot.bot_id}`), 200).webhook_url).toBeNull();
    const names = expectStatus(await w.admin.api.get('/api/bots'), 200).items.map(
      (b: { name: string }) => b.name,
    );
    expect(names).not.toContain('ssrf');
    // A public URL, and clearing the URL, still work.
    expectStatus(
      await w.admin.api.patch(`/api/bots/${bot.bot_id}`, { webhook_url: 'https://hooks.example.com/x' }),
      200,
    );
    expectStatus(await w.admin.api.patch(`/api/bots/${bot.bot_id}`, { webhook_url: null }), 200);
  });

  it('WORKROOM_WEBHOOK_ALLOWED_RANGES opens its ranges at registration, and is validated', async () => {
    expect(
      loadConfig({ WORKROOM_WEBHOOK_ALLOWED_RANGES: '10.0.0.0/8, fd00::/8' }).webhooks.allowedRanges,
    ).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(loadConfig({}).webhooks.allowedRanges).toEqual([]);
    expect(() => loadConfig({ WORKROOM_WEBHOOK_ALLOWED_RANGES: '10.0.0.0/8,intranet' })).toThrow(ConfigError);
    const ranged = await startTestServer({ WORKROOM_WEBHOOK_ALLOWED_RANGES: '127.0.0.0/8' });
    try {
      const rw = await World.create(ranged.url);
      for (const url of [
        'http://127.0.0.1:4567/hook',
        'http://localhost:4567/hook',
        'http://[::ffff:127.0.0.1]/',
      ]) {
        expectStatus(await rw.admin.api.post('/api/bots', { name: 'ranged', webhook_url: url }), 201);
      }
      for (const url of ['http://10.0.0.1/hook', 'http://[::1]/hook', 'http://169.254.169.254/']) {
        const r = await rw.admin.api.post('/api/bots', { name: 'ranged', webhook_url: url });
        expect(r.status, url).toBe(400);
        expect(r.body.error.field).toBe('webhook_url');
      }
    } finally {
      await ranged.close();
    }
  });

  it('other schemes are refused even when private URLs are allowed', async () => {
    const ow = await World.create(open.url);
    for (const url of ['ftp://x.test/hook', 'javascript:alert(1)', 'file:///etc/passwd']) {
      const r = await ow.admin.api.post('/api/bots', { name: 'scheme', webhook_url: url });
      expect(r.status, url).toBe(400);
      expect(r.body.error.field).toBe('webhook_url');
    }
    for (const url of forms)
      expectStatus(await ow.admin.api.post('/api/bots', { name: 'local', webhook_url: url }), 201);
  });
});
