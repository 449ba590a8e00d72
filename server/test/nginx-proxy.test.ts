import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { Proc } from './helpers/ops.js';
import { LiveClient } from './helpers/realtime.js';
import { freePort } from './helpers/server-proc.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startTestServer, type TestServer } from './helpers/server.js';
import { login, uniq } from './helpers/world.js';

/**
 * Debian's nginx in front of the server with the configuration docs/OPERATIONS.md documents (its
 * ```nginx block, TLS lines left out, ports replaced), run as a child process of this test (no root, temp
 * directories): the web app's live updates (WebSocket upgrade), a 20 MB upload, and the client address
 * the sign-in guard sees (X-Forwarded-For with WORKROOM_TRUST_PROXY) all work through it.
 */
const NGINX = process.env.NGINX ?? '/usr/sbin/nginx';
const DOC = join(import.meta.dirname, '../../docs/OPERATIONS.md');

/** The documented snippet, for plain HTTP on `port` in front of `upstream`. */
export function documentedConfig(upstreamPort: number, port: number, redirectPort: number): string {
  const doc = readFileSync(DOC, 'utf8');
  const block = /```nginx\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/OPERATIONS.md has no ```nginx block');
  return block
    .split('\n')
    .filter((l) => !/^\s*(ssl_\w+|http2)\s/.test(l))
    .join('\n')
    .replace('server 127.0.0.1:3000;', `server 127.0.0.1:${upstreamPort};`)
    .replace('listen 443 ssl;', `listen 127.0.0.1:${port};`)
    .replace('listen 80;', `listen 127.0.0.1:${redirectPort};`);
}

let srv: TestServer;
let nginx: Proc | undefined;
let dir: string;
let proxied: string;

beforeAll(async () => {
  if (!existsSync(NGINX))
    throw new Error(
      `nginx is not installed (${NGINX}): apt-get install nginx-light (.ci/run installs it before the server suites), or set NGINX=/path/to/nginx`,
    );
  srv = await startTestServer({
    WORKROOM_TRUST_PROXY: 'true',
    // The sign-in guard counts failures per client address: the test reads it through nginx.
  });
  dir = mkdtempSync(join(tmpdir(), 'workroom-nginx-'));
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
  const port = await freePort();
  const redirectPort = await freePort();
  proxied = `http://127.0.0.1:${port}`;
  const conf = [
    'daemon off;',
    'master_process off;', // one process as this user: no root, no worker user
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} warn;`,
    'events { worker_connections 512; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${join(dir, 'body')};`,
    `  proxy_temp_path ${join(dir, 'proxy')};`,
    `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
    `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
    `  scgi_temp_path ${join(dir, 'scgi')};`,
    documentedConfig(Number(new URL(srv.url).port), port, redirectPort),
    '}',
  ].join('\n');
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const test = spawnSync(
    NGINX,
    ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')],
    {
      encoding: 'utf8',
    },
  );
  if (test.status !== 0) throw new Error(`nginx -t failed: ${test.stderr}\n${conf}`);
  nginx = new Proc(
    spawn(NGINX, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (!nginx.running) throw new Error(`nginx exited: ${nginx.out}`);
    if ((await fetch(`${proxied}/api/health`).catch(() => null))?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`nginx did not answer: ${nginx.out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}, 120_000);
afterAll(async () => {
  await nginx?.kill('SIGTERM');
  await srv?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('behind nginx (the documented configuration)', { timeout: 120_000 }, () => {
  it('live updates: the WebSocket upgrade passes and events arrive', async () => {
    const token = await login(proxied, ADMIN_EMAIL, ADMIN_PASSWORD);
    const api = new Api(proxied, token);
    const channel = expectStatus(await api.post('/api/channels', { name: uniq('proxied') }), 201)
      .id as string;
    const live = await LiveClient.connect(proxied, token);
    const posted = expectStatus(
      await api.post(`/api/channels/${channel}/messages`, { content: 'through nginx' }),
      201,
    );
    const ev = await live.waitFor(
      (m) =>
        m.type === 'event' &&
        m.event.event_type === 'message.created' &&
        m.event.data.message_id === posted.id,
      10_000,
    );
    expect(ev.event.data.channel_id).toBe(channel);
    live.ws.close();
  });

  it('a 20 MB upload passes (client_max_body_size) and downloads the same', async () => {
    const token = await login(proxied, ADMIN_EMAIL, ADMIN_PASSWORD);
    const api = new Api(proxied, token);
    const channel = expectStatus(await api.post('/api/channels', { name: uniq('upload') }), 201).id as string;
    const bytes = randomBytes(20 * 1024 * 1024);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), 'big.bin');
    const res = await fetch(`${proxied}/api/channels/${channel}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const back = await fetch(`${proxied}/api/files/${id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('the client address: the sign-in guard counts each client apart, and a forged X-Forwarded-For does not help', async () => {
    const email = `${uniq('guarded')}@test.local`;
    const admin = new Api(proxied, await login(proxied, ADMIN_EMAIL, ADMIN_PASSWORD));
    expectStatus(
      await admin.post('/api/users', { email, display_name: 'Guarded', password: 'right-password-1' }),
      201,
    );
    // Clients on different loopback addresses (127.0.0.2, 127.0.0.3): nginx sees each as $remote_addr.
    const attempt = (from: string, headers: Record<string, string> = {}) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ email, password: 'wrong-password' });
        const req = request(`${proxied}/api/auth/login`, {
          method: 'POST',
          localAddress: from,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            ...headers,
          },
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
    // 5 failures per address and account, then 429 (operations/auth/login-guard.ts) …
    const first: number[] = [];
    for (let i = 0; i < 6; i++) first.push(await attempt('127.0.0.2', { 'x-forwarded-for': `10.9.9.${i}` }));
    expect(first.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    // … for 127.0.0.2 although it named another address each time (nginx appends the real one, last) …
    expect(first[5]).toBe(429);
    // … while another client behind the same nginx is not throttled by it.
    expect(await attempt('127.0.0.3')).toBe(401);
    expect(await attempt('127.0.0.2')).toBe(429);
  });

  it('the plain-HTTP server of the snippet redirects to https', async () => {
    const conf = readFileSync(join(dir, 'nginx.conf'), 'utf8');
    const redirect = /listen 127\.0\.0\.1:(\d+);\n\s*server_name chat\.example\.com;\n\s*return 301/.exec(
      conf,
    );
    expect(redirect).not.toBeNull();
    const res = await fetch(`http://127.0.0.1:${redirect![1]}/admin`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toMatch(/^https:\/\/[^/]+\/admin$/);
  });
});
