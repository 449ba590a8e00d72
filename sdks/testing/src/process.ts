import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** What `workroom harness` prints when it is ready (server/src/cli/harness.ts). */
export interface ReadyLine {
  url: string;
  port: number;
  now: number;
  /** The temporary directory of its data (deleted when it stops). */
  dir: string;
  admin: { email: string; password: string; token: string };
}

/**
 * Where the built server's `workroom` command is: `server` (a checkout, or its server/bin/workroom.js),
 * else WORKROOM_SERVER, else the checkout this package sits in (the npm workspace).
 */
export function findServer(server = process.env.WORKROOM_SERVER): string {
  let bin: string;
  if (server) {
    const p = resolve(server);
    bin = existsSync(p) && statSync(p).isDirectory() ? join(p, 'server/bin/workroom.js') : p;
  } else {
    // dist/process.js (or src/process.ts) → sdks/testing → the checkout's root.
    const here = dirname(realpathSync(fileURLToPath(import.meta.url)));
    bin = join(here, '../../../server/bin/workroom.js');
  }
  if (!existsSync(bin))
    throw new Error(
      `@workroom/testing: the Workroom server is not at ${bin}. Set WORKROOM_SERVER to a Workroom checkout ` +
        '(built with `npm ci && npm run build`) or to its server/bin/workroom.js.',
    );
  if (!existsSync(join(dirname(bin), '../dist/cli/index.js')))
    throw new Error(
      `@workroom/testing: the server at ${dirname(dirname(bin))} is not built: run \`npm run build\` in its checkout.`,
    );
  return bin;
}

/**
 * The `workroom harness` child process: its ready line, then clock commands over stdin answered one line
 * each on stdout, in order. Closing stdin stops it (and a dead parent closes it too).
 */
export class HarnessProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #stderr: string[] = [];
  readonly #waiting: { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }[] = [];
  #exited: Promise<number | null>;
  #exitCode: number | null | undefined;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.#exitCode = code ?? (signal ? -1 : null);
        for (const w of this.#waiting.splice(0))
          w.reject(new Error(`the Workroom harness exited (${signal ?? code})${this.stderrTail()}`));
        resolve(code);
      }),
    );
    createInterface({ input: child.stderr }).on('line', (line) => {
      this.#stderr.push(line);
      if (this.#stderr.length > 40) this.#stderr.shift();
      if (process.env.WORKROOM_HARNESS_LOG) process.stderr.write(`[workroom] ${line}\n`);
    });
  }

  /** Starts `node <bin> harness` and waits for its ready line. */
  static async start(opts: {
    server?: string;
    env?: Record<string, string>;
    timeoutMs?: number;
  }): Promise<{ proc: HarnessProcess; ready: ReadyLine }> {
    const bin = findServer(opts.server);
    const child = spawn(process.execPath, [bin, 'harness'], {
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const proc = new HarnessProcess(child);
    // Never outlive the test process, even when it ends without stop().
    const kill = () => child.kill('SIGKILL');
    process.once('exit', kill);
    void proc.#exited.then(() => process.removeListener('exit', kill));
    const lines = createInterface({ input: child.stdout });
    const ready = await new Promise<ReadyLine>((resolve, reject) => {
      const timer = setTimeout(() => {
        kill();
        reject(
          new Error(
            `the Workroom harness did not start within ${opts.timeoutMs ?? 60_000} ms${proc.stderrTail()}`,
          ),
        );
      }, opts.timeoutMs ?? 60_000);
      void proc.#exited.then((code) => {
        clearTimeout(timer);
        reject(
          new Error(`the Workroom harness exited with code ${code} before it was ready${proc.stderrTail()}`),
        );
      });
      let first = true;
      lines.on('line', (line) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return; // not ours
        }
        if (first && msg.ready === true) {
          first = false;
          clearTimeout(timer);
          resolve(msg as unknown as ReadyLine);
          return;
        }
        const w = proc.#waiting.shift();
        if (!w) return;
        if (typeof msg.error === 'string') w.reject(new Error(`workroom harness: ${msg.error}`));
        else w.resolve(msg);
      });
    });
    return { proc, ready };
  }

  /** Sends one clock command and resolves with its answer's `now`. */
  async send(command: Record<string, unknown>): Promise<number> {
    if (this.#exitCode !== undefined) throw new Error('the Workroom harness has stopped');
    const answer = new Promise<Record<string, unknown>>((resolve, reject) =>
      this.#waiting.push({ resolve, reject }),
    );
    this.#child.stdin.write(`${JSON.stringify(command)}\n`);
    return (await answer).now as number;
  }

  /** The last lines the server wrote on stderr (for failure messages). */
  stderrTail(): string {
    return this.#stderr.length
      ? `\nlast lines of its stderr:\n  ${this.#stderr.slice(-15).join('\n  ')}`
      : '';
  }

  /** Closes stdin (the harness stops, removing its data) and waits for the exit; SIGKILL after `ms`. */
  async stop(ms = 15_000): Promise<void> {
    if (this.#exitCode !== undefined) return;
    this.#child.stdin.end();
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), ms);
    await this.#exited;
    clearTimeout(timer);
  }
}
