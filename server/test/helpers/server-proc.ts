import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './server.js';

/**
 * A real Workroom server process (the build of server/src/main.ts: configuration from the environment,
 * graceful stop on SIGTERM) on a fixed port, for tests that stop, kill and restart the server on one data directory
 * or PostgreSQL schema.
 */

const ROOT = join(import.meta.dirname, '../../..');
const DIST = join(ROOT, 'server/dist');
/** The same server on a test clock its parent moves (helpers/clock-server-main.ts). */
const CLOCK_MAIN = join(ROOT, 'server/test/helpers/clock-server-main.ts');

/**
 * The node arguments that start the built server, server/dist/main.js. Every server process a test
 * starts runs the build: vitest's global setup (helpers/global-setup.ts) makes it once per run when it
 * is missing or older than the sources (CI built it already). Through tsx each start cost about 1 s more
 * CPU (the whole server transpiled and loaded through its hooks), for some 50 starts a run per database.
 */
export function serverMain(): string[] {
  const main = join(DIST, 'main.js');
  if (!existsSync(main))
    throw new Error('server/dist is missing: run the tests through vitest (its global setup builds it)');
  return [main];
}

/**
 * A helper of these tests that runs as a process of its own (clock-server-main.ts, scheduler-proc.ts,
 * resume-attacker-child.ts) as JavaScript that node runs without tsx: transpiled here with TypeScript's
 * transpileModule (types are the typecheck's business), its imports of server/src pointed at the build
 * (server/dist, see `serverMain`). Written once per content under node_modules/.cache, where its
 * packages resolve; the path to give node.
 */
export function helperEntry(file: string): string {
  const source = readFileSync(file, 'utf8');
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const out = join(ROOT, 'node_modules/.cache/workroom-test-helpers', `${basename(file, '.ts')}-${hash}.mjs`);
  if (existsSync(out)) return out;
  serverMain(); // the build must be there
  const dist = pathToFileURL(DIST).href;
  const js = ts
    .transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      fileName: file,
    })
    .outputText.replace(/(from |import\()(['"])\.\.\/\.\.\/src\//g, `$1$2${dist}/`);
  const relative = /(from |import\()['"]\.\.?\//.exec(js);
  if (relative) throw new Error(`${file}: helperEntry runs files that import only server/src and packages`);
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, js);
  renameSync(tmp, out); // whole, even with other workers writing the same file
  return out;
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
  /** The node arguments that start the server (default: the build, `serverMain`, or on a clock `helperEntry(CLOCK_MAIN)`). */
  command?: string[],
): Promise<ServerProc> {
  const child = spawn(process.execPath, command ?? (clock ? [helperEntry(CLOCK_MAIN)] : serverMain()), {
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
