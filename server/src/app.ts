import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { loadEncryptionKey, bootstrapIfEmpty } from './bootstrap.js';
import type { Config } from './config/config.js';
import { EventBus } from './events/bus.js';
import { createLogger } from './logging/logger.js';
import { KeyUsageRecorder } from './operations/auth/key-usage.js';
import type { Services } from './operations/context.js';
import { openDatabase } from './storage/database.js';
import { Storage } from './storage/storage.js';
import { allRoutes } from './transports/http/routes/index.js';
import { createHttpHandler } from './transports/http/server.js';

export interface RunningApp {
  server: Server;
  services: Services;
  /** Base URL the server listens on, e.g. http://127.0.0.1:3000 */
  url: string;
  /** Graceful stop: refuse new connections, finish in-flight requests, flush, close the database. */
  close(): Promise<void>;
}

/** The composition root: builds every service once from the config and starts listening. */
export async function startApp(config: Config, opts: { logger?: Logger } = {}): Promise<RunningApp> {
  const log = opts.logger ?? createLogger(config);
  const storage = new Storage(await openDatabase(config.database));
  const applied = await storage.migrate();
  if (applied.length > 0) log.info({ migrations: applied, dialect: storage.dialect }, 'database migrated');
  const encryptionKey = loadEncryptionKey(config, log);
  await bootstrapIfEmpty(config, storage, log);

  const keyUsage = new KeyUsageRecorder(storage, log);
  keyUsage.start();
  const services: Services = { config, storage, log, bus: new EventBus(), keyUsage, encryptionKey };

  const handler = createHttpHandler(services, allRoutes(config.publicUrl));
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const server = createServer({ keepAliveTimeout: 5000 }, (req, res) => {
    inFlight++;
    res.on('close', () => {
      inFlight--;
      if (inFlight === 0) idle?.();
    });
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host =
    addr.family === 'IPv6'
      ? `[${addr.address === '::' ? '::1' : addr.address}]`
      : addr.address === '0.0.0.0'
        ? '127.0.0.1'
        : addr.address;
  const url = `http://${host}:${addr.port}`;
  log.info({ url, dialect: storage.dialect }, 'workroom listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info('shutting down');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (idle = resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref()),
        ]);
      }
      server.closeAllConnections();
      await closed;
      await keyUsage.stop();
      await storage.close();
      log.info('stopped');
    })());

  return { server, services, url, close };
}
