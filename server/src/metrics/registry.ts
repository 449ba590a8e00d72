import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type {
  JobOutcome,
  Limiter,
  McpEra,
  McpOutcome,
  MetricsHooks,
  WebhookAttemptOutcome,
  WebhookTransport,
} from './hooks.js';
import type { ScrapeSnapshot, ScrapeSources } from './sources.js';
import { Snapshots } from './sources.js';
import { FastCounter, FastHistogram } from './fast.js';

/**
 * The server's Prometheus registry (prom-client; docs/METRICS.md has the catalogue and why prom-client).
 * One per running app, owned by app.ts: nothing here is a module-level singleton (prom-client's global
 * `register` is never used), so two servers in one process (tests) keep apart.
 *
 * Counters and histograms move through the hooks (MetricsHooks) as things happen; gauges of state
 * (queue depth, outbox lag, connections, pool use) are read when Prometheus scrapes, from one snapshot
 * that is cached for a second (sources.ts), so that two scrapers or a burst of scrapes cost the
 * database one round of cheap queries.
 */

/** Seconds; from 1 ms (a cached read) to 10 s (a slow upload) — OpenTelemetry's HTTP buckets and two finer. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** A job's start after its run_at: the poll (5 s) and the grace (hours) set the scale. */
const DELAY_BUCKETS = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 21600];
const LIMITERS: Limiter[] = ['bot_key', 'user', 'sign_in', 'unauthenticated_body', 'connections'];
const ATTEMPT_OUTCOMES: WebhookAttemptOutcome[] = [
  'success',
  'http_error',
  'gone',
  'timeout',
  'network_error',
  'not_sent',
  'cancelled',
];
const TRANSPORTS: WebhookTransport[] = ['http', 'in_process', 'socket'];
const JOB_OUTCOMES: JobOutcome[] = ['succeeded', 'retrying', 'failed', 'missed', 'abandoned', 'cancelled'];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export class PromMetrics implements MetricsHooks {
  readonly on = true;
  readonly registry = new Registry();
  /** The hot paths' metrics (every request, every MCP call): fast.ts, without prom-client's label hashing. */
  readonly #http: FastHistogram;
  readonly #mcpCalls: FastCounter;
  readonly #mcpDuration: FastHistogram;
  readonly #attempts: Counter<'outcome' | 'transport'>;
  readonly #attemptDuration: Histogram<'transport'>;
  readonly #rejections: Counter<'limiter'>;
  readonly #searchTimeouts: Counter;
  readonly #jobDelay: Histogram;
  readonly #jobsLate: Counter;
  readonly #jobsFinished: Counter<'outcome'>;
  #snapshots: Snapshots | undefined;
  readonly #lateJobSeconds: number;

  constructor(opts: { lateJobSeconds?: number } = {}) {
    const registers = [this.registry];
    const lateJob = opts.lateJobSeconds ?? 60;
    collectDefaultMetrics({ register: this.registry });
    // Its value is a setImmediate's wait, so every scrape would wait a turn of the event loop for it;
    // nodejs_eventloop_lag_{min,max,mean,p50,p90,p99}_seconds (monitorEventLoopDelay) say it better.
    this.registry.removeSingleMetric('nodejs_eventloop_lag_seconds');

    this.#http = new FastHistogram(
      'workroom_http_server_request_duration_seconds',
      'HTTP requests by method, route template and status code, and how long each took to answer',
      ['method', 'route', 'status_code'],
      LATENCY_BUCKETS,
      this.registry,
    );
    this.#mcpCalls = new FastCounter(
      'workroom_mcp_tool_calls_total',
      'MCP tools/call requests by tool, protocol era and outcome (ok, is_error: a result with isError, protocol_error: a JSON-RPC error)',
      ['tool', 'era', 'outcome'],
      this.registry,
    );
    this.#mcpDuration = new FastHistogram(
      'workroom_mcp_tool_call_duration_seconds',
      'Time an MCP tools/call took, by tool',
      ['tool'],
      LATENCY_BUCKETS,
      this.registry,
    );
    this.#attempts = new Counter({
      name: 'workroom_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome and transport (http, in_process for built-in bots, socket for bot sockets)',
      labelNames: ['outcome', 'transport'],
      registers,
    });
    this.#attemptDuration = new Histogram({
      name: 'workroom_webhook_attempt_duration_seconds',
      help: 'Time a webhook delivery attempt took, from sending to the answer (or its failure)',
      labelNames: ['transport'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#rejections = new Counter({
      name: 'workroom_rate_limit_rejections_total',
      help: 'Requests refused by a rate limit or throttle, by limiter',
      labelNames: ['limiter'],
      registers,
    });
    this.#searchTimeouts = new Counter({
      name: 'workroom_search_timeouts_total',
      help: 'Searches stopped at their time budget (WORKROOM_SEARCH_TIMEOUT), answered 503 search_timeout',
      registers,
    });
    this.#jobDelay = new Histogram({
      name: 'workroom_scheduler_job_start_delay_seconds',
      help: "Time from a scheduled job's run_at to its claim by a runner",
      buckets: DELAY_BUCKETS,
      registers,
    });
    this.#jobsLate = new Counter({
      name: 'workroom_scheduler_jobs_late_total',
      help: `Scheduled jobs started more than ${lateJob} s after their run_at, or missed (not run within the grace)`,
      registers,
    });
    this.#jobsFinished = new Counter({
      name: 'workroom_scheduler_jobs_finished_total',
      help: 'Attempts of scheduled jobs by outcome (succeeded, retrying, failed, missed, abandoned, cancelled)',
      labelNames: ['outcome'],
      registers,
    });
    this.#lateJobSeconds = lateJob;
    // Every series of a closed label set exists from the start (at 0), so that rate() and alerts see
    // the first increase, and a scrape shows the whole catalogue before any traffic.
    for (const limiter of LIMITERS) this.#rejections.inc({ limiter }, 0);
    for (const outcome of ATTEMPT_OUTCOMES)
      for (const transport of TRANSPORTS) this.#attempts.inc({ outcome, transport }, 0);
    for (const outcome of JOB_OUTCOMES) this.#jobsFinished.inc({ outcome }, 0);
    this.#searchTimeouts.inc(0);
    this.#jobsLate.inc(0);

    // --- read at scrape time (one cached snapshot) ---
    const snap = () => {
      if (!this.#snapshots) throw new Error('metrics: no scrape sources (observe() was not called)');
      return this.#snapshots.get();
    };
    const gauge = <L extends string>(
      name: string,
      help: string,
      read: (s: ScrapeSnapshot, g: Gauge<L>) => void,
      labelNames: L[] = [],
    ) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          read(await snap(), this);
        },
      });
    /** A counter kept elsewhere (a running total): moved by its growth since the last scrape. */
    const total = (name: string, help: string, read: (s: ScrapeSnapshot) => number) => {
      let seen = 0;
      return new Counter({
        name,
        help,
        registers,
        async collect() {
          const now = read(await snap());
          if (now > seen) this.inc(now - seen);
          seen = Math.max(seen, now);
        },
      });
    };
    gauge(
      'workroom_webhook_queue_depth',
      'Webhook deliveries not finished: due, in flight or waiting for a retry',
      (s, g) => g.set(s.webhooks.pending),
    );
    gauge('workroom_webhook_queue_due', 'Webhook deliveries due now and not yet claimed', (s, g) =>
      g.set(s.webhooks.due),
    );
    gauge(
      'workroom_webhook_oldest_due_age_seconds',
      'How long the oldest due, unclaimed webhook delivery has been waiting (0: none)',
      (s, g) => g.set(s.webhooks.oldestDueAgeSeconds),
    );
    gauge(
      'workroom_outbox_lag_events',
      'Outbox events written but not yet fanned out to webhook deliveries (newest position − fan-out cursor)',
      (s, g) => g.set(s.outbox.lagEvents),
    );
    gauge(
      'workroom_outbox_lag_seconds',
      'Age of the oldest outbox event not yet fanned out (0: none)',
      (s, g) => g.set(s.outbox.lagSeconds),
    );
    gauge('workroom_outbox_head_position', 'Position of the newest outbox event', (s, g) =>
      g.set(s.outbox.head),
    );
    gauge(
      'workroom_realtime_connections',
      'Open WebSocket connections of the live stream, by state (authenticated or not)',
      (s, g) => {
        g.set({ state: 'authenticated' }, s.realtime.authenticated);
        g.set({ state: 'unauthenticated' }, s.realtime.unauthenticated);
      },
      ['state'],
    );
    total(
      'workroom_realtime_slow_consumers_dropped_total',
      'Live-stream connections closed for not reading fast enough (1013)',
      (s) => s.realtime.slowDisconnects,
    );
    gauge('workroom_scheduler_jobs_due', 'Scheduled jobs due now and not yet claimed', (s, g) =>
      g.set(s.scheduler.due),
    );
    gauge(
      'workroom_scheduler_oldest_due_age_seconds',
      'How long the oldest due, unclaimed scheduled job has been waiting (0: none)',
      (s, g) => g.set(s.scheduler.oldestDueAgeSeconds),
    );
    gauge(
      'workroom_db_pool_connections',
      'Database connections by state: in use or idle (SQLite: the one writer connection)',
      (s, g) => {
        g.set({ state: 'used' }, s.pool.used);
        g.set({ state: 'idle' }, s.pool.idle);
      },
      ['state'],
    );
    gauge('workroom_db_pool_max_connections', 'Most database connections the pool opens', (s, g) =>
      g.set(s.pool.max),
    );
    gauge(
      'workroom_db_pool_pending_requests',
      'Queries and transactions waiting for a database connection (SQLite: for the writer)',
      (s, g) => g.set(s.pool.waiting),
    );
    gauge(
      'workroom_metrics_scrape_queries_duration_seconds',
      'Time the last snapshot of the scrape-time gauges took to read (database queries included)',
      (s, g) => g.set(s.seconds),
    );
  }

  /** What the scrape-time gauges read (app.ts, once the services exist). */
  observe(sources: ScrapeSources): this {
    this.#snapshots = new Snapshots(sources);
    return this;
  }

  /**
   * The text exposition of every metric (one scrape). `fresh`: read the scrape-time gauges again even
   * if a snapshot is cached (what a scrape costs at worst: the bench and tests measure it).
   */
  scrape(opts: { fresh?: boolean } = {}): Promise<string> {
    if (opts.fresh) this.#snapshots?.forget();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.#http.observe([METHODS.has(method) ? method : '_OTHER', route, String(status)], seconds);
  }

  mcpToolCall(tool: string, era: McpEra, outcome: McpOutcome, seconds: number): void {
    this.#mcpCalls.inc([tool, era, outcome]);
    this.#mcpDuration.observe([tool], seconds);
  }

  webhookAttempt(outcome: WebhookAttemptOutcome, transport: WebhookTransport, seconds: number): void {
    this.#attempts.inc({ outcome, transport });
    if (outcome !== 'not_sent' && outcome !== 'cancelled')
      this.#attemptDuration.observe({ transport }, seconds);
  }

  rejected(limiter: Limiter): void {
    this.#rejections.inc({ limiter });
  }

  searchTimedOut(): void {
    this.#searchTimeouts.inc();
  }

  jobStarted(delaySeconds: number): void {
    const d = Math.max(0, delaySeconds);
    this.#jobDelay.observe(d);
    if (d > this.#lateJobSeconds) this.#jobsLate.inc();
  }

  jobFinished(outcome: JobOutcome): void {
    this.#jobsFinished.inc({ outcome });
    if (outcome === 'missed') this.#jobsLate.inc();
  }
}
