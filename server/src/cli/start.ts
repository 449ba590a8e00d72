import { createServer } from 'node:net';
import { startApp, type RunningApp } from '../app.js';
import type { Clock } from '../runtime/clock.js';
import type { Config } from '../config/config.js';
import { readConfig } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { lockDataDir } from './lock.js';
import { explainMigrationError } from './schema.js';

export const START_HELP = `Usage: workroom start

Runs the built server (server/dist) in this process, configured by the environment (README.md,
"Configuration"; a file of variables: node --env-file=/etc/workroom.env server/bin/workroom.js start).
SIGTERM or SIGINT: stop accepting, finish requests in flight, drain deliveries and live connections,
then exit 0, within WORKROOM_SHUTDOWN_TIMEOUT.

Exit codes: 0 stopped, 1 failed, 2 invalid configuration, 3 data directory in use by another server,
4 database from a newer version, 5 port in use.`;

/**
 * Starting the server, for `workroom start`, `npm start` and `node server/dist/main.js` alike: one
 * server per SQLite data directory, a port that is free before anything is written, an expected
 * refusal printed as a sentence (never a stack trace) with its exit code, and SIGTERM/SIGINT heard
 * from the first moment (a signal during the migrations stops the server as soon as it is up).
 * `clock`: the server's business clock (runtime/clock.ts); only a test's own entry passes one.
 */
export async function startServer(
  env: NodeJS.ProcessEnv = process.env,
  options: { clock?: Clock } = {},
): Promise<void> {
  let app: RunningApp | undefined;
  let signalled: string | undefined;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    if (!app) {
      process.stderr.write(`workroom: ${signal} received while starting; stopping once started\n`);
      return;
    }
    shutdown(app, signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    const config = readConfig(env);
    if (config.database.kind === 'sqlite') {
      const lock = lockDataDir(config.dataDir, 'workroom start');
      process.on('exit', () => lock.release());
      if (lock.tookOverFrom !== undefined)
        process.stderr.write(
          `workroom: took over the lock of pid ${lock.tookOverFrom}, which is not running (${lock.file})\n`,
        );
    }
    // Before the database is touched (the first start creates the administrator and prints its password).
    await assertPortFree(config);
    app = await startApp(config, { clock: options.clock }).catch((err: unknown) => {
      throw explainMigrationError(explainListenError(err, config));
    });
  } catch (err) {
    fail(err);
    return;
  }
  const running = app;
  // Every listener, timer and background task of the server catches its own errors; a promise rejection
  // that still escapes is a bug, logged here rather than ending the process (Node's default) and with
  // it every connection and delivery in flight.
  process.on('unhandledRejection', (reason: unknown) => {
    running.services.log.error({ err: reason }, 'unhandled promise rejection (a bug; the server goes on)');
  });
  if (signalled) shutdown(running, signalled);
}

function shutdown(app: RunningApp, signal: string): void {
  app.services.log.info({ signal }, 'signal received');
  app.close().then(
    () => process.exit(EXIT.ok),
    (err: unknown) => {
      app.services.log.error({ err }, 'error during shutdown');
      process.exit(EXIT.failed);
    },
  );
}

/** Binds the port for a moment: taken, the start ends here, before the database is touched. */
async function assertPortFree(config: Config): Promise<void> {
  if (config.port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(explainListenError(err, config)));
    probe.listen(config.port, config.host, () => probe.close(() => resolve()));
  });
}

function explainListenError(err: unknown, config: Config): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE')
    return new CliError(
      `Port ${config.port} on ${config.host} is in use by another program (another Workroom?). ` +
        'Stop it or set PORT to a free port.',
      EXIT.portInUse,
    );
  if (code === 'EACCES')
    return new CliError(
      `Not allowed to listen on port ${config.port} (ports below 1024 need privileges): use a port ` +
        'above 1024 behind a reverse proxy (docs/OPERATIONS.md).',
      EXIT.portInUse,
    );
  return err;
}

function fail(err: unknown): void {
  if (err instanceof CliError) {
    process.stderr.write(`workroom: ${err.message}\n`);
    process.exit(err.code);
  }
  process.stderr.write(
    `workroom failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(EXIT.failed);
}
