import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { loadEncryptionKey, bootstrapIfEmpty } from './bootstrap.js';
import type { Config } from './config/config.js';
import { TokenBucketLimiter } from './domain/token-bucket.js';
import { BuiltinReceiver } from './bots/receiver.js';
import { BUILTIN_BOTS } from './bots/registry.js';
import { BuiltinBotRuntime } from './bots/runtime.js';
import { WebhookDeliveryService } from './delivery/deliveries.js';
import { ForegroundMeter } from './delivery/pacer.js';
import { EventBus } from './events/bus.js';
import { OutboxReader } from './events/outbox-reader.js';
import { Lifecycle } from './runtime/lifecycle.js';
import { createLogger } from './logging/logger.js';
import { BotJobHandler } from './scheduler/bot-jobs.js';
import type { JobHandler } from './scheduler/job.js';
import { Scheduler } from './scheduler/scheduler.js';
import { ToolCallRecorder } from './operations/audit/tool-calls.js';
import { KeyUsageRecorder } from './operations/auth/key-usage.js';
import { BuiltinCatalogue } from './operations/bots/builtins.js';
import { CommandDispatcher } from './operations/commands/dispatch.js';
import { LoginGuard } from './operations/auth/login-guard.js';
import type { Services } from './operations/context.js';
import { IdempotencyPurger } from './operations/idempotency.js';
import { BlobStore } from './storage/blobs.js';
import { ReaderFeed } from './realtime/feed.js';
import { RealtimeHub } from './realtime/hub.js';
import { openDatabase } from './storage/database.js';
import { listenPostgres } from './storage/pg-listen.js';
import { Storage } from './storage/storage.js';
import { allRoutes } from './transports/http/routes/index.js';
import { createHttpHandler } from './transports/http/server.js';
import { McpEndpoint } from './transports/mcp/http.js';

export interface RunningApp {
  server: Server;
  services: Services;
  /** The WebSocket hub of GET /api/realtime. */
  realtime: RealtimeHub;
  /** The durable scheduler (docs/SCHEDULER.md). */
  scheduler: Scheduler;
  /** Base URL the server listens on, e.g. http://127.0.0.1:3000 */
  url: string;
  /** Graceful stop: refuse new connections, finish in-flight requests, drain, flush, close the database. */
  close(): Promise<void>;
}

/**
 * The composition root: builds every service once from the config, registers each long-lived one with
 * the lifecycle, and starts listening. Shutdown order: stop accepting → finish requests → drain workers
 * → stop services in reverse order (recorders flush) → close storage.
 */
export async function startApp(
  config: Config,
  opts: {
    logger?: Logger;
    /** Runs due jobs instead of the bots' handler (tests, embedding); default: BotJobHandler. */
    jobHandler?: (services: Services) => JobHandler;
  } = {},
): Promise<RunningApp> {
  const log = opts.logger ?? createLogger(config);
  const storage = new Storage(await openDatabase(config.database));
  const applied = await storage.migrate((msg, data) => log.info(data ?? {}, msg));
  if (applied.length > 0) log.info({ migrations: applied, dialect: storage.dialect }, 'database migrated');
  const encryptionKey = loadEncryptionKey(config, log);
  await bootstrapIfEmpty(config, storage, log);

  const lifecycle = new Lifecycle(log);
  const services: Services = {
    config,
    storage,
    log,
    bus: new EventBus(),
    keyUsage: lifecycle.add(new KeyUsageRecorder(storage, log)),
    toolCalls: lifecycle.add(new ToolCallRecorder(storage, log)),
    rateLimiter: new TokenBucketLimiter(),
    loginGuard: new LoginGuard(),
    blobs: new BlobStore(config.dataDir),
    commands: new CommandDispatcher(config, encryptionKey),
    encryptionKey,
    builtins: new BuiltinCatalogue(BUILTIN_BOTS),
  };
  lifecycle.add(new IdempotencyPurger(services));
  // Built-in bots (bots/, docs/BUILTIN-BOTS.md): installed in every organization at start; their
  // commands run in process; their deliveries reach them through `builtinReceiver`.
  const builtinBots = lifecycle.add(new BuiltinBotRuntime(services, BUILTIN_BOTS));
  services.commands.useInProcess(builtinBots);
  const builtinReceiver = new BuiltinReceiver(builtinBots);
  const mcp = new McpEndpoint(services);
  if (mcp.sessions) lifecycle.add(mcp.sessions);
  // The ordered outbox stream (events/outbox-reader.ts) and the webhook fan-out + worker that consume it.
  // On PostgreSQL it hears other instances' events through LISTEN/NOTIFY. Deliveries are paced while
  // requests are served (delivery/pacer.ts): `foreground` counts the requests in flight.
  const db = config.database;
  const outbox = lifecycle.add(
    new OutboxReader(storage, services.bus, log, {
      ...(db.kind === 'postgres' && {
        listen: (channel, onPayload) =>
          listenPostgres(db.url, channel, onPayload, {
            onError: (err) => log.warn({ err }, 'outbox LISTEN'),
          }),
      }),
    }),
  );
  const foreground = new ForegroundMeter();
  lifecycle.add(new WebhookDeliveryService(services, outbox, { inProcess: builtinReceiver, foreground }));
  const realtime = lifecycle.add(new RealtimeHub(services, new ReaderFeed(outbox)));
  services.commands.usePush(realtime); // ephemeral command replies reach the invoker's live connections
  // The durable scheduler: due jobs → built-in bots' handlers in process, custom bots' job.due events.
  const scheduler = lifecycle.add(
    new Scheduler({
      storage,
      log,
      config: config.scheduler,
      handler: opts.jobHandler?.(services) ?? new BotJobHandler(services, builtinBots.jobs),
    }),
  );
  services.jobs = scheduler; // jobs.schedule wakes it for a job due soon
  await lifecycle.start();

  const handler = createHttpHandler(services, allRoutes(config.publicUrl, mcp));
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const server = createServer(
    {
      keepAliveTimeout: 5000,
      // Slow clients (one byte at a time) are cut off; a real client never comes near these.
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      // How often those time-outs are checked (Node's default, 30 s, would let a slow client linger).
      connectionsCheckingInterval: Math.min(1000, config.http.headersTimeoutMs),
    },
    (req, res) => {
      inFlight++;
      foreground.begin();
      res.on('close', () => {
        inFlight--;
        foreground.end();
        if (inFlight === 0) idle?.();
      });
      handler(req, res);
    },
  );
  server.on('clientError', answerClientError);
  realtime.attach(server);
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
  log.info(
    {
      listen: `${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
      url,
      dialect: storage.dialect,
    },
    'workroom listening',
  );

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info('shutting down');
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (idle = resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref()),
        ]);
      }
      server.closeAllConnections();
      await realtime.drain(deadline); // upgraded sockets would keep the server open
      await closed;
      await lifecycle.stop(deadline);
      await storage.close();
      log.info('stopped');
    })());

  return { server, services, realtime, scheduler, url, close };
}

/**
 * A request Node's parser refused (bad request line, header too large, time-out): answered with a
 * plain status and the connection closed, unless part of a response was written already, in which
 * case the connection is just closed.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inProgress?.headersSent) {
    socket.destroy();
    return;
  }
  const status =
    err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const code = status === 408 ? 'request_timeout' : status === 431 ? 'headers_too_large' : 'bad_request';
  const body = JSON.stringify({ error: { code, message: STATUS_CODES[status] } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
