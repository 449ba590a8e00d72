import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startApp, type RunningApp } from '../app.js';
import { createLogger } from '../logging/logger.js';
import { TestClock } from '../runtime/clock.js';
import { readConfig } from './common.js';
import { CliError, EXIT } from './exit-codes.js';

export const HARNESS_HELP = `Usage: workroom harness

FOR TESTS ONLY (docs/TESTING-BOTS.md): a throwaway Workroom for a bot's test suite, driven by the
process that started it. @workroom/testing (Node) and workroom.testing (Python) run it for you.

- SQLite in a new temporary directory, deleted when the process exits; DATABASE_URL is ignored.
- 127.0.0.1 on a free port; webhooks may go to 127.0.0.1 and ::1 (WORKROOM_WEBHOOK_ALLOWED_RANGES).
- A test clock. Its only control is this process's stdin: one JSON object per line,
    {"advance_ms": N}     moves the server's business time N ms on (timers due fire, e.g. scheduled jobs)
    {"set": epochMs|ISO}  moves it on to that time (never back)
    {}                    asks the time
  each answered with one line on stdout {"now": epochMs} (or {"error": "..."}); an "id" is echoed.
- When ready, prints one line on stdout:
    {"ready": true, "url", "port", "now": epochMs, "dir", "admin": {"email", "password", "token"}}
  (logs go to stderr, WORKROOM_LOG_LEVEL default warn).
- Exits when stdin closes (the test runner ended or crashed), on SIGTERM or SIGINT.

Nothing on the network reaches the clock: there is no endpoint or variable for it, and the server
listens on 127.0.0.1 only. Other settings come from the environment as for \`workroom start\`; the
rate limits default to generous values for tests.`;

/** Settings of a test server; the environment may override these (not the database, port or host). */
const TEST_DEFAULTS: Record<string, string> = {
  WORKROOM_LOG_LEVEL: 'warn',
  WORKROOM_WEBHOOK_ALLOWED_RANGES: '127.0.0.0/8,::1/128',
  WORKROOM_RATE_LIMIT_USER_PER_SECOND: '1000',
  WORKROOM_RATE_LIMIT_USER_BURST: '10000',
  WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '1000',
  WORKROOM_RATE_LIMIT_BOT_BURST: '10000',
  WORKROOM_SHUTDOWN_TIMEOUT: '3s',
  WORKROOM_ORG_NAME: 'Harness',
};

/** A port free on 127.0.0.1 now (the public URL must name it before the server listens). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function write(line: unknown): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** One clock command (a line of stdin) → its answer. */
export function clockCommand(clock: TestClock, line: string): Record<string, unknown> {
  let msg: unknown;
  try {
    msg = JSON.parse(line);
  } catch {
    return { error: 'not JSON: send one object per line, e.g. {"advance_ms": 1000}' };
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg))
    return { error: 'send an object: {"advance_ms": N}, {"set": epochMs} or {}' };
  const m = msg as { id?: unknown; advance_ms?: unknown; set?: unknown };
  const id = m.id === undefined ? {} : { id: m.id };
  try {
    if (m.advance_ms !== undefined) {
      if (typeof m.advance_ms !== 'number' || !Number.isFinite(m.advance_ms) || m.advance_ms < 0)
        return {
          ...id,
          error: 'advance_ms must be a number of milliseconds ≥ 0 (the clock only moves forward)',
        };
      clock.advance(m.advance_ms);
    } else if (m.set !== undefined) {
      if (typeof m.set !== 'number' && typeof m.set !== 'string')
        return { ...id, error: 'set must be epoch milliseconds or an ISO 8601 time' };
      clock.set(m.set);
    }
  } catch (err) {
    // A RangeError of the clock, or a timer that threw (the other due timers fired).
    return { ...id, now: clock.now(), error: err instanceof Error ? err.message : String(err) };
  }
  return { ...id, now: clock.now() };
}

/** `workroom harness`: runs until stdin closes (HARNESS_HELP). */
export async function runHarness(parentEnv: NodeJS.ProcessEnv): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'workroom-harness-'));
  let removed = false;
  const removeDir = () => {
    if (removed) return;
    removed = true;
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', removeDir);
  const password = randomBytes(12).toString('base64url');
  const email = 'admin@harness.test';
  const env: NodeJS.ProcessEnv = { ...TEST_DEFAULTS, ...parentEnv };
  for (const k of [
    'DATABASE_URL',
    'WORKROOM_DATABASE_SCHEMA',
    'WORKROOM_ENCRYPTION_KEY',
    'WORKROOM_ENCRYPTION_KEY_PREVIOUS',
  ])
    delete env[k];
  // A key of its own (the data directory's generated key would be logged as a warning to back up).
  env.WORKROOM_ENCRYPTION_KEY = randomBytes(32).toString('base64');
  const clock = new TestClock(
    env.WORKROOM_TEST_CLOCK_START ? Number(env.WORKROOM_TEST_CLOCK_START) : undefined,
  );

  let app: RunningApp | undefined;
  for (let attempt = 1; !app; attempt++) {
    const port = await freePort();
    Object.assign(env, {
      WORKROOM_DATA_DIR: join(dir, `data-${attempt}`),
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKROOM_PUBLIC_URL: `http://127.0.0.1:${port}`,
      WORKROOM_ADMIN_EMAIL: email,
      WORKROOM_ADMIN_PASSWORD: password,
    });
    const config = readConfig(env);
    try {
      app = await startApp(config, {
        clock,
        metricsPort: null,
        logger: createLogger(config, process.stderr),
      });
    } catch (err) {
      // Another program took the port between the probe and the listen: try another one.
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 5) throw err;
    }
  }
  const running = app;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= running.close().then(
      () => {
        removeDir();
        process.exit(EXIT.ok);
      },
      (err: unknown) => {
        process.stderr.write(`workroom harness: error while stopping: ${String(err)}\n`);
        removeDir();
        process.exit(EXIT.failed);
      },
    ));
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.on('unhandledRejection', (reason: unknown) => {
    running.services.log.error({ err: reason }, 'unhandled promise rejection (a bug; the server goes on)');
  });

  const login = await fetch(`${running.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (!login.ok) throw new CliError(`the harness admin could not sign in (${login.status})`, EXIT.failed);
  const { token } = (await login.json()) as { token: string };

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() !== '') write(clockCommand(clock, line));
  });
  lines.on('close', () => void stop());
  write({
    ready: true,
    url: running.url,
    port: Number(new URL(running.url).port),
    now: clock.now(),
    dir,
    admin: { email, password, token },
  });
}
