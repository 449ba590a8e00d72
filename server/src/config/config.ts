import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/**
 * The whole configuration of a Workroom server: read once from the environment at start, validated,
 * and injected everywhere else. Every key is documented in README.md ("Configuration").
 */

const DURATION_RE = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "500ms", "5s", "2m", "1h", "7d"; a bare number means seconds. */
export function parseDurationMs(text: string): number | null {
  const m = DURATION_RE.exec(text.trim());
  if (!m) return null;
  return Math.round(Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1000));
}

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((s, ctx) => {
      const ms = parseDurationMs(s);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: `"${s}" is not a duration such as 500ms, 5s, 2m or 1h` });
        return z.NEVER;
      }
      return ms;
    });

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

const int = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** A host of WORKROOM_IMAGE_HOSTS: `name[:port]` or `*.name[:port]` (a CSP host source without scheme). */
const IMAGE_HOST_RE = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/;

const envSchema = z.object({
  PORT: int(3000, 0, 65535),
  HOST: z.string().min(1).default('0.0.0.0'),
  WORKROOM_PUBLIC_URL: z.url().optional(),
  WORKROOM_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  WORKROOM_DATABASE_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
    .optional(),
  WORKROOM_DATABASE_POOL_SIZE: int(10, 1, 200),
  WORKROOM_DATABASE_NAMED_STATEMENTS: bool(true),
  /** libpq's session settings, also honoured with a schema (see storage/database.ts, sessionOptions). */
  PGOPTIONS: z.string().optional(),
  WORKROOM_ADMIN_EMAIL: z.email().default('admin@workroom.local'),
  WORKROOM_ADMIN_PASSWORD: z.string().min(8, 'must have at least 8 characters').optional(),
  WORKROOM_ORG_NAME: z.string().min(1).max(200).default('Workroom'),
  WORKROOM_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKROOM_ENCRYPTION_KEY: z
    .string()
    .refine((s) => Buffer.from(s, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
    .optional(),
  WORKROOM_ENCRYPTION_KEY_PREVIOUS: z
    .string()
    .refine((s) => Buffer.from(s, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
    .optional(),
  WORKROOM_BLOB_STORE: z.enum(['disk', 'database'], { message: 'must be disk or database' }).optional(),
  WORKROOM_SESSION_TTL: duration('168h'),
  WORKROOM_MAX_BODY_BYTES: int(1_048_576, 1024, 100 * 1_048_576),
  WORKROOM_MAX_UPLOAD_BYTES: int(25 * 1_048_576, 1024, 10 * 1024 * 1_048_576),
  WORKROOM_RATE_LIMIT_BOT_PER_SECOND: z.coerce.number().min(0).default(50),
  WORKROOM_RATE_LIMIT_BOT_BURST: int(100, 1, 1_000_000),
  WORKROOM_RATE_LIMIT_USER_PER_SECOND: z.coerce.number().min(0).default(20),
  WORKROOM_RATE_LIMIT_USER_BURST: int(60, 1, 1_000_000),
  WORKROOM_WEBHOOK_RETRY_DELAYS: z
    .string()
    .default('60s,300s')
    .transform((s, ctx) => {
      const parts = s.split(',').map((p) => parseDurationMs(p));
      if (parts.length > 3 || parts.some((p) => p === null)) {
        ctx.addIssue({ code: 'custom', message: 'must be up to 3 comma-separated durations, e.g. 60s,300s' });
        return z.NEVER;
      }
      return parts as number[];
    }),
  WORKROOM_WEBHOOK_TIMEOUT: duration('5s'),
  WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: bool(false),
  WORKROOM_WEBHOOK_RETENTION: duration('7d'),
  WORKROOM_WEBHOOK_PAUSE_AFTER: int(50, 0, 1_000_000),
  WORKROOM_WEBHOOK_CONCURRENCY: int(64, 1, 10_000),
  WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT: int(8, 1, 1000),
  WORKROOM_WEBHOOK_ORG_SHARE: z.coerce.number().gt(0).max(1).default(0.5),
  WORKROOM_WEBHOOK_ALLOWED_RANGES: list.refine(
    (cidrs) => cidrs.every((c) => ipaddr.isValidCIDR(c)),
    'must be comma-separated CIDR ranges, e.g. 10.20.0.0/16,fd00::/8',
  ),
  WORKROOM_SOCKET_LEASE: duration('5m'),
  WORKROOM_SOCKET_HEARTBEAT: duration('25s'),
  WORKROOM_SOCKETS_PER_BOT: int(10, 1, 1000),
  WORKROOM_SOCKET_MAX_ATTEMPTS: int(20, 1, 1000),
  WORKROOM_SOCKET_WAIT: duration('24h'),
  WORKROOM_MCP_SESSIONS: bool(true),
  WORKROOM_MCP_ALLOWED_ORIGINS: list,
  WORKROOM_MCP_MAX_BATCH: int(50, 1, 1000),
  WORKROOM_MCP_SESSIONS_PER_KEY: int(100, 1, 100_000),
  WORKROOM_MCP_SESSIONS_PER_ORG: int(1000, 1, 1_000_000),
  WORKROOM_MCP_SESSIONS_MAX: int(10_000, 1, 10_000_000),
  WORKROOM_MCP_SESSION_IDLE: duration('30m'),
  WORKROOM_KEEP_ALIVE_TIMEOUT: duration('65s').refine(
    (ms) => ms >= 1000 && ms <= 600_000,
    'must be between 1s and 10m',
  ),
  WORKROOM_HEADERS_TIMEOUT: duration('10s'),
  WORKROOM_REQUEST_TIMEOUT: duration('120s'),
  WORKROOM_BODY_TIMEOUT: duration('15s'),
  WORKROOM_TRUST_PROXY: bool(false),
  WORKROOM_MAX_CONNECTIONS: int(10_000, 1, 1_000_000),
  WORKROOM_UNAUTHENTICATED_BODY_BYTES: int(32 * 1_048_576, 4096, 10 * 1024 * 1_048_576),
  WORKROOM_UNAUTHENTICATED_BODY_BYTES_PER_ADDRESS: int(4 * 1_048_576, 4096, 10 * 1024 * 1_048_576),
  WORKROOM_SHUTDOWN_TIMEOUT: duration('10s'),
  WORKROOM_SHUTDOWN_DELAY: duration('0s').refine((ms) => ms <= 60_000, 'must be at most 60s'),
  WORKROOM_SEARCH_TIMEOUT: duration('2s').refine(
    (ms) => ms >= 1 && ms <= 60_000,
    'must be between 1ms and 60s',
  ),
  WORKROOM_SCHEDULER_GRACE: duration('6h').refine(
    (ms) => ms >= 1000 && ms <= 86_400_000,
    'must be between 1s and 24h (a job re-run after a crash must find its idempotency records, kept 24h)',
  ),
  WORKROOM_SCHEDULER_RETRY_DELAYS: z
    .string()
    .default('30s,2m,10m')
    .transform((s, ctx) => {
      const parts = s.split(',').map((p) => parseDurationMs(p));
      // Together at most 12h: the steps a job ran before a retry replay from records kept 24h.
      if (parts.length > 10 || parts.some((p) => p === null) || sum(parts as number[]) > 12 * 3_600_000) {
        ctx.addIssue({
          code: 'custom',
          message: 'must be up to 10 comma-separated durations adding up to at most 12h',
        });
        return z.NEVER;
      }
      return parts as number[];
    }),
  WORKROOM_SCHEDULER_LEASE: duration('60s').refine(
    (ms) => ms >= 1000 && ms <= 3_600_000,
    'must be between 1s and 1h',
  ),
  WORKROOM_SCHEDULER_JOB_TIMEOUT: duration('5m').refine(
    (ms) => ms >= 100 && ms <= 3_600_000,
    'must be between 100ms and 1h',
  ),
  WORKROOM_SCHEDULER_POLL: duration('5s').refine(
    (ms) => ms >= 50 && ms <= 300_000,
    'must be between 50ms and 5m',
  ),
  WORKROOM_SCHEDULER_CONCURRENCY: int(8, 1, 1000),
  WORKROOM_QUOTA_BOTS_PER_ORG: int(100, 0, 1_000_000),
  WORKROOM_QUOTA_BOTS_PER_MEMBER: int(20, 0, 1_000_000),
  WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG: int(10 * 1024 ** 3, 0, 2 ** 50),
  WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER: int(1024 ** 3, 0, 2 ** 50),
  // At least one document of the largest size a bot may store (64 KiB), else no bot could store one.
  WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG: int(256 * 1024 ** 2, 64 * 1024, 2 ** 50),
  WORKROOM_IMAGE_HOSTS: list
    .transform((hosts) => hosts.map((h) => h.toLowerCase()))
    .refine(
      (hosts) => hosts.every((h) => IMAGE_HOST_RE.test(h)),
      'must be comma-separated host names, each optionally with a port or starting with "*." (e.g. cdn.example.com,*.example.org)',
    ),
  WORKROOM_REALTIME_AUTH_TIMEOUT: duration('5s').refine(
    (ms) => ms >= 100 && ms <= 60_000,
    'must be between 100ms and 60s',
  ),
  WORKROOM_REALTIME_PREAUTH_PER_ADDRESS: int(50, 1, 100_000),
  WORKROOM_REALTIME_PREAUTH_MAX: int(2000, 1, 1_000_000),
  WORKROOM_REALTIME_RESUME_SPAN: int(10_000, 0, 10_000_000),
  WORKROOM_REALTIME_RESUMES_PER_USER: int(2, 1, 1000),
  WORKROOM_REALTIME_RESUMES_PER_ORG: int(4, 1, 10_000),
  WORKROOM_METRICS_PORT: int(9464, 0, 65535),
  WORKROOM_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
});

export interface Config {
  port: number;
  host: string;
  /**
   * Where users and bots reach this server (links, webhook URLs, the MCP Origin check, the OpenAPI
   * document): WORKROOM_PUBLIC_URL, else http://localhost:<PORT> — with PORT=0, the port bound at start
   * (app.ts sets it once listening, before the first request).
   */
  publicUrl: string;
  /** publicUrl was not given (WORKROOM_PUBLIC_URL) but made from the port. */
  publicUrlFromPort: boolean;
  dataDir: string;
  database:
    | { kind: 'sqlite'; file: string }
    | {
        kind: 'postgres';
        url: string;
        schema: string | undefined;
        poolSize: number;
        /** Hot statements as server-side prepared statements (off behind an old transaction-mode PgBouncer). */
        namedStatements: boolean;
        /** PGOPTIONS: session settings for every connection (`-c statement_timeout=30s` …). */
        sessionOptions: string | undefined;
      };
  admin: { email: string; password: string | undefined; orgName: string };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** base64 of 32 bytes; when absent one is generated and kept in the data directory. */
  encryptionKey: string | undefined;
  /**
   * During a key rotation (docs/SCALING.md, "The encryption key"): the other key, whose secrets are
   * still read (WORKROOM_ENCRYPTION_KEY_PREVIOUS); never used to encrypt.
   */
  previousEncryptionKey: string | undefined;
  /**
   * Where new uploads go (WORKROOM_BLOB_STORE): `disk` under the data directory (default on SQLite) or
   * `database` (default on PostgreSQL, where several instances must share them). docs/SCALING.md, "Files".
   */
  blobStore: 'disk' | 'database';
  sessionTtlMs: number;
  maxBodyBytes: number;
  maxUploadBytes: number;
  rateLimits: {
    bot: { perSecond: number; burst: number };
    user: { perSecond: number; burst: number };
  };
  webhooks: {
    retryDelaysMs: number[];
    timeoutMs: number;
    allowPrivateUrls: boolean;
    /** CIDR ranges webhook URLs may reach although they are not public (when private URLs are not allowed). */
    allowedRanges: string[];
    /** Delivered and failed deliveries are deleted this long after their last change. */
    retentionMs: number;
    /** Failures in a row after which a bot's webhook is paused (0: never). */
    pauseAfter: number;
    /** Attempts in flight at once, in all and toward one bot's endpoint. */
    concurrency: number;
    perEndpointConcurrency: number;
    /** Share (0–1] of the slots one organization may hold while others are active or waiting. */
    orgShare: number;
  };
  /** Bot sockets (docs/SOCKET.md): deliveries over a WebSocket the bot opens. */
  sockets: {
    /** An unacknowledged delivery is sent again this long after it was sent. */
    leaseMs: number;
    /** Ping interval; a peer that does not answer within it is cut off. */
    heartbeatMs: number;
    /** Sockets one bot may hold open at once (on one instance). */
    perBot: number;
    /** Attempts over sockets (closed before the ack, lease expired) after which a delivery fails. */
    maxAttempts: number;
    /** A delivery of a bot with no webhook URL waits this long for a socket, then fails. */
    waitMs: number;
  };
  mcp: {
    sessions: boolean;
    allowedOrigins: string[];
    /** Most messages in one JSON-RPC batch; a longer batch is refused whole. */
    maxBatch: number;
    /** Session caps: per API key and per organization (the oldest of that key/org is ended), overall (refused). */
    sessionsPerKey: number;
    sessionsPerOrg: number;
    sessionsMax: number;
    sessionIdleMs: number;
  };
  http: {
    /** Time a client has to send the request line and headers (slow-loris bound). */
    keepAliveTimeoutMs: number;
    headersTimeoutMs: number;
    /** Time a client has to send the whole request, body included (uploads need it long). */
    requestTimeoutMs: number;
    /** Time a JSON body (at most maxBodyBytes) may take to arrive. */
    bodyTimeoutMs: number;
    /** Take the client address from X-Forwarded-For (last entry) behind a reverse proxy. */
    trustProxy: boolean;
    /** Open connections at most; one more is answered 503 and closed. */
    maxConnections: number;
    /**
     * Bytes of request bodies read before the caller is known (sign-in, signed incoming webhooks,
     * command responses), buffered at once: in all, and per client address. Past either: 503 / 429.
     */
    unauthenticatedBodyBytes: number;
    unauthenticatedBodyBytesPerAddress: number;
  };
  shutdownTimeoutMs: number;
  /**
   * On SIGTERM, how long the server goes on serving (readiness 503, every response `Connection:
   * close`) before it stops accepting: a load balancer's health checks take it out first, so no
   * request is sent on a connection it is closing (docs/SCALING.md).
   */
  shutdownDelayMs: number;
  search: {
    /** The longest a search may read the index; then it answers 503 search_timeout (docs/SEARCH.md). */
    timeoutMs: number;
  };
  /** The durable scheduler (docs/SCHEDULER.md). */
  scheduler: {
    /** A job found due later than this (the server was down) is not run but failed as missed. */
    graceMs: number;
    /** Delays before the 2nd, 3rd… attempt of a job whose handler threw; attempts = delays + 1. */
    retryDelaysMs: number[];
    /** How long a claim holds a job; renewed while its handler runs, taken over when it runs out. */
    leaseMs: number;
    /** The longest a handler may run; then its attempt fails (and is retried). */
    jobTimeoutMs: number;
    /** Safety-net poll (jobs of other instances, missed wake-ups). */
    pollMs: number;
    /** Handlers running at once in this instance. */
    concurrency: number;
  };
  /** Per-organization quotas (operations/quotas.ts, docs/API.md "Quotas"). */
  quotas: {
    /** Custom bots (not deleted) of an organization, and of those registered by one member. */
    botsPerOrg: number;
    botsPerMember: number;
    /** Bytes of uploaded files of an organization, and of one user's uploads. */
    uploadBytesPerOrg: number;
    uploadBytesPerUser: number;
    /** Bytes of bot data (JSON values) of all bots of an organization together. */
    botDataBytesPerOrg: number;
  };
  /**
   * Hosts from which message images are shown (besides this server's own files): `name[:port]` or
   * `*.name[:port]`; an image from any other host is shown as a link (domain/sanitize.ts, the CSP).
   */
  imageHosts: string[];
  /** The live stream `GET /api/realtime` (docs/REALTIME.md "Limits"). */
  realtime: {
    /** Time a connection has to authenticate (its first message). */
    authTimeoutMs: number;
    /** Connections not authenticated yet: per client address (IPv6: per /64) and in all. */
    preAuthPerAddress: number;
    preAuthMax: number;
    /** Positions a resume point may lie behind the server's; further back answers `reset`. */
    resumeSpan: number;
    /** Replays (resumes) running at once per user and per organization; more wait their turn. */
    resumesPerUser: number;
    resumesPerOrg: number;
  };
  /**
   * Prometheus metrics (docs/METRICS.md): `GET /metrics` on a listener of its own, never on the public
   * port. `port` null: off (WORKROOM_METRICS_PORT=0); 0 here (only in process, e.g. tests): any free port.
   */
  metrics: { port: number | null; host: string };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Empty strings count as unset, as in most twelve-factor apps. */
function cleanEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(cleanEnv(env));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data;
  if (e.WORKROOM_DATABASE_SCHEMA && !e.DATABASE_URL) {
    throw new ConfigError(['WORKROOM_DATABASE_SCHEMA: only applies with a PostgreSQL DATABASE_URL']);
  }
  const dataDir = e.WORKROOM_DATA_DIR;
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl: (e.WORKROOM_PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, ''),
    publicUrlFromPort: e.WORKROOM_PUBLIC_URL === undefined,
    dataDir,
    database: e.DATABASE_URL
      ? {
          kind: 'postgres',
          url: e.DATABASE_URL,
          schema: e.WORKROOM_DATABASE_SCHEMA,
          poolSize: e.WORKROOM_DATABASE_POOL_SIZE,
          namedStatements: e.WORKROOM_DATABASE_NAMED_STATEMENTS,
          sessionOptions: e.PGOPTIONS,
        }
      : { kind: 'sqlite', file: `${dataDir}/workroom.db` },
    admin: {
      email: e.WORKROOM_ADMIN_EMAIL,
      password: e.WORKROOM_ADMIN_PASSWORD,
      orgName: e.WORKROOM_ORG_NAME,
    },
    logLevel: e.WORKROOM_LOG_LEVEL,
    encryptionKey: e.WORKROOM_ENCRYPTION_KEY,
    previousEncryptionKey: e.WORKROOM_ENCRYPTION_KEY_PREVIOUS,
    blobStore: e.WORKROOM_BLOB_STORE ?? (e.DATABASE_URL ? 'database' : 'disk'),
    sessionTtlMs: e.WORKROOM_SESSION_TTL,
    maxBodyBytes: e.WORKROOM_MAX_BODY_BYTES,
    maxUploadBytes: e.WORKROOM_MAX_UPLOAD_BYTES,
    rateLimits: {
      bot: { perSecond: e.WORKROOM_RATE_LIMIT_BOT_PER_SECOND, burst: e.WORKROOM_RATE_LIMIT_BOT_BURST },
      user: { perSecond: e.WORKROOM_RATE_LIMIT_USER_PER_SECOND, burst: e.WORKROOM_RATE_LIMIT_USER_BURST },
    },
    webhooks: {
      retryDelaysMs: e.WORKROOM_WEBHOOK_RETRY_DELAYS,
      timeoutMs: e.WORKROOM_WEBHOOK_TIMEOUT,
      allowPrivateUrls: e.WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS,
      allowedRanges: e.WORKROOM_WEBHOOK_ALLOWED_RANGES,
      retentionMs: e.WORKROOM_WEBHOOK_RETENTION,
      pauseAfter: e.WORKROOM_WEBHOOK_PAUSE_AFTER,
      concurrency: e.WORKROOM_WEBHOOK_CONCURRENCY,
      perEndpointConcurrency: e.WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT,
      orgShare: e.WORKROOM_WEBHOOK_ORG_SHARE,
    },
    sockets: {
      leaseMs: e.WORKROOM_SOCKET_LEASE,
      heartbeatMs: e.WORKROOM_SOCKET_HEARTBEAT,
      perBot: e.WORKROOM_SOCKETS_PER_BOT,
      maxAttempts: e.WORKROOM_SOCKET_MAX_ATTEMPTS,
      waitMs: e.WORKROOM_SOCKET_WAIT,
    },
    mcp: {
      sessions: e.WORKROOM_MCP_SESSIONS,
      allowedOrigins: e.WORKROOM_MCP_ALLOWED_ORIGINS,
      maxBatch: e.WORKROOM_MCP_MAX_BATCH,
      sessionsPerKey: e.WORKROOM_MCP_SESSIONS_PER_KEY,
      sessionsPerOrg: e.WORKROOM_MCP_SESSIONS_PER_ORG,
      sessionsMax: e.WORKROOM_MCP_SESSIONS_MAX,
      sessionIdleMs: e.WORKROOM_MCP_SESSION_IDLE,
    },
    http: {
      keepAliveTimeoutMs: e.WORKROOM_KEEP_ALIVE_TIMEOUT,
      headersTimeoutMs: e.WORKROOM_HEADERS_TIMEOUT,
      requestTimeoutMs: e.WORKROOM_REQUEST_TIMEOUT,
      bodyTimeoutMs: e.WORKROOM_BODY_TIMEOUT,
      trustProxy: e.WORKROOM_TRUST_PROXY,
      maxConnections: e.WORKROOM_MAX_CONNECTIONS,
      unauthenticatedBodyBytes: e.WORKROOM_UNAUTHENTICATED_BODY_BYTES,
      unauthenticatedBodyBytesPerAddress: e.WORKROOM_UNAUTHENTICATED_BODY_BYTES_PER_ADDRESS,
    },
    shutdownTimeoutMs: e.WORKROOM_SHUTDOWN_TIMEOUT,
    shutdownDelayMs: e.WORKROOM_SHUTDOWN_DELAY,
    search: { timeoutMs: e.WORKROOM_SEARCH_TIMEOUT },
    scheduler: {
      graceMs: e.WORKROOM_SCHEDULER_GRACE,
      retryDelaysMs: e.WORKROOM_SCHEDULER_RETRY_DELAYS,
      leaseMs: e.WORKROOM_SCHEDULER_LEASE,
      jobTimeoutMs: e.WORKROOM_SCHEDULER_JOB_TIMEOUT,
      pollMs: e.WORKROOM_SCHEDULER_POLL,
      concurrency: e.WORKROOM_SCHEDULER_CONCURRENCY,
    },
    quotas: {
      botsPerOrg: e.WORKROOM_QUOTA_BOTS_PER_ORG,
      botsPerMember: e.WORKROOM_QUOTA_BOTS_PER_MEMBER,
      uploadBytesPerOrg: e.WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG,
      uploadBytesPerUser: e.WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER,
      botDataBytesPerOrg: e.WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG,
    },
    imageHosts: e.WORKROOM_IMAGE_HOSTS,
    realtime: {
      authTimeoutMs: e.WORKROOM_REALTIME_AUTH_TIMEOUT,
      preAuthPerAddress: e.WORKROOM_REALTIME_PREAUTH_PER_ADDRESS,
      preAuthMax: e.WORKROOM_REALTIME_PREAUTH_MAX,
      resumeSpan: e.WORKROOM_REALTIME_RESUME_SPAN,
      resumesPerUser: e.WORKROOM_REALTIME_RESUMES_PER_USER,
      resumesPerOrg: e.WORKROOM_REALTIME_RESUMES_PER_ORG,
    },
    metrics: {
      port: e.WORKROOM_METRICS_PORT === 0 ? null : e.WORKROOM_METRICS_PORT,
      host: e.WORKROOM_METRICS_HOST,
    },
  };
}
