import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { bootstrapIfEmpty } from './bootstrap.js';
import { PASSWORD_COST, type PasswordCost } from './domain/secrets.js';
import type { Config } from './config/config.js';
import { TokenBucketLimiter, type RateLimiter } from './domain/token-bucket.js';
import { LeasedRateLimiter } from './domain/leased-rate-limiter.js';
import { BuiltinReceiver } from './bots/receiver.js';
import { BUILTIN_BOTS } from './bots/registry.js';
import { BuiltinBotRuntime } from './bots/runtime.js';
import { WebhookDeliveryService } from './delivery/deliveries.js';
import { ForegroundMeter } from './delivery/pacer.js';
import { EventBus } from './events/bus.js';
import { OutboxReader } from './events/outbox-reader.js';
import { Lifecycle } from './runtime/lifecycle.js';
import { systemClock, type Clock } from './runtime/clock.js';
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
import { ApprovalSweeper } from './operations/approvals/pending-actions.js';
import { BLOB_SWEEP_EVERY_MS, Blobs } from './storage/blobs.js';
import { establishEncryptionKeys } from './encryption-key.js';
import { ReaderFeed } from './realtime/feed.js';
import { RealtimeHub } from './realtime/hub.js';
import { ClusterPresence, PRESENCE_EXPIRY_MS } from './realtime/presence.js';
import { LeaderLease } from './scheduler/leader.js';
import { openDatabase } from './storage/database.js';
import { listenPostgres } from './storage/pg-listen.js';
import { Storage } from './storage/storage.js';
import { allRoutes } from './transports/http/routes/index.js';
import { createHttpHandler } from './transports/http/server.js';
import { OutboxCommittedEvents } from './events/committed.js';
import { McpEndpoint } from './transports/mcp/http.js';
import { BotSocketHub } from './transports/socket/hub.js';
import { CommandForwarder } from './operations/commands/forward.js';
import { FANOUT_CURSOR } from './delivery/fanout.js';
import { Readiness } from './metrics/health.js';
import { noMetrics } from './metrics/hooks.js';
import { MetricsListener } from './metrics/listener.js';
import { PromMetrics } from './metrics/registry.js';

export interface RunningApp {
  server: Server;
  services: Services;
  /** The WebSocket hub of GET /api/realtime. */
  realtime: RealtimeHub;
  /** Bots' sockets of GET /api/bots/socket (docs/SOCKET.md). */
  botSockets: BotSocketHub;
  /** The durable scheduler (docs/SCHEDULER.md). */
  scheduler: Scheduler;
  /** Base URL the server listens on, e.g. http://127.0.0.1:3000 */
  url: string;
  /** Prometheus metrics (docs/METRICS.md), unless turned off; `url` is where GET /metrics answers. */
  metrics?: { registry: PromMetrics; readonly url: string | undefined };
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
    /**
     * Business time (runtime/clock.ts); default: the system clock. Tests pass a TestClock here, in
     * process: no environment variable or endpoint reaches it.
     */
    clock?: Clock;
    /**
     * scrypt's cost for new password hashes (domain/secrets.ts); default PASSWORD_COST. Test servers
     * pass a cheaper one, in process only, as Django's test settings swap in a fast hasher: each hash
     * keeps its own cost, so verifying is the same code either way.
     */
    passwordCost?: PasswordCost;
    /** Overrides WORKROOM_METRICS_PORT in process: 0 listens on any free port (tests), null turns metrics off. */
    metricsPort?: number | null;
  } = {},
): Promise<RunningApp> {
  const log = opts.logger ?? createLogger(config);
  const storage = new Storage(await openDatabase(config.database));
  const applied = await storage.migrate((msg, data) => log.info(data ?? {}, msg));
  if (applied.length > 0) log.info({ migrations: applied, dialect: storage.dialect }, 'database migrated');
  // The cluster's one key, checked against the database's verifier (encryption-key.ts): another key refuses.
  const { key: encryptionKey, previous: previousEncryptionKeys } = await establishEncryptionKeys(
    config,
    storage,
    log,
    opts.clock ?? systemClock,
  ).catch(async (err: unknown) => {
    await storage.close();
    throw err;
  });
  const passwordCost = opts.passwordCost ?? PASSWORD_COST;
  const firstStart = await bootstrapIfEmpty(config, storage, log, passwordCost);

  const lifecycle = new Lifecycle(log);
  const clock = opts.clock ?? systemClock;
  // First: the singleton work's lease is taken before the services that ask for it start.
  const leader = lifecycle.add(new LeaderLease(storage.leases, clock, log));
  const metricsPort = opts.metricsPort !== undefined ? opts.metricsPort : config.metrics.port;
  const metrics = metricsPort === null ? undefined : new PromMetrics();
  const readiness = new Readiness(storage);
  const blobs = lifecycle.add(new Blobs(config.blobStore, config.dataDir, storage, clock, log));
  const services: Services = {
    config,
    clock,
    passwordCost,
    storage,
    log,
    bus: new EventBus(),
    keyUsage: lifecycle.add(new KeyUsageRecorder(storage, log)),
    toolCalls: lifecycle.add(new ToolCallRecorder(storage, log, clock)),
    rateLimiter: rateLimiterFor(storage, clock), // buckets refill by the clock
    leader,
    loginGuard: new LoginGuard(
      () => rateLimiterFor(storage, clock),
      () => services.metrics.rejected('sign_in'),
    ),
    blobs,
    commands: new CommandDispatcher(config, encryptionKey, clock),
    encryptionKey,
    previousEncryptionKeys,
    builtins: new BuiltinCatalogue(BUILTIN_BOTS),
    metrics: metrics ?? noMetrics,
    readiness,
  };
  lifecycle.add(new IdempotencyPurger(services));
  // Built-in bots (bots/, docs/BUILTIN-BOTS.md): installed in every organization at start; their
  // commands run in process; their deliveries reach them through `builtinReceiver`.
  const builtinBots = lifecycle.add(new BuiltinBotRuntime(services, BUILTIN_BOTS));
  services.commands.useInProcess(builtinBots);
  // Approved actions a crash left unexecuted, expiries, outcomes not yet told (docs/API.md "Approval").
  lifecycle.add(new ApprovalSweeper(services));
  const builtinReceiver = new BuiltinReceiver(builtinBots);
  // MCP list_changed notifications hear every instance's changes: the shared outbox, once it is read.
  const committed = new OutboxCommittedEvents();
  const mcp = new McpEndpoint(services, committed);
  if (mcp.sessions) lifecycle.add(mcp.sessions);
  // The ordered outbox stream (events/outbox-reader.ts) and the webhook fan-out + worker that consume it.
  // On PostgreSQL it hears other instances' events through LISTEN/NOTIFY. Deliveries are paced while
  // requests are served (delivery/pacer.ts): `foreground` counts the requests in flight.
  const db = config.database;
  const outbox = lifecycle.add(
    new OutboxReader(storage, services.bus, log, {
      clock,
      ...(db.kind === 'postgres' && {
        listen: (channel, onPayload) =>
          listenPostgres(db.url, channel, onPayload, {
            onError: (err) => log.warn({ err }, 'outbox LISTEN'),
          }),
      }),
    }),
  );
  lifecycle.add(committed.readFrom(outbox));
  const foreground = new ForegroundMeter();
  // Bots' sockets (docs/SOCKET.md): one more transport of the delivery worker, and of slash commands.
  const botSockets = lifecycle.add(new BotSocketHub(services));
  services.commands.useSockets(botSockets);
  const deliveries = lifecycle.add(
    new WebhookDeliveryService(services, outbox, {
      inProcess: builtinReceiver,
      socket: botSockets,
      foreground,
    }),
  );
  botSockets.onConnected = (botId) => void deliveries.worker.socketConnected(botId);
  const realtime = lifecycle.add(new RealtimeHub(services, new ReaderFeed(outbox)));
  services.commands.usePush(realtime); // ephemeral command replies reach the invoker's live connections
  if (storage.presence) {
    const presence = new ClusterPresence(storage.presence, clock, log, () => realtime.connectedUsers());
    realtime.usePresence(lifecycle.add(presence)); // who is online, as every instance sees it
    leader.every(PRESENCE_EXPIRY_MS, () => presence.prune()); // the rows of both presences
    // Which instance holds which bot's sockets: the others leave those bots' deliveries to it.
    const bots = new ClusterPresence(storage.presence, clock, log, () => botSockets.presenceIds());
    botSockets.usePresence(lifecycle.add(bots));
    // Slash commands for a bot whose socket is on another instance are forwarded to it.
    const forwards = storage.commandForwards;
    if (forwards && db.kind === 'postgres') {
      const forwarder = new CommandForwarder(services, forwards, botSockets, (channel, onPayload) =>
        listenPostgres(db.url, channel, onPayload, {
          onError: (err) => log.warn({ err }, 'commands LISTEN'),
        }),
      );
      services.commands.useForwarder(lifecycle.add(forwarder));
      leader.every(600_000, () => forwards.prune(clock.now() - 3_600_000)); // left by instances that died
    }
  }
  leader.every(BLOB_SWEEP_EVERY_MS, () => blobs.sweep()); // uploads a crash cut short
  // The burst rule's window of recent texts (operations/guardrails.ts): nothing reads rows a day old.
  leader.every(600_000, () =>
    storage.stores.keyRecentTexts.prune(new Date(clock.now() - 86_400_000).toISOString()),
  );
  const buckets = storage.sharedRateBuckets;
  if (buckets) {
    leader.every(600_000, () => buckets.prune(clock.now() - 3_600_000)); // untouched for an hour
  }
  // The durable scheduler: due jobs → built-in bots' handlers in process, custom bots' job.due events.
  const scheduler = lifecycle.add(
    new Scheduler({
      storage,
      log,
      config: config.scheduler,
      clock: services.clock,
      handler: opts.jobHandler?.(services) ?? new BotJobHandler(services, builtinBots.jobs),
      metrics: services.metrics,
      isLeader: () => services.leader.isLeader,
    }),
  );
  services.jobs = scheduler; // jobs.schedule wakes it for a job due soon
  // Metrics on their own listener; their gauges read these at scrape time (metrics/sources.ts).
  const metricsListener =
    metrics && metricsPort !== null
      ? lifecycle.add(
          new MetricsListener(
            metrics.observe({
              storage,
              clock,
              fanoutCursor: FANOUT_CURSOR,
              realtime,
              pool: () => storage.poolUse(),
            }),
            { port: metricsPort, host: config.metrics.host },
            log,
          ),
        )
      : undefined;
  await lifecycle.start();
  await readiness.started();

  const handler = createHttpHandler(
    services,
    allRoutes(() => config.publicUrl, mcp),
  );
  let inFlight = 0;
  let idle: (() => void) | undefined;
  /** Set once close() began. */
  let closing: Promise<void> | undefined;
  let connections = 0;
  /** Connections over WORKROOM_MAX_CONNECTIONS, answered 503: nothing read on them is served. */
  const refused = new WeakSet<Socket>();
  const server = createServer(
    {
      // Longer than the idle time-out of a client or proxy in front (65 s > AWS ALB's 60 s; undici takes
      // the server's hint less 1 s): a connection is closed by its client, never by the server just as the
      // client sends on it (Node's 5 s default lost requests to ECONNRESET under load).
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      // Slow clients (one byte at a time) are cut off; a real client never comes near these.
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      // How often those time-outs are checked (Node's default, 30 s, would let a slow client linger).
      connectionsCheckingInterval: Math.min(1000, config.http.headersTimeoutMs),
    },
    (req, res) => {
      if (refused.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      inFlight++;
      // Shutting down: the client opens its next request elsewhere (WORKROOM_SHUTDOWN_DELAY).
      if (closing) res.shouldKeepAlive = false;
      foreground.begin();
      res.on('close', () => {
        inFlight--;
        foreground.end();
        if (inFlight === 0) idle?.();
      });
      handler(req, res);
    },
  );
  // Open connections are bounded: one more is answered 503 before its request is read, and closed.
  server.on('connection', (socket: Socket) => {
    connections++;
    socket.once('close', () => connections--);
    if (connections <= config.http.maxConnections) return;
    services.metrics.rejected('connections');
    refused.add(socket); // a request the parser reads on it meanwhile is not served
    socket.on('error', () => socket.destroy());
    try {
      socket.end(
        plainAnswer(503, 'unavailable', 'Too many open connections; retry in a moment', 'retry-after: 1\r\n'),
      );
    } catch {
      socket.destroy();
    }
  });
  // Every listener of the server is guarded: an error escaping one would end the process.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    try {
      answerClientError(err, socket);
    } catch (e) {
      log.debug({ err: e }, 'client error answer failed');
      socket.destroy();
    }
  });
  // CONNECT (proxy tunnels) is not served: answered 405 and closed (without a listener Node would
  // just drop the connection, with no answer at all).
  server.on('connect', (_req: unknown, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    try {
      socket.end(
        plainAnswer(
          405,
          'method_not_allowed',
          'CONNECT is not supported',
          'allow: GET, POST, PUT, PATCH, DELETE\r\n',
        ),
      );
    } catch {
      socket.destroy();
    }
  });
  realtime.attach(server, [botSockets]);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  // PORT=0: the public URL made from the port names the one bound (no request has been served yet).
  if (config.publicUrlFromPort && config.port === 0) config.publicUrl = `http://localhost:${addr.port}`;
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
  firstStart?.announce(); // a generated admin password: shown once the port is ours (bootstrap.ts)

  const close = () =>
    (closing ??= (async () => {
      log.info('shutting down');
      readiness.stopping();
      if (config.shutdownDelayMs > 0) {
        // Lame duck: served as before while the balancer's health checks see 503 and take this
        // instance out; only then are idle connections closed (no request is sent on one meanwhile).
        log.info({ ms: config.shutdownDelayMs }, 'serving on until the shutdown delay ends');
        await new Promise<void>((resolve) => setTimeout(resolve, config.shutdownDelayMs).unref());
      }
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
      await botSockets.drain(deadline);
      await closed;
      await lifecycle.stop(deadline);
      await storage.close();
      log.info('stopped');
    })());

  return {
    server,
    services,
    realtime,
    botSockets,
    scheduler,
    url,
    close,
    ...(metrics && {
      metrics: {
        registry: metrics,
        get url() {
          return metricsListener?.url;
        },
      },
    }),
  };
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
  socket.end(plainAnswer(status, code, STATUS_CODES[status] ?? 'Bad Request'));
}

/** A complete JSON error answer written straight to a socket, closing the connection. */
function plainAnswer(status: number, code: string, message: string, extraHeaders = ''): string {
  const body = JSON.stringify({ error: { code, message } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
    `${extraHeaders}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/**
 * Rate-limit buckets: in this process on SQLite (one server per database); shared by every instance
 * on PostgreSQL, with a small lease per instance (domain/leased-rate-limiter.ts).
 */
function rateLimiterFor(storage: Storage, clock: Clock): RateLimiter {
  const shared = storage.sharedRateBuckets;
  if (!shared) return new TokenBucketLimiter(() => clock.now());
  return new LeasedRateLimiter(
    (...args) => shared.take(...args),
    () => clock.now(),
  );
}
