/**
 * Reruns the attacks of the hostile-input review against a production build (child process, SQLite)
 * and prints what they cost now: MCP batch memory, MCP sessions per tenant, sign-in brute force, slow
 * clients. Not a throughput benchmark: each attack prints its own figures.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { startWorkroom, BENCH_ADMIN } from './lib.js';

const rssMb = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)] ?? NaN;

async function json(url: string, path: string, init: RequestInit & { token?: string } = {}) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await fetch(url + path, {
    ...init,
    headers: { ...headers, ...(init.headers as Record<string, string>) },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : undefined };
}

const srv = await startWorkroom({ WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0' });
try {
  const { url, pid } = srv;
  const admin = (await json(url, '/api/auth/login', { method: 'POST', body: JSON.stringify(BENCH_ADMIN) }))
    .body.token as string;
  const newBot = async (token: string) => {
    const b = (
      await json(url, '/api/bots', {
        method: 'POST',
        token,
        body: JSON.stringify({ name: `b${Math.random()}` }),
      })
    ).body;
    return (await json(url, `/api/bots/${b.bot_id}/api-keys`, { method: 'POST', token, body: '{}' })).body
      .key as string;
  };

  // 1. MCP batches: 16 concurrent posts of 20,000 tools/list calls each (was: 162 MB answers, +1 GB heap, then death).
  const keyA = await newBot(admin);
  const init = await json(url, '/api/mcp', {
    method: 'POST',
    token: keyA,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
  });
  const session = init.headers.get('mcp-session-id')!;
  const batch = JSON.stringify(
    Array.from({ length: 20_000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' })),
  );
  const before = rssMb(pid);
  let t = performance.now();
  const answers = await Promise.all(
    Array.from({ length: 16 }, () =>
      json(url, '/api/mcp', {
        method: 'POST',
        token: keyA,
        headers: { 'mcp-session-id': session },
        body: batch,
      }),
    ),
  );
  const statuses = [...new Set(answers.map((a) => a.status))];
  console.log(
    `MCP batch of 20,000 calls × 16 at once: statuses ${statuses.join(',')} (${answers[0]!.body?.error?.message ?? ''}); ` +
      `${Math.round(performance.now() - t)} ms; server RSS ${before} → ${rssMb(pid)} MB`,
  );

  // 2. Sessions: organization B opens 10,050 sessions; does A's survive?
  const org = (
    await json(url, '/api/organizations', {
      method: 'POST',
      token: admin,
      body: JSON.stringify({ name: `org${Date.now()}` }),
    })
  ).body;
  await json(url, '/api/users', {
    method: 'POST',
    token: admin,
    body: JSON.stringify({
      email: 'b-admin@bench.local',
      display_name: 'B',
      password: 'b-password-1',
      role: 'org_admin',
      organization_id: org.id,
    }),
  });
  const bAdmin = (
    await json(url, '/api/auth/login', {
      method: 'POST',
      body: JSON.stringify({ email: 'b-admin@bench.local', password: 'b-password-1' }),
    })
  ).body.token as string;
  const keyB = await newBot(bAdmin);
  t = performance.now();
  const initBody = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
  });
  let opened = 0;
  let refused = 0;
  for (let i = 0; i < 10_050; i += 50) {
    const rs = await Promise.all(
      Array.from({ length: 50 }, () =>
        json(url, '/api/mcp', { method: 'POST', token: keyB, body: initBody }),
      ),
    );
    for (const r of rs) {
      if (r.status === 200) opened++;
      else refused++;
    }
  }
  const ping = await json(url, '/api/mcp', {
    method: 'POST',
    token: keyA,
    headers: { 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
  });
  console.log(
    `MCP sessions: org B opened ${opened} (refused ${refused}) in ${Math.round(performance.now() - t)} ms, keeping at most 100 per key; ` +
      `org A's session answers ${ping.status} (was 404); server RSS ${rssMb(pid)} MB`,
  );

  // 3. Sign-in brute force: wrong passwords as fast as 16 clients can for 20 s from one address, while
  //    the real user signs in from another address.
  const victim = 'victim@bench.local';
  await json(url, '/api/users', {
    method: 'POST',
    token: admin,
    body: JSON.stringify({ email: victim, display_name: 'V', password: 'victim-password-1' }),
  });
  const counts: Record<number, number> = {};
  const realLatencies: number[] = [];
  const realStatuses: number[] = [];
  const baseline: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await loginFrom(url, '127.0.0.9', victim, 'victim-password-1');
    baseline.push(performance.now() - started);
  }
  const end = Date.now() + 20_000;
  const attacker = async () => {
    while (Date.now() < end) {
      const r = await json(url, '/api/auth/login', {
        method: 'POST',
        body: JSON.stringify({ email: victim, password: 'guess' }),
      });
      counts[r.status] = (counts[r.status] ?? 0) + 1;
    }
  };
  const realUser = async () => {
    while (Date.now() < end) {
      const started = performance.now();
      const status = await loginFrom(url, '127.0.0.9', victim, 'victim-password-1');
      realLatencies.push(performance.now() - started);
      realStatuses.push(status);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  await Promise.all([...Array.from({ length: 16 }, attacker), realUser()]);
  console.log(
    `Sign-in brute force, 20 s from one address: ${Object.entries(counts)
      .map(([s, n]) => `${n}× ${s}`)
      .join(', ')}; ` +
      `the real user from another address: ${realStatuses.filter((s) => s === 200).length}/${realStatuses.length} signed in, ` +
      `p50 ${Math.round(pct(realLatencies, 0.5))} ms, p99 ${Math.round(pct(realLatencies, 0.99))} ms ` +
      `(without the attack, same run: p50 ${Math.round(pct(baseline, 0.5))} ms)`,
  );

  // 4. Slow clients.
  console.log(
    `Headers a byte every 200 ms: cut after ${await slowClient(url, 'headers')} ms (header time-out 10 s)`,
  );
  console.log(
    `Body a byte every 200 ms: cut after ${await slowClient(url, 'body')} ms (request time-out 120 s)`,
  );
} finally {
  await srv.stop();
}

function loginFrom(url: string, localAddress: string, email: string, password: string): Promise<number> {
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () =>
      socket.write(
        `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      ),
    );
    let out = '';
    socket.on('data', (d) => (out += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(out.split(' ')[1])));
  });
}

function slowClient(url: string, what: 'headers' | 'body'): Promise<number> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.write(
      what === 'headers'
        ? 'GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: '
        : 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
    );
    const drip = setInterval(() => socket.write('a'), 200);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(drip);
      resolve(Math.round(performance.now() - started));
    });
    socket.resume();
  });
}
