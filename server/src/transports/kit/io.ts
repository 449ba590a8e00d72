import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../../domain/errors.js';
import type { BodyReservation } from './body-budget.js';

const JSON_TYPE = /^application\/(?:[\w.+-]*\+)?json\b/i;

/** A request header's value (its first, if the client sent it more than once); `name` in lower case. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** application/json or any `+json` type. */
export const isJsonContentType = (type: string): boolean => JSON_TYPE.test(type);

/** Answers an already-serialized body, never cached. */
export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  contentType: string,
  headers: Record<string, string | number> = {},
): void {
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | number> = {},
): void {
  sendText(res, status, JSON.stringify(body), 'application/json; charset=utf-8', headers);
}

/**
 * How long a JSON body (at most WORKROOM_MAX_BODY_BYTES, 1 MB by default) may take to arrive, unless
 * the caller passes WORKROOM_BODY_TIMEOUT: a real client sends one in well under a second; a client
 * dripping it a byte at a time is cut off here instead of holding its connection until the request
 * time-out (which uploads need to be long).
 */
export const BODY_TIMEOUT_MS = 15_000;

/**
 * Reads the raw body up to `maxBytes`; a larger one answers 413 without reading further, one that takes
 * longer than `timeoutMs` 408. With a `reservation` (a body read before the caller is known,
 * body-budget.ts) its bytes are counted while buffered: a declared length up front, so an over-budget
 * body is refused before any of it is read; a chunked one as it arrives. A client that goes away
 * mid-body rejects with `ClientGoneError` (nothing to answer; logged at debug).
 */
export function readBody(
  req: IncomingMessage,
  maxBytes: number,
  timeoutMs = BODY_TIMEOUT_MS,
  reservation?: BodyReservation,
): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  const known = req.headers['content-length'] !== undefined && Number.isFinite(declared);
  if (known && declared > maxBytes) {
    return Promise.reject(
      new AppError('payload_too_large', `The body exceeds the limit of ${maxBytes} bytes`),
    );
  }
  if (reservation && known) {
    const refused = reservation.take(declared);
    if (refused) return Promise.reject(refused);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (err: Error) => {
      clearTimeout(timer);
      req.removeAllListeners('data');
      req.resume();
      reject(err);
    };
    const timer = setTimeout(
      () => stop(new AppError('request_timeout', `The body did not arrive within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    timer.unref();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        stop(new AppError('payload_too_large', `The body exceeds the limit of ${maxBytes} bytes`));
        return;
      }
      if (reservation && !known) {
        const refused = reservation.take(chunk.length);
        if (refused) {
          stop(refused);
          return;
        }
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on('error', () => stop(new ClientGoneError()));
  });
}

/** The client closed its connection before its body was complete: there is nobody to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection before its body was complete');
    this.name = 'ClientGoneError';
  }
}

/**
 * Reads a JSON object body. An empty body counts as `{}`; a body that is not JSON, or JSON that is
 * not an object, answers 400; a non-JSON content type answers 415.
 */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
  timeoutMs = BODY_TIMEOUT_MS,
  reservation?: BodyReservation,
): Promise<Record<string, unknown>> {
  return parseJsonObject(await readBody(req, maxBytes, timeoutMs, reservation), req.headers['content-type']);
}

/** The rules of readJsonObject, for a body already read (the incoming webhook checks its bytes first). */
export function parseJsonObject(raw: Buffer, type: string | undefined): Record<string, unknown> {
  if (raw.length === 0) return {};
  if (type !== undefined && !isJsonContentType(type)) {
    throw new AppError('unsupported_media_type', `Content-Type must be application/json, not ${type}`);
  }
  let value: unknown;
  const text = raw.toString('utf8');
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('invalid_json', 'The body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new AppError('invalid_input', '(body): must be a JSON object', { field: '(body)' });
  }
  const deep = tooDeep(value);
  if (deep !== null) throw deep;
  // U+0000 can only arrive as the escape \u0000 (JSON forbids it raw), so most bodies skip the walk.
  const nul = text.includes('\\u0000') ? findNul(value) : null;
  if (nul !== null) throw nulError(nul);
  return value as Record<string, unknown>;
}

/** No request needs JSON nested deeper than this; deeper input could exhaust a recursive consumer. */
export const MAX_JSON_DEPTH = 32;

/**
 * An error when `value` nests objects/arrays deeper than MAX_JSON_DEPTH. Recursive, but never deeper
 * than MAX_JSON_DEPTH + 1 calls (it stops there), and it allocates nothing: this runs on every request
 * body (an explicit stack of [value, depth] pairs was 0.8 % of an MCP call's profile).
 */
export function tooDeep(value: unknown): AppError | null {
  return nestsDeeper(value, 1)
    ? new AppError('invalid_input', `(body): JSON nested deeper than ${MAX_JSON_DEPTH} levels`, {
        field: '(body)',
      })
    : null;
}

function nestsDeeper(v: unknown, depth: number): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(v)) {
    for (const child of v as unknown[]) if (nestsDeeper(child, depth + 1)) return true;
  } else {
    const o = v as Record<string, unknown>;
    for (const k in o) if (Object.hasOwn(o, k) && nestsDeeper(o[k], depth + 1)) return true;
  }
  return false;
}

/**
 * The path (`a.b.0.c`) of the first string or key in a JSON value that contains U+0000, or null.
 * PostgreSQL cannot store that character in text, so both databases refuse it alike, at the edge.
 */
export function findNul(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\0') ? path : null;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = findNul(value[i], path ? `${path}.${i}` : String(i));
      if (p !== null) return p;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const here = path ? `${path}.${k}` : k;
    if (k.includes('\0')) return here;
    const p = findNul(v, here);
    if (p !== null) return p;
  }
  return null;
}

const nulError = (field: string) =>
  new AppError('invalid_input', `${field}: must not contain the NUL character (U+0000)`, { field });

/** Query string as an object; a repeated key keeps its last value. U+0000 answers 400. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) {
    if (k.includes('\0') || v.includes('\0')) throw nulError(k.replace(/\0/g, ''));
    out[k] = v;
  }
  return out;
}

export const camelToSnake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The client's address (peer, or the last X-Forwarded-For entry behind a trusted proxy). */
export { clientAddress } from '../../operations/client-address.js';
