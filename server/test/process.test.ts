import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDurationMs } from '../src/config/config.js';
import { dropSchema } from './helpers/server.js';
import { serverMain } from './helpers/server-proc.js';

/** The server as a process: configuration errors, first start, graceful shutdown. */
const ROOT = join(import.meta.dirname, '../..');
const dirs: string[] = [];
const schemas: string[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const s of schemas) await dropSchema(process.env.DATABASE_URL!, s);
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

interface Proc {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

function run(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, serverMain(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, exited };
}

async function startProc(
  extra: Record<string, string> = {},
  reuse?: Record<string, string>,
): Promise<Proc & { url: string; dataDir: string; env: Record<string, string> }> {
  const dataDir = reuse?.WORKROOM_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'workroom-proc-'));
  dirs.push(dataDir);
  const port = await freePort();
  const env: Record<string, string> = {
    ...reuse,
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKROOM_DATA_DIR: dataDir,
    ...extra,
  };
  if (process.env.DATABASE_URL && !reuse) {
    const schema = `wr_proc_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    Object.assign(env, { DATABASE_URL: process.env.DATABASE_URL, WORKROOM_DATABASE_SCHEMA: schema });
  }
  const p = run(env);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (p.child.exitCode !== null) throw new Error(`server exited: ${p.out()}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${p.out()}`);
    try {
      if ((await fetch(`${url}/api/health`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { ...p, url, dataDir, env };
}

describe('configuration', () => {
  it('parses durations', () => {
    expect(parseDurationMs('500ms')).toBe(500);
    expect(parseDurationMs('5s')).toBe(5000);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    expect(parseDurationMs('7')).toBe(7000);
    expect(parseDurationMs('soon')).toBeNull();
  });

  it('defaults: SQLite under ./data on port 3000', () => {
    const c = loadConfig({});
    expect(c.port).toBe(3000);
    expect(c.database).toEqual({ kind: 'sqlite', file: './data/workroom.db' });
    expect(c.webhooks.retryDelaysMs).toEqual([60_000, 300_000]);
    expect(c.webhooks.timeoutMs).toBe(5000);
    expect(c.mcp.sessions).toBe(true);
  });

  it('every bad value is reported, naming the variable', () => {
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        WORKROOM_LOG_LEVEL: 'loud',
        WORKROOM_WEBHOOK_RETRY_DELAYS: '1s,2s,3s,4s',
        WORKROOM_ADMIN_PASSWORD: 'short',
      });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      for (const v of [
        'PORT',
        'DATABASE_URL',
        'WORKROOM_LOG_LEVEL',
        'WORKROOM_WEBHOOK_RETRY_DELAYS',
        'WORKROOM_ADMIN_PASSWORD',
      ])
        expect(msg).toContain(v);
    }
  });

  it('the server refuses to start on a bad value: exit code 2 and a clear message', async () => {
    const p = run({ PORT: '99999' });
    expect(await p.exited).toBe(2);
    expect(p.out()).toMatch(/Invalid configuration:[\s\S]*PORT/);
  });
});

describe('server process', () => {
  it('first start creates the admin with a generated password printed once; restarts do not', async () => {
    const p = await startProc({ WORKROOM_ADMIN_EMAIL: 'boss@proc.test', WORKROOM_LOG_LEVEL: 'info' });
    const m = /password\s+(\S+)\s+It is shown only this once/.exec(p.out());
    expect(m).not.toBeNull();
    const password = m![1]!;
    const login = await fetch(`${p.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'boss@proc.test', password }),
    });
    expect(login.status).toBe(200);
    // the password and the token never appear in the logs
    const token = ((await login.json()) as { token: string }).token;
    expect(p.out().split(password).length).toBe(2);
    expect(p.out()).not.toContain(token);
    if (!process.env.DATABASE_URL) {
      const keyFile = join(p.dataDir, 'encryption.key');
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(keyFile, 'utf8'), 'base64')).toHaveLength(32);
    }
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    // a restart on the same database keeps the admin and prints no password
    const again = await startProc({}, p.env);
    expect(again.out()).not.toContain('shown only this once');
    const relog = await fetch(`${again.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'boss@proc.test', password }),
    });
    expect(relog.status).toBe(200);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('SIGTERM: stops accepting, finishes the request in flight, exits 0', async () => {
    const p = await startProc({ WORKROOM_ADMIN_PASSWORD: 'admin-password-1', WORKROOM_LOG_LEVEL: 'info' });
    const login = await fetch(`${p.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@workroom.local', password: 'admin-password-1' }),
    });
    const { token } = (await login.json()) as { token: string };
    // A request whose body is still arriving when the signal comes.
    const body = JSON.stringify({ name: 'in-flight-channel' });
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${p.url}/api/channels`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${token}`,
        },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => {
        p.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(5)), 300);
      }, 200);
    });
    const res = await answer;
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).name).toBe('in-flight-channel');
    expect(await p.exited).toBe(0);
    expect(p.out()).toContain('shutting down');
    expect(p.out()).toContain('stopped');
    // and new connections are refused afterwards
    await expect(fetch(`${p.url}/api/health`)).rejects.toThrow();
  });

  it('WORKROOM_SHUTDOWN_DELAY: after SIGTERM it is unready but serves on (Connection: close) until the delay ends', async () => {
    const p = await startProc({ WORKROOM_SHUTDOWN_DELAY: '3s', WORKROOM_LOG_LEVEL: 'info' });
    const signalled = performance.now();
    p.child.kill('SIGTERM');
    // Readiness turns 503 at once (the balancer takes the instance out) ...
    await expect
      .poll(async () => (await fetch(`${p.url}/api/health/ready`)).status, { timeout: 2_000, interval: 20 })
      .toBe(503);
    // ... while requests, on new connections too, are still served, each told to close its connection.
    const r = await fetch(`${p.url}/api/health`);
    expect(r.status).toBe(200);
    expect(r.headers.get('connection')).toBe('close');
    expect(performance.now() - signalled).toBeLessThan(3_000);
    expect(await p.exited).toBe(0);
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(3_000);
    expect(p.out()).toContain('serving on until the shutdown delay ends');
  });
});
