import { ConfigError, loadConfig } from './config/config.js';
import { startApp } from './app.js';

/** Entry point: read the config once, start, and stop gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\nSee README.md, section Configuration.\n`);
      process.exit(2);
    }
    throw e;
  }
  const app = await startApp(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.services.log.info({ signal }, 'signal received');
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.services.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `workroom failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
