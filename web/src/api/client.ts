import createClient from 'openapi-fetch';
import type { paths } from './schema';

/**
 * The one typed HTTP client of the app: the same public REST API bots and the SDK use, with the
 * bearer token of the session on every call. Every failure becomes an ApiError with a message a
 * person can act on; a 401 on a call that carried a token also tells the app the session ended.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const UNREACHABLE =
  'The server cannot be reached. Check your network connection; the app retries when it is back.';

let token: string | null = null;
let onExpired: () => void = () => undefined;

export function setToken(t: string | null): void {
  token = t;
}
export function onSessionExpired(fn: () => void): void {
  onExpired = fn;
}
export function currentToken(): string | null {
  return token;
}

export const api = createClient<paths>({ baseUrl: location.origin });
api.use({
  onRequest({ request }) {
    if (token !== null) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && request.headers.has('authorization')) onExpired();
    return response;
  },
});

interface ErrorBody {
  error?: { code?: string; message?: string };
}

/** Awaits an openapi-fetch call and answers its data, or throws an ApiError. */
export async function ok<D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  let r: { data?: D; error?: unknown; response: Response };
  try {
    r = await call;
  } catch {
    throw new ApiError(0, 'unreachable', UNREACHABLE);
  }
  if (r.response.ok && r.data !== undefined) return r.data;
  const body = (r.error ?? {}) as ErrorBody;
  if (r.response.status >= 502 && r.response.status <= 504) throw new ApiError(0, 'unreachable', UNREACHABLE);
  throw new ApiError(
    r.response.status,
    body.error?.code ?? `http_${r.response.status}`,
    body.error?.message ?? `The server answered ${r.response.status} ${r.response.statusText}`,
  );
}

/** The message of any error, for showing to a person. */
export const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
