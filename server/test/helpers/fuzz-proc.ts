import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema } from './server.js';
import { serverMain } from './server-proc.js';

/**
 * The server as a real child process (the build of server/src/main.ts), so that an exception
 * that escapes a handler shows as what it is in production: the process exiting. And a raw socket
 * client that sends exact bytes, for request lines and headers no HTTP client would produce.
 */
const ROOT = join(import.meta.dirname, '../../..');

export interface ChildServer {
  child: ChildProcess;
  port: number;
  url: string;
  /** Everything the process wrote (stdout and stderr). */
  output(): string;
  alive(): boolean;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

export async function startChildServer(env: Record<string, string> = {}): Promise<ChildServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-fuzz-'));
  const port = await freePort();
  const pgUrl = process.env.DATABASE_URL;
  const schema = pgUrl ? `wr_fuzz_${randomBytes(5).toString('hex')}` : undefined;
  const child = spawn(process.execPath, serverMain(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_DATA_DIR: dataDir,
      WORKROOM_ADMIN_EMAIL: 'admin@fuzz.local',
      WORKROOM_ADMIN_PASSWORD: 'fuzz-password-1',
      WORKROOM_LOG_LEVEL: 'warn',
      ...(pgUrl ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema! } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test runner that ends early (a time-out) must not leave the server running.
  const orphanGuard = () => child.kill('SIGKILL');
  process.once('exit', orphanGuard);
  child.once('exit', () => process.off('exit', orphanGuard));
  const url = `http://127.0.0.1:${port}`;
  const server: ChildServer = {
    child,
    port,
    url,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      if (server.alive()) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
        if (server.alive()) child.kill('SIGKILL');
      }
      if (pgUrl && schema) await dropSchema(pgUrl, schema).catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!server.alive()) throw new Error(`server exited on start: ${out}`);
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`server did not start: ${out}`);
    }
    try {
      if ((await fetch(`${url}/api/health`)).ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The statuses of the responses in a byte stream (each skipped by its Content-Length). */
export function statusesOf(data: Buffer): number[] {
  const text = data.toString('latin1');
  const out: number[] = [];
  let at = 0;
  while (at < text.length) {
    const m = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(text.slice(at, at + 200));
    const end = text.indexOf('\r\n\r\n', at);
    if (!m || end < 0) break;
    out.push(Number(m[1]));
    const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(at, end + 2));
    at = end + 4 + (length ? Number(length[1]) : 0);
  }
  return out;
}

export interface RawResult {
  /** Everything the server sent. */
  data: Buffer;
  /** The statuses of the responses in `data`, in order. */
  statuses: number[];
  /** The server closed the connection (rather than our idle wait ending it). */
  closedByServer: boolean;
  error?: string;
}

/** One piece of a raw request: bytes to write, or a pause in milliseconds. */
export type RawStep = string | Buffer | { pause: number } | { close: true };

/**
 * Sends `steps` over a fresh TCP connection and collects the answer until the server closes or
 * nothing arrives for `idleMs` after the last step.
 */
export function rawRequest(port: number, steps: RawStep[], idleMs = 800): Promise<RawResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let done = false;
    let error: string | undefined;
    let idle: NodeJS.Timeout | undefined;
    const socket = connect(port, '127.0.0.1');
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      socket.destroy();
      const data = Buffer.concat(chunks);
      const statuses = statusesOf(data);
      resolve(
        error === undefined ? { data, statuses, closedByServer } : { data, statuses, closedByServer, error },
      );
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(finish, idleMs);
    };
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      arm();
    });
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('close', () => {
      closedByServer ||= !done;
      finish();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      // A reset after the server answered and closed counts as its close.
      error = e.code ?? e.message;
      closedByServer = true;
      finish();
    });
    socket.on('connect', async () => {
      for (const step of steps) {
        if (done) return;
        if (typeof step === 'string' || Buffer.isBuffer(step)) {
          socket.write(typeof step === 'string' ? Buffer.from(step, 'latin1') : step);
        } else if ('pause' in step) await new Promise((r) => setTimeout(r, step.pause));
        else {
          socket.end();
          break;
        }
      }
      arm();
    });
  });
}
