import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../../domain/errors.js';

const JSON_TYPE = /^application\/(?:[\w.+-]*\+)?json\b/i;

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

/** Reads the raw body up to `maxBytes`; a larger one answers 413 without reading further. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(
      new AppError('payload_too_large', `The body exceeds the limit of ${maxBytes} bytes`),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AppError('payload_too_large', `The body exceeds the limit of ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Reads a JSON object body. An empty body counts as `{}`; a body that is not JSON, or JSON that is
 * not an object, answers 400; a non-JSON content type answers 415.
 */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const raw = await readBody(req, maxBytes);
  if (raw.length === 0) return {};
  const type = req.headers['content-type'];
  if (type !== undefined && !isJsonContentType(type)) {
    throw new AppError('unsupported_media_type', `Content-Type must be application/json, not ${type}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AppError('invalid_json', 'The body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new AppError('invalid_input', '(body): must be a JSON object', { field: '(body)' });
  }
  return value as Record<string, unknown>;
}

/** Query string as an object; a repeated key keeps its last value. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) out[k] = v;
  return out;
}

export const camelToSnake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
