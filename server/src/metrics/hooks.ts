/**
 * The narrow interface through which the server's modules report what metrics count (docs/METRICS.md).
 * Transports, the delivery worker, the scheduler and the rate limits call these hooks; only
 * metrics/registry.ts knows prom-client. With metrics off (WORKROOM_METRICS_PORT=0) they get
 * `noMetrics`, whose hooks do nothing, and `on` tells the hot paths to skip even their bookkeeping.
 *
 * Every label value passed here comes from a closed set (a route template, a tool name from the tools
 * table, an outcome below), never from a request's raw input: the number of series stays bounded.
 */

/** MCP protocol era: `legacy` (handshake, 2024-11-05 … 2025-11-25) or `modern` (stateless 2026-07-28). */
export type McpEra = 'legacy' | 'modern';

/** A tools/call's end: a result, a result with `isError: true`, or a JSON-RPC error. */
export type McpOutcome = 'ok' | 'is_error' | 'protocol_error';

/** What one webhook attempt came to (delivery/attempt.ts's AttemptResult, classified). */
export type WebhookAttemptOutcome =
  | 'success' // 2xx (or the built-in bot's handler returned)
  | 'http_error' // the receiver answered another status
  | 'gone' // 410: the webhook is turned off
  | 'timeout' // no answer within WORKROOM_WEBHOOK_TIMEOUT
  | 'network_error' // refused, reset, DNS, SSRF guard, handler threw
  | 'not_sent' // nothing to send to (no URL, no secret, bot disabled)
  | 'cancelled'; // cut off by shutdown (handed back, sent again later)

export type WebhookTransport = 'http' | 'in_process' | 'socket';

/** Who refused a request for coming too fast or too many. */
export type Limiter =
  | 'bot_key' // a bot API key's token bucket (REST and MCP)
  | 'user' // a user's token bucket
  | 'sign_in' // sign-in throttle (failed attempts per account/address, or hashing at capacity)
  | 'unauthenticated_body' // the strangers' body budget (in all or per address)
  | 'connections'; // WORKROOM_MAX_CONNECTIONS

/** How a scheduled job's attempt ended (scheduler/scheduler.ts). */
export type JobOutcome =
  | 'succeeded'
  | 'retrying' // the handler failed, attempts are left
  | 'failed' // the handler failed on its last attempt, or its bot is disabled
  | 'missed' // found due later than the grace (the server was down)
  | 'abandoned' // its last attempt's runner stopped
  | 'cancelled'; // its bot was deleted

export interface MetricsHooks {
  /** False when metrics are off: a hot path may skip measuring altogether. */
  readonly on: boolean;
  /** One HTTP request answered (or abandoned by its client): `route` is the route's template. */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  /** One MCP tools/call: `tool` is a tool of the tools table or `(unknown)`. */
  mcpToolCall(tool: string, era: McpEra, outcome: McpOutcome, seconds: number): void;
  webhookAttempt(outcome: WebhookAttemptOutcome, transport: WebhookTransport, seconds: number): void;
  rejected(limiter: Limiter): void;
  searchTimedOut(): void;
  /** A job was claimed to run, `delaySeconds` after its run_at. */
  jobStarted(delaySeconds: number): void;
  jobFinished(outcome: JobOutcome): void;
}

const nothing = (): void => {};

/** The hooks when metrics are off. */
export const noMetrics: MetricsHooks = {
  on: false,
  httpRequest: nothing,
  mcpToolCall: nothing,
  webhookAttempt: nothing,
  rejected: nothing,
  searchTimedOut: nothing,
  jobStarted: nothing,
  jobFinished: nothing,
};
