import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './server.js';

/**
 * A real Workroom server process (server/src/main.ts: configuration from the environment, graceful stop
 * on SIGTERM) on a fixed port, for tests that stop, kill and restart the server on one data directory
 * or PostgreSQL schema.
 */

const ROOT = join(import.meta.dirname, '../../..');
const MAIN = join(ROOT, 'server/src/main.ts');
/** The same server on a test clock its parent moves (helpers/clock-server-main.ts). */
const CLOCK_MAIN = join(ROOT, 'server/test/helpers/clock-server-main.ts');

/**
 * The built server (CI builds before testing) when it is newer than every source file, else main.ts
 * through tsx: the arguments to give node. A build starts in a fraction of tsx's time, which matters to
 * tests that restart the server many times.
 */
export function builtOrSource(): string[] {
  const src = join(ROOT, 'server/src');
  const dist = join(ROOT, 'server/dist/main.js');
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((e) =>
        e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
      ),
    );
  return existsSync(dist) && statSync(dist).mtimeMs >= newest(src) ? [dist] : ['--import', 'tsx', MAIN];
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

export class ServerProc {
  out = '';
  readonly exited: Promise<void>;
  constructor(readonly child: ChildProcess) {
    this.exited = new Promise((r) => child.once('exit', () => r()));
    child.stdout!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-100_000)));
    child.stderr!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-100_000)));
    const guard = () => child.kill('SIGKILL');
    process.once('exit', guard);
    child.once('exit', () => process.off('exit', guard));
  }

  /**
   * Moves the business clock of a server started with `{ clock }` on to `at` (epoch ms; never back)
   * and answers its time then.
   */
  setClock(at: number): Promise<number> {
    const child = this.child;
    if (!child.send) throw new Error('this server process was not started with { clock }');
    return new Promise((resolve, reject) => {
      const onMessage = (m: { now: number }) => {
        child.off('exit', onExit);
        resolve(m.now);
      };
      const onExit = () => {
        child.off('message', onMessage);
        reject(new Error('the server process exited'));
      };
      child.once('message', onMessage);
      child.once('exit', onExit);
      child.send!({ set: at });
    });
  }

  /** The business time of a server started with `{ clock }` (epoch ms). */
  clockNow(): Promise<number> {
    return this.setClock(0);
  }

  async stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

/**
 * Starts main.ts listening on `port` with the test administrator, rate limits off and `env` on top,
 * and waits (up to 45 s) until /api/health answers. `clock`: on a test clock the test moves
 * (`ServerProc.setClock`), starting at `clock.start` (epoch ms) if given.
 */
export async function startServerProc(
  port: number,
  env: Record<string, string>,
  clock?: { start?: number },
  /** The node arguments that start the server (default: main.ts through tsx; see `builtOrSource`). */
  command?: string[],
): Promise<ServerProc> {
  const child = spawn(process.execPath, command ?? ['--import', 'tsx', clock ? CLOCK_MAIN : MAIN], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_ADMIN_EMAIL: ADMIN_EMAIL,
      WORKROOM_ADMIN_PASSWORD: ADMIN_PASSWORD,
      WORKROOM_LOG_LEVEL: 'warn',
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
      WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
      ...(clock?.start !== undefined ? { WORKROOM_TEST_CLOCK_START: String(clock.start) } : {}),
      ...env,
    },
    stdio: clock ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  const proc = new ServerProc(child);
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited: ${proc.out}`);
    if (Date.now() > deadline) {
      await proc.stop('SIGKILL');
      throw new Error(`server did not start: ${proc.out}`);
    }
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/health`)).ok) return proc;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
