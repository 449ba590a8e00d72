import type { ErrorCode } from '../../domain/errors.js';

/** The only place where error codes become HTTP statuses. */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  invalid_json: 400,
  unsupported_media_type: 415,
  unauthenticated: 401,
  forbidden: 403,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  request_timeout: 408,
  bad_request: 400,
  headers_too_large: 431,
  rate_limited: 429,
  quota_exceeded: 403,
  grant_denied: 403,
  approval_required: 403,
  confirmation_required: 403,
  write_budget_exceeded: 429,
  key_paused: 403,
  unavailable: 503,
  search_timeout: 503,
  internal: 500,
};
