import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, ADMIN_PASSWORD, dropSchema } from './server.js';
import { freePort } from './server-proc.js';

/**
 * The `workroom` command as an operator runs it: `node server/bin/workroom.js <sub>` (the package's bin)
 * against the built server (server/dist, built by vitest's global setup when missing or stale), one data directory
 * (and on PostgreSQL one schema) per installation.
 */
export const ROOT = join(import.meta.dirname, '../../..');
export const WORKROOM = join(ROOT, 'server/bin/workroom.js');

/** Variables to set, or to unset (null). */
export type Env = Record<string, string | null>;

export class Proc {
  out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  constructor(readonly child: ChildProcess) {
    this.exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.out += d.toString()));
    const guard = () => child.kill('SIGKILL');
    process.once('exit', guard);
    child.once('exit', () => process.off('exit', guard));
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async kill(signal: NodeJS.Signals = 'SIGKILL') {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }
}

/** One installation: a data directory, a port, and on PostgreSQL (DATABASE_URL) a schema of its own. */
export class Install {
  readonly env: Record<string, string>;
  readonly url: string;
  private constructor(
    readonly dataDir: string,
    readonly port: number,
    readonly schema: string | undefined,
    extra: Record<string, string>,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_DATA_DIR: dataDir,
      WORKROOM_ADMIN_EMAIL: ADMIN_EMAIL,
      WORKROOM_ADMIN_PASSWORD: ADMIN_PASSWORD,
      WORKROOM_LOG_LEVEL: 'info',
      WORKROOM_METRICS_PORT: '0',
      ...(schema && { DATABASE_URL: process.env.DATABASE_URL!, WORKROOM_DATABASE_SCHEMA: schema }),
      ...extra,
    };
  }

  static async create(extra: Record<string, string> = {}): Promise<Install> {
    const dataDir = mkdtempSync(join(tmpdir(), 'workroom-ops-'));
    const schema = process.env.DATABASE_URL ? `wr_ops_${randomBytes(5).toString('hex')}` : undefined;
    return new Install(dataDir, await freePort(), schema, extra);
  }

  /** `workroom <args>` with this installation's environment (plus `env`), running on. */
  spawn(args: string[], env: Env = {}, input?: string): Proc {
    const child = spawn(process.execPath, [WORKROOM, ...args], {
      cwd: ROOT,
      env: this.envWith(env),
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin!.end(input);
    return new Proc(child);
  }

  /** `workroom <args>` to its end: exit code and output. */
  /** This installation's environment with `env` on top (null: unset). */
  envWith(env: Env): Record<string, string> {
    const all: Record<string, string> = { ...this.env };
    for (const [k, v] of Object.entries(env)) {
      if (v === null) delete all[k];
      else all[k] = v;
    }
    return all;
  }

  async run(args: string[], env: Env = {}, input?: string) {
    const p = this.spawn(args, env, input);
    const { code } = await p.exited;
    return { code, out: p.out };
  }

  /** `workroom start`, resolved once /api/health answers (or rejected with the output when it exits). */
  async start(env: Env = {}, timeoutMs = 45_000): Promise<Proc> {
    const p = this.spawn(['start'], env);
    await waitHealthy(this.url, p, timeoutMs);
    return p;
  }

  async cleanup(): Promise<void> {
    rmSync(this.dataDir, { recursive: true, force: true });
    if (this.schema) await dropSchema(process.env.DATABASE_URL!, this.schema);
  }
}

export async function waitHealthy(url: string, p: Proc, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!p.running) throw new Error(`server exited (${String(p.child.exitCode)}): ${p.out}`);
    if (Date.now() > deadline) {
      await p.kill();
      throw new Error(`server did not become healthy: ${p.out}`);
    }
    try {
      if ((await fetch(`${url}/api/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** True while something accepts connections on the port. */
export async function listening(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
