import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rssOf } from './helpers/fuzz.js';
import { startChildServer, statusesOf, type ChildServer } from './helpers/fuzz-proc.js';

/**
 * Memory held for strangers (issue: hardening round two). Before any credential is checked, sign-in and
 * the signed incoming webhook used to read up to 1 MiB of body each and hold it for the 15 s body
 * time-out, with no bound on how many: 2,000 stalled sockets held +2 GB. Against the server as a child
 * process, its resident memory is measured while such sockets stall. The attackers connect from other
 * loopback addresses (every 127.x.y.z is this machine), so that per-address bounds are exercised too.
 */
const MIB = 1024 * 1024;
const BODY = MIB - 1;
const SOCKETS = 2000;

interface Stalled {
  socket: Socket;
  /** What the server answered (if anything) before we gave up. */
  data: Buffer[];
}

/**
 * Opens `n` connections from `addresses` (round-robin) that each send `head` and then all but the last
 * byte of a BODY-byte body, and stall. Resolves once every socket has written its part or been refused.
 */
async function stallBodies(port: number, n: number, head: (i: number) => string, addresses: string[]) {
  const body = Buffer.alloc(BODY - 1, 0x61);
  const stalled: Stalled[] = [];
  const batch = 100;
  for (let start = 0; start < n; start += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - start) }, (_, k) => {
        const i = start + k;
        return new Promise<void>((resolve) => {
          const s: Stalled = {
            socket: connect({ port, host: '127.0.0.1', localAddress: addresses[i % addresses.length] }),
            data: [],
          };
          stalled.push(s);
          s.socket.on('data', (d: Buffer) => s.data.push(d));
          s.socket.on('error', () => resolve());
          s.socket.on('close', () => resolve());
          s.socket.on('connect', () => {
            s.socket.write(head(i));
            // Written (or refused: the server may answer and close before the body is in).
            s.socket.write(body, () => resolve());
          });
        });
      }),
    );
  }
  return stalled;
}

const addressRange = (n: number) => Array.from({ length: n }, (_, i) => `127.0.0.${i + 2}`);

function statusCounts(stalled: Stalled[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of stalled) {
    const status = statusesOf(Buffer.concat(s.data))[0];
    const key = status === undefined ? 'no answer yet' : String(status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Waits until at most `open` of the sockets are still without an answer (the rest were answered or closed). */
async function settled(stalled: Stalled[], open: number): Promise<void> {
  const waiting = () =>
    stalled.filter((s) => s.data.length === 0 && !s.socket.destroyed && !s.socket.readableEnded);
  await expect.poll(() => waiting().length, { timeout: 30_000, interval: 200 }).toBeLessThanOrEqual(open);
}

describe('memory held for unauthenticated request bodies is bounded', () => {
  let srv: ChildServer;
  let baseline = 0;

  beforeAll(async () => {
    srv = await startChildServer({ WORKROOM_LOG_LEVEL: 'warn' });
    // Warm the server up (first requests allocate caches).
    for (let i = 0; i < 20; i++) await fetch(`${srv.url}/api/health`);
  }, 90_000);
  beforeEach(async () => {
    // The resident memory before each attack (after the last one's sockets are gone).
    await new Promise((r) => setImmediate(r));
    baseline = rssOf(srv.child.pid!);
  });
  afterAll(async () => {
    await srv?.stop();
  }, 30_000);

  it(`${SOCKETS} stalled 1 MiB sign-in bodies cost < 100 MB, and the real user still signs in`, async () => {
    const stalled = await stallBodies(
      srv.port,
      SOCKETS,
      () =>
        `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY}\r\n\r\n`,
      addressRange(40),
    );
    try {
      // Every body is refused at once (413: over the sign-in limit), before it is read.
      await settled(stalled, 0);
      const grown = rssOf(srv.child.pid!) - baseline;
      console.log(
        `sign-in: ${SOCKETS} stalled bodies: RSS +${(grown / MIB).toFixed(1)} MB; answers ${JSON.stringify(statusCounts(stalled))}`,
      );
      expect(grown).toBeLessThan(100 * MIB);
      // A real user (another address) is served meanwhile.
      const r = await fetch(`${srv.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@fuzz.local', password: 'fuzz-password-1' }),
      });
      expect(r.status).toBe(200);
    } finally {
      for (const s of stalled) s.socket.destroy();
    }
    expect(srv.alive()).toBe(true);
  }, 120_000);

  it(`${SOCKETS} stalled 1 MiB signed incoming-webhook bodies cost < 100 MB (the budget of strangers' bodies)`, async () => {
    const botId = randomUUID();
    const head = (i: number) =>
      `POST /api/webhooks/incoming/${botId} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `webhook-id: msg_${i}\r\nwebhook-timestamp: ${Math.floor(Date.now() / 1000)}\r\n` +
      `webhook-signature: v1,AAAA\r\nContent-Length: ${BODY}\r\n\r\n`;
    const stalled = await stallBodies(srv.port, SOCKETS, head, addressRange(40));
    try {
      // Refused at once, before their bodies were read: per address (429) or in all (503). At most the
      // budget's worth (32 MiB: 32 bodies of 1 MiB) is still being read, stalled.
      await settled(stalled, 32);
      const grown = rssOf(srv.child.pid!) - baseline;
      const counts = statusCounts(stalled);
      console.log(
        `incoming webhook: ${SOCKETS} stalled bodies: RSS +${(grown / MIB).toFixed(1)} MB; answers ${JSON.stringify(counts)}`,
      );
      expect(grown).toBeLessThan(100 * MIB);
      // Refused at once; on a loaded machine a refusal can be lost to the reset of a connection the server
      // closed while its client was still sending (seen once: 1 of 2,000): such a socket is closed without
      // an answer, and is not being read either.
      const closedUnanswered = stalled.filter(
        (s) => s.data.length === 0 && (s.socket.destroyed || s.socket.readableEnded),
      ).length;
      expect(closedUnanswered).toBeLessThanOrEqual(SOCKETS / 100);
      expect((counts['429'] ?? 0) + (counts['503'] ?? 0) + closedUnanswered).toBeGreaterThanOrEqual(
        SOCKETS - 32,
      );
      // The same URL with a key is authenticated before its body is read: a bad key answers 401 at once.
      const r = await fetch(`${srv.url}/api/webhooks/incoming/${botId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer wrbk_nope' },
        body: JSON.stringify({ content: 'x', channel_id: randomUUID() }),
      });
      expect(r.status).toBe(401);
    } finally {
      for (const s of stalled) s.socket.destroy();
    }
    expect(srv.alive()).toBe(true);
  }, 120_000);

  it('one address holds at most its share (4 MiB): its next body is refused with 429, another address is still read', async () => {
    const botId = randomUUID();
    const head = (i: number) =>
      `POST /api/webhooks/incoming/${botId} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `webhook-id: msg_${i}\r\nwebhook-timestamp: ${Math.floor(Date.now() / 1000)}\r\n` +
      `webhook-signature: v1,AAAA\r\nContent-Length: ${BODY}\r\n\r\n`;
    const stalled = await stallBodies(srv.port, 6, head, ['127.0.0.200']);
    try {
      await settled(stalled, 4);
      expect(statusCounts(stalled)).toEqual({ '429': 2, 'no answer yet': 4 });
      // Another client's small signed body is read and checked (401: no such bot) meanwhile.
      const answer = await new Promise<string>((resolve) => {
        const sock = connect({ port: srv.port, host: '127.0.0.1', localAddress: '127.0.0.201' });
        let text = '';
        sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
        sock.on('close', () => resolve(text));
        sock.on('error', () => resolve(text));
        sock.on('connect', () =>
          sock.write(
            head(99).replace(`Content-Length: ${BODY}`, 'Connection: close\r\nContent-Length: 2') + '{}',
          ),
        );
      });
      expect(statusesOf(Buffer.from(answer, 'latin1'))).toEqual([401]);
    } finally {
      for (const s of stalled) s.socket.destroy();
    }
  }, 60_000);

  it('the budget is given back when the requests end: a signed request is read again afterwards', async () => {
    // The stalled sockets above were destroyed; their reservations were released on close.
    await expect
      .poll(
        async () =>
          (
            await fetch(`${srv.url}/api/webhooks/incoming/${randomUUID()}`, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'webhook-id': 'msg_x',
                'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
                'webhook-signature': 'v1,AAAA',
              },
              body: '{}',
            })
          ).status,
        { timeout: 10_000 },
      )
      .toBe(401);
  });
});

describe('open connections are bounded with a clear 503', () => {
  let srv: ChildServer;
  beforeAll(async () => {
    srv = await startChildServer({ WORKROOM_MAX_CONNECTIONS: '50' });
  }, 90_000);
  afterAll(async () => {
    await srv?.stop();
  }, 30_000);

  it('past WORKROOM_MAX_CONNECTIONS a new connection is answered 503 and closed; a freed slot serves again', async () => {
    const idle: Socket[] = [];
    try {
      for (let i = 0; i < 50; i++) {
        const s = connect(srv.port, '127.0.0.1');
        s.on('error', () => undefined);
        await new Promise<void>((resolve) => s.once('connect', () => resolve()));
        idle.push(s);
      }
      // The server counts a connection when it accepts it: wait until all 50 are in, then one more.
      const extra = await new Promise<string>((resolve) => {
        const s = connect(srv.port, '127.0.0.1');
        let text = '';
        s.on('data', (d: Buffer) => (text += d.toString('latin1')));
        s.on('error', () => resolve(text));
        s.on('close', () => resolve(text));
        s.on('connect', () => s.write('GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n'));
      });
      expect(extra).toMatch(/^HTTP\/1\.1 503 /);
      expect(extra.toLowerCase()).toContain('retry-after: 1');
      expect(extra).toContain('"code":"unavailable"');
      expect(extra).not.toContain('"status":"ok"'); // the request on it was not served
    } finally {
      for (const s of idle) s.destroy();
    }
    await expect
      .poll(async () => (await fetch(`${srv.url}/api/health`)).status, { timeout: 10_000 })
      .toBe(200);
  }, 60_000);
});

describe('a client that aborts its body is routine, not an error', () => {
  let srv: ChildServer;
  beforeAll(async () => {
    srv = await startChildServer({ WORKROOM_LOG_LEVEL: 'debug' });
  }, 90_000);
  afterAll(async () => {
    await srv?.stop();
  }, 30_000);

  it('50 aborted bodies log no error line and no stack trace, one debug line each', async () => {
    const before = srv.output().length;
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const s = connect(srv.port, '127.0.0.1');
        s.on('error', () => resolve());
        s.on('close', () => resolve());
        // Headers first, with Expect: 100-continue: the server's "100 Continue" proves it has parsed them
        // and handed the request on, so the abort comes while its body is being read (on a loaded
        // machine a body aborted before the server read the headers never became a request).
        s.on('connect', () => {
          s.write(
            'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n',
          );
        });
        s.once('data', () => s.write('{"email":', () => setImmediate(() => s.destroy())));
      });
    }
    await expect
      .poll(
        () =>
          srv
            .output()
            .slice(before)
            .split('\n')
            .filter((l) => l.includes('before its body was complete')).length,
      )
      .toBe(50);
    const lines = srv.output().slice(before).split('\n').filter(Boolean);
    expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
    expect(srv.alive()).toBe(true);
  }, 60_000);
});
