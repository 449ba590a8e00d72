import { randomUUID } from 'node:crypto';
import { WorkroomError } from './errors.js';

/**
 * 5xx answers that are final: the same request would fail the same way again. `search_timeout`: the
 * search ran out of the server's time budget; narrow the query instead of repeating it.
 */
const NOT_RETRIED = new Set(['search_timeout']);

/**
 * The HTTP layer of the client: one logical call = one or more attempts. What may be retried:
 *  - 429 always: the rate limiter refuses before anything runs, so repeating cannot do anything twice;
 *  - 5xx, time-outs and network errors only when repeating is harmless: GET, PUT, PATCH, DELETE, and
 *    POSTs that carry an Idempotency-Key (the server answers a repeat with the first result). The key
 *    is generated once per logical call, before the first attempt, so every attempt sends the same one;
 *  - 409 `idempotency_conflict` on a repeat: the first attempt is still running on the server.
 * `Retry-After` is honoured; without it the delay grows exponentially with jitter.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  maxRetries: number;
  /** First backoff delay in ms when the server gives no Retry-After (default 500; doubles each time). */
  baseDelayMs: number;
  /** Longest wait between attempts in ms (default 30 000). A Retry-After above it is not waited for: the error is thrown. */
  maxDelayMs: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  /** Time-out of one attempt in ms, answer body included. */
  timeoutMs: number;
  retry: RetryOptions;
  fetch: typeof fetch;
  userAgent: string;
}

/** Per-call options every client method accepts as its last argument. */
export interface CallOptions {
  /** Cancels the call, including waits between attempts. */
  signal?: AbortSignal;
  /** Overrides the client's time-out for this call's attempts. */
  timeoutMs?: number;
  /**
   * Your own Idempotency-Key for a call that creates something (send, DM, edit, create task), e.g. to
   * make a retry of your own job safe across process restarts. Default: a new UUID per call.
   */
  idempotencyKey?: string;
}

export interface RequestSpec {
  method: HttpMethod;
  /** Path with parameters already filled in, e.g. `/api/messages/<id>`. */
  path: string;
  query?: Record<string, string | number | boolean | null | undefined> | undefined;
  body?: unknown;
  /** Whether the operation honours Idempotency-Key (the OpenAPI document declares the header). */
  idempotent?: boolean;
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** `Retry-After` as seconds: either delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; field?: unknown; scope?: unknown };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

async function errorFromResponse(res: Response, attempts: number): Promise<WorkroomError> {
  let body: ErrorBody = {};
  const text = await res.text().catch(() => '');
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    // Not our JSON error shape (a proxy's HTML page, say): keep the status and a bit of the text.
  }
  const e = body?.error ?? {};
  return new WorkroomError({
    code: str(e.code) ?? `http_${res.status}`,
    message: str(e.message) ?? (text.slice(0, 200) || `HTTP ${res.status}`),
    status: res.status,
    requestId: res.headers.get('x-request-id') ?? undefined,
    retryAfter: parseRetryAfter(res.headers.get('retry-after')),
    field: str(e.field),
    scope: str(e.scope),
    attempts,
  });
}

const aborted = (attempts: number, cause: unknown) =>
  new WorkroomError({ code: 'aborted', message: 'The call was aborted', status: 0, attempts, cause });

export class Transport {
  constructor(private readonly o: TransportOptions) {}

  url(path: string, query?: RequestSpec['query']): string {
    const u = new URL(this.o.baseUrl.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  async request<T>(spec: RequestSpec, opts: CallOptions = {}): Promise<T> {
    const idempotencyKey = spec.idempotent ? (opts.idempotencyKey ?? randomUUID()) : undefined;
    const repeatable = spec.method !== 'POST' || idempotencyKey !== undefined;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.o.apiKey}`,
      accept: 'application/json',
      'user-agent': this.o.userAgent,
      ...(spec.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    };
    const body = spec.body !== undefined ? JSON.stringify(spec.body) : undefined;
    const url = this.url(spec.path, spec.query);
    const { maxRetries, baseDelayMs, maxDelayMs } = this.o.retry;

    for (let attempt = 1; ; attempt++) {
      let failure: WorkroomError;
      let retryable: boolean;
      const signal = opts.signal
        ? AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs ?? this.o.timeoutMs)])
        : AbortSignal.timeout(opts.timeoutMs ?? this.o.timeoutMs);
      try {
        const res = await this.o.fetch(url, { method: spec.method, headers, body, signal });
        if (res.ok) {
          const text = await res.text();
          return (text ? JSON.parse(text) : undefined) as T;
        }
        failure = await errorFromResponse(res, attempt);
        retryable =
          res.status === 429 ||
          (res.status >= 500 && repeatable && !NOT_RETRIED.has(failure.code)) ||
          (res.status === 409 && failure.code === 'idempotency_conflict' && attempt > 1);
      } catch (err) {
        if (opts.signal?.aborted) {
          throw aborted(attempt, err);
        }
        const timedOut = err instanceof Error && err.name === 'TimeoutError';
        failure = new WorkroomError({
          code: timedOut ? 'timeout' : 'network_error',
          message: timedOut
            ? `No answer from ${spec.method} ${spec.path} within ${opts.timeoutMs ?? this.o.timeoutMs} ms`
            : `${spec.method} ${spec.path} failed: ${err instanceof Error ? err.message : String(err)}`,
          status: 0,
          attempts: attempt,
          cause: err,
        });
        retryable = repeatable;
      }
      if (!retryable || attempt > maxRetries) throw failure;
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      const wait = failure.retryAfter !== undefined ? failure.retryAfter * 1000 : backoff;
      if (wait > maxDelayMs) throw failure;
      try {
        await sleep(wait, opts.signal);
      } catch (err) {
        throw aborted(attempt, err);
      }
    }
  }
}
