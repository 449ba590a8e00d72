import type { IncomingHttpHeaders } from 'node:http';
import { INVALID_PARAMS, METHOD_NOT_FOUND, type Incoming, type Params } from './jsonrpc.js';
import { ALL_VERSIONS, isLegacyVersion, isModernVersion } from './versions.js';
import { headerValue } from '../kit/io.js';

/**
 * The modern, stateless era (MCP 2026-07-28) on the same endpoint as the legacy one: how a request is
 * told apart, what it must carry, and what its results add. Quotes are from the revision's
 * basic/versioning.mdx and basic/transports/streamable-http.mdx.
 */
export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_META = 'io.modelcontextprotocol/clientInfo';
export const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/** 2026-07-28 error codes: UnsupportedProtocolVersionError and HeaderMismatch. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
export const HEADER_MISMATCH = -32020;

const metaOf = (params: Params | undefined): Record<string, unknown> | undefined => {
  const m = params?._meta;
  return m !== null && typeof m === 'object' && !Array.isArray(m)
    ? (m as Record<string, unknown>)
    : undefined;
};

/**
 * Which era serves a request. versioning.mdx: "A dual-era server selects its behavior from how the
 * client opens: A request carrying modern per-request `_meta` is served statelessly according to this
 * revision. An `initialize` request selects legacy semantics". Besides, a request without a session id
 * whose MCP-Protocol-Version header names no legacy version is modern: no legacy client sends that
 * (2025-06-18+ send their negotiated legacy version), and answering it as modern gives the client the
 * modern error it needs (a missing `_meta` field, an unsupported version) instead of a legacy 400.
 * Batches are legacy: the modern body "MUST be a single JSON-RPC request or notification".
 */
export function isModernRequest(
  body: unknown,
  message: Incoming | undefined,
  headers: IncomingHttpHeaders,
): boolean {
  if (Array.isArray(body) || !message) return false;
  if ((message.kind === 'request' || message.kind === 'notification') && message.method === 'initialize')
    return false;
  if (message.kind === 'request' || message.kind === 'notification') {
    if (metaOf(message.params)?.[PROTOCOL_VERSION_META] !== undefined) return true;
  }
  const h = headerValue(headers, 'mcp-protocol-version');
  return h !== undefined && !isLegacyVersion(h) && headerValue(headers, 'mcp-session-id') === undefined;
}

export interface ModernRefusal {
  status: number;
  code: number;
  message: string;
  data?: unknown;
}

/** Methods a modern request may call; anything else is 404 -32601. */
export const MODERN_METHODS = new Set([
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'subscriptions/listen',
  // The io.modelcontextprotocol/tasks extension (tasks.ts).
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
]);

/** `Mcp-Name`'s body source per method (streamable-http.mdx, "Standard Request Headers"). */
const NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name',
  'resources/read': 'uri',
  'prompts/get': 'name',
};

/** streamable-http.mdx, "Value Encoding": `=?base64?<Base64 of the UTF-8 value>?=`. */
function decodeHeaderValue(v: string): string {
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(v);
  return m ? Buffer.from(m[1]!, 'base64').toString('utf8') : v;
}

const mismatch = (message: string): ModernRefusal => ({
  status: 400,
  code: HEADER_MISMATCH,
  message: `Header mismatch: ${message}`,
});

/**
 * Checks a modern request before it runs, in this order; the first failure is the answer:
 * 1. `_meta` must carry the protocol version (-32602, HTTP 400).
 * 2. versioning.mdx: "If the server does not implement the requested version [...] it MUST respond
 *    with an UnsupportedProtocolVersionError listing the versions it does support" (-32022, `data:
 *    { supported, requested }`); streamable-http.mdx: "MUST respond with 400 Bad Request".
 * 3. streamable-http.mdx: "Every POST request to the MCP endpoint MUST include an MCP-Protocol-Version
 *    header" whose value "MUST match the io.modelcontextprotocol/protocolVersion field [...] If the
 *    values do not match, the server MUST reject the request with 400 Bad Request and a HeaderMismatch
 *    JSON-RPC error" (-32020).
 * 4. `_meta` must carry the client capabilities (an object; -32602, HTTP 400); `clientInfo`, when
 *    given, must be an object.
 * 5. "Servers that process the request body MUST reject requests where the values specified in the
 *    headers do not match the corresponding values in the request body" — `Mcp-Method` (all requests)
 *    and `Mcp-Name` (tools/call, resources/read, prompts/get; decoded first: "servers MUST decode an
 *    encoded Mcp-Name [...] before comparing it"), missing or different: -32020, HTTP 400.
 * 6. "If the server does not implement the requested RPC method, it MUST respond with 404 Not Found
 *    and a JSON-RPC error with code -32601".
 */
export function checkModern(
  m: Extract<Incoming, { kind: 'request' }>,
  headers: IncomingHttpHeaders,
): ModernRefusal | { version: string } {
  const meta = metaOf(m.params);
  const version = meta?.[PROTOCOL_VERSION_META];
  if (typeof version !== 'string') {
    return {
      status: 400,
      code: INVALID_PARAMS,
      message: `Invalid params: _meta["${PROTOCOL_VERSION_META}"] is required (a string naming the protocol version)`,
      data: { field: `_meta.${PROTOCOL_VERSION_META}` },
    };
  }
  if (!isModernVersion(version)) {
    return {
      status: 400,
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version: ${version.slice(0, 40)}`,
      data: { supported: ALL_VERSIONS, requested: version },
    };
  }
  const hv = headerValue(headers, 'mcp-protocol-version');
  if (hv === undefined) return mismatch('the MCP-Protocol-Version header is required');
  if (hv !== version)
    return mismatch(
      `MCP-Protocol-Version header value '${hv.slice(0, 40)}' does not match body value '${version}'`,
    );
  const caps = meta![CLIENT_CAPABILITIES_META];
  if (caps === null || typeof caps !== 'object' || Array.isArray(caps)) {
    return {
      status: 400,
      code: INVALID_PARAMS,
      message: `Invalid params: _meta["${CLIENT_CAPABILITIES_META}"] is required (an object)`,
      data: { field: `_meta.${CLIENT_CAPABILITIES_META}` },
    };
  }
  const info = meta![CLIENT_INFO_META];
  if (info !== undefined && (info === null || typeof info !== 'object' || Array.isArray(info))) {
    return {
      status: 400,
      code: INVALID_PARAMS,
      message: `Invalid params: _meta["${CLIENT_INFO_META}"] must be an object`,
      data: { field: `_meta.${CLIENT_INFO_META}` },
    };
  }
  const hm = headerValue(headers, 'mcp-method');
  if (hm === undefined) return mismatch('the Mcp-Method header is required');
  if (hm !== m.method)
    return mismatch(
      `Mcp-Method header value '${hm.slice(0, 100)}' does not match body value '${m.method.slice(0, 100)}'`,
    );
  const source = NAME_SOURCE[m.method];
  const bodyName = source ? m.params?.[source] : undefined;
  if (typeof bodyName === 'string') {
    const hn = headerValue(headers, 'mcp-name');
    if (hn === undefined) return mismatch(`the Mcp-Name header is required for ${m.method}`);
    const decoded = decodeHeaderValue(hn);
    if (decoded !== bodyName)
      return mismatch(
        `Mcp-Name header value '${decoded.slice(0, 100)}' does not match body value '${bodyName.slice(0, 100)}'`,
      );
  }
  if (!MODERN_METHODS.has(m.method)) {
    return { status: 404, code: METHOD_NOT_FOUND, message: `Method not found: ${m.method.slice(0, 100)}` };
  }
  return { version };
}

/**
 * Cache hints the 2026-07-28 schema requires on list and read results (`ttlMs`, `cacheScope`). The
 * tool list, the resource templates and server/discover are the same for every key and change only
 * with a deployment: public, five minutes. A bot's resources change when it joins or leaves a
 * container: private, not cached.
 */
const CACHE: Record<string, string> = {
  'tools/list': '"ttlMs":300000,"cacheScope":"public",',
  'resources/templates/list': '"ttlMs":300000,"cacheScope":"public",',
  'resources/list': '"ttlMs":0,"cacheScope":"private",',
  'resources/read': '"ttlMs":0,"cacheScope":"private",',
};

/**
 * A result as the modern era answers it: `resultType` ("complete"; "input_required" is the MRTR shape
 * a tool may answer instead, and is passed through) plus the cache hints of its method. Spliced into
 * the serialized result, which is always an object.
 */
export function modernResult(method: string, json: string): string {
  const head = `${json.startsWith('{"resultType":') ? '' : '"resultType":"complete",'}${CACHE[method] ?? ''}`;
  if (head === '') return json;
  return json === '{}' ? `{${head.slice(0, -1)}}` : `{${head}${json.slice(1)}`;
}

/** The server/discover result (without resultType, added by modernResult). */
export function discoverResult(
  capabilities: Record<string, unknown>,
  serverInfo: Record<string, unknown>,
  instructions: string,
): string {
  return JSON.stringify({
    supportedVersions: ALL_VERSIONS,
    capabilities,
    instructions,
    ttlMs: 300000,
    cacheScope: 'public',
    _meta: { [SERVER_INFO_META]: serverInfo },
  });
}
