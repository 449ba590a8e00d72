/**
 * JSON-RPC 2.0, as MCP 2025-03-26 uses it: classification of incoming messages and serialization of
 * responses. Responses are built as strings so that precomputed results (tools/list) are spliced in
 * without being serialized again.
 */

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** MCP: the resource named by resources/read does not exist or is not visible. */
export const RESOURCE_NOT_FOUND = -32002;
/** decisions.md: the key lacks the scope of the tool. */
export const INSUFFICIENT_SCOPE = -32003;
/**
 * The key's grants refuse the tool outright (docs/MCP.md, "Grants"): not among its `tools`, or a
 * writing tool under `read_only` (data.grant, data.tool). Such tools are not in its tools/list.
 */
export const GRANT_DENIED = -32004;
/** The key's rate limit refused this call of a batch (data.retry_after_seconds). */
export const RATE_LIMITED = -32005;
/** The batch's answer grew past its bound before this call, which was not run. */
export const RESPONSE_TOO_LARGE = -32006;
/** Transport-level refusals (missing session, forbidden origin): the SDK's convention. */
export const TRANSPORT_ERROR = -32000;
export const UNAUTHORIZED = -32001;

export type JsonRpcId = string | number;
export type Params = Record<string, unknown>;

export type Incoming =
  | { kind: 'request'; id: JsonRpcId; method: string; params: Params | undefined; arrayParams: boolean }
  | { kind: 'notification'; method: string; params: Params | undefined }
  | { kind: 'response' }
  | { kind: 'invalid'; id: JsonRpcId | null; message: string };

const isId = (v: unknown): v is JsonRpcId =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** Classifies one element of a body (a message, or one member of a batch). */
export function classify(msg: unknown): Incoming {
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
    return { kind: 'invalid', id: null, message: 'Invalid Request: a message must be a JSON object' };
  }
  const m = msg as Record<string, unknown>;
  const hasId = m.id !== undefined;
  const id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== '2.0') return { kind: 'invalid', id, message: 'Invalid Request: jsonrpc must be "2.0"' };
  if (m.method === undefined) {
    if (('result' in m || 'error' in m) && (isId(m.id) || m.id === null)) return { kind: 'response' };
    return { kind: 'invalid', id, message: 'Invalid Request: method is missing' };
  }
  if (typeof m.method !== 'string') {
    return { kind: 'invalid', id, message: 'Invalid Request: method must be a string' };
  }
  const p = m.params;
  if (p !== undefined && (p === null || typeof p !== 'object')) {
    return { kind: 'invalid', id, message: 'Invalid Request: params must be an object' };
  }
  if (hasId && id === null) {
    return { kind: 'invalid', id: null, message: 'Invalid Request: id must be a string or a number' };
  }
  const arrayParams = Array.isArray(p);
  const params = arrayParams ? undefined : (p as Params | undefined);
  if (!hasId) return { kind: 'notification', method: m.method, params };
  return { kind: 'request', id: id!, method: m.method, params, arrayParams };
}

const idText = (id: JsonRpcId | null): string => (id === null ? 'null' : JSON.stringify(id));

/** A success response whose result is already JSON text. */
export const resultRaw = (id: JsonRpcId, resultJson: string): string =>
  `{"jsonrpc":"2.0","id":${idText(id)},"result":${resultJson}}`;

export const result = (id: JsonRpcId, value: unknown): string => resultRaw(id, JSON.stringify(value));

export function errorResponse(id: JsonRpcId | null, code: number, message: string, data?: unknown): string {
  const error: Record<string, unknown> = { code, message };
  if (data !== undefined) error.data = data;
  return `{"jsonrpc":"2.0","id":${idText(id)},"error":${JSON.stringify(error)}}`;
}

/** An error a method handler throws to answer a JSON-RPC error instead of a result. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}
