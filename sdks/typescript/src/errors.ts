/**
 * The one error class the SDK throws. Server errors carry the server's stable `code` (docs/API.md,
 * "Errors"); failures that never got an answer use the codes `timeout` and `network_error` with
 * `status` 0. `retryAfter` (seconds) is set on 429 answers, and `requestId` whenever the server answered.
 */
export class WorkroomError extends Error {
  override readonly name = 'WorkroomError';
  /** Stable snake_case code: `not_found`, `rate_limited`, `insufficient_scope`, `timeout`, ... */
  readonly code: string;
  /** HTTP status, or 0 when no answer arrived (time-out, network error). */
  readonly status: number;
  /** The server's `X-Request-Id`, to find the request in its log. */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait (`Retry-After`), when it did. */
  readonly retryAfter: number | undefined;
  /** The input field at fault (`invalid_input`) or the missing scope (`insufficient_scope`). */
  readonly field: string | undefined;
  readonly scope: string | undefined;
  /** How many attempts were made before giving up (1 when the error was not retried). */
  readonly attempts: number;

  constructor(a: {
    code: string;
    message: string;
    status: number;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    field?: string | undefined;
    scope?: string | undefined;
    attempts?: number;
    cause?: unknown;
  }) {
    super(a.message, a.cause === undefined ? undefined : { cause: a.cause });
    this.code = a.code;
    this.status = a.status;
    this.requestId = a.requestId;
    this.retryAfter = a.retryAfter;
    this.field = a.field;
    this.scope = a.scope;
    this.attempts = a.attempts ?? 1;
  }
}
