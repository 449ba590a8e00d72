/**
 * The one error type of Workroom. Operations and stores throw AppError with a stable code;
 * transports map the code to an HTTP status or a JSON-RPC code at the edge, never earlier.
 */
export const ERROR_CODES = [
  'invalid_input', // a field is missing, of the wrong type, or over a limit
  'invalid_json', // the body is not JSON
  'unsupported_media_type', // the body is not of a content type the endpoint accepts
  'unauthenticated', // no credentials, or bad/expired/revoked ones
  'forbidden', // known caller, not allowed
  'insufficient_scope', // bot key lacks the scope the operation needs
  'not_found', // does not exist, or is not visible to the caller
  'method_not_allowed',
  'conflict', // unique constraint or state conflict
  'idempotency_conflict', // same Idempotency-Key reused with another body, or still in flight
  'payload_too_large',
  'request_timeout', // the client did not send its request in time (a slow body)
  'bad_request', // the HTTP request itself is malformed (refused by the parser)
  'headers_too_large', // the request line and headers are over Node's limit (16 KB)
  'rate_limited',
  'quota_exceeded', // the organization or user is at a quota (WORKROOM_QUOTA_*); the message names it
  'grant_denied', // the bot key's grants do not allow this (tools, read_only, mentions_all); details.grant names it
  'approval_required', // the key's grant says this tool needs approval and this path cannot hold the call (REST and MCP hold it: docs/API.md "Approval")
  'confirmation_required', // the key's grant says the agent's user must confirm this tool's calls (MCP 2026-07-28 elicitation)
  'write_budget_exceeded', // the key's writes_per_hour budget is spent; retry after details.retryAfterSeconds
  'key_paused', // a guard rail (or a manager) paused the bot key; details.paused says when and why
  'unavailable', // dependency down (database), shutting down
  'search_timeout', // a search ran out of its time budget (WORKROOM_SEARCH_TIMEOUT); narrow it
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetails {
  /** Path of the offending input field, e.g. "content" or "scopes.0". */
  field?: string;
  /** Scope the caller lacks (insufficient_scope). */
  scope?: string;
  /** Seconds until a retry may succeed (rate_limited, write_budget_exceeded). */
  retryAfterSeconds?: number;
  /**
   * The key grant that refused the call (grant_denied, approval_required, confirmation_required,
   * write_budget_exceeded).
   */
  grant?: string;
  /** When and why the key was paused (key_paused). */
  paused?: { at: string; reason: string };
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }
}

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
export const forbidden = (message: string): AppError => new AppError('forbidden', message);
export const invalid = (field: string, message: string): AppError =>
  new AppError('invalid_input', `${field}: ${message}`, { field });
export const conflict = (message: string): AppError => new AppError('conflict', message);

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
