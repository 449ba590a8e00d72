import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Server } from 'node:net';
import { isAppError } from '../../domain/errors.js';
import { looksLikeBotKey } from '../../domain/secrets.js';
import { toolCallRecorder } from '../../operations/audit/tool-calls.js';
import { authenticateBotKey, bearerCredential } from '../../operations/auth/authenticate.js';
import type { BotActor, Services } from '../../operations/context.js';
import { isJsonContentType, readBody, sendText } from '../http/io.js';
import { enforceRateLimit } from '../http/rate-limit.js';
import type { RequestContext } from '../http/types.js';
import { dispatch, rpcErrorOf, type CallContext } from './handler.js';
import {
  classify,
  errorResponse,
  INVALID_PARAMS,
  INVALID_REQUEST,
  PARSE_ERROR,
  resultRaw,
  TRANSPORT_ERROR,
  UNAUTHORIZED,
  type Incoming,
} from './jsonrpc.js';
import { SessionStore, type McpSession } from './session.js';
import { SSE_HEADERS, sseEvent, SseStream } from './sse.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) =>
  sendText(res, status, body, 'application/json', headers);

const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
  send(res, status, errorResponse(null, status === 401 ? UNAUTHORIZED : TRANSPORT_ERROR, message), headers);

/** Quality values of the two media types MCP uses (a missing Accept accepts anything, JSON first). */
export function acceptPrefs(accept: string | undefined): { json: number; sse: number } {
  if (!accept) return { json: 1, sse: 0.5 };
  let json = 0;
  let sse = 0;
  for (const part of accept.split(',')) {
    const [type = '', ...ps] = part.split(';');
    const t = type.trim().toLowerCase();
    let q = 1;
    for (const p of ps) {
      const [k, v] = p.split('=');
      if (k?.trim() === 'q') q = Number(v) || 0;
    }
    if (t === 'application/json' || t === 'application/*') json = Math.max(json, q);
    else if (t === 'text/event-stream' || t === 'text/*') sse = Math.max(sse, q);
    else if (t === '*/*') {
      json = Math.max(json, q);
      sse = Math.max(sse, q * 0.5);
    }
  }
  return { json, sse };
}

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * The MCP endpoint (Streamable HTTP, 2025-03-26) of one server: POST for messages, GET for the
 * session's server-message stream, DELETE to end a session. See docs/MCP.md.
 */
export class McpEndpoint {
  readonly sessions: SessionStore | undefined;
  readonly #origins: Set<string>;

  constructor(private readonly services: Services) {
    this.sessions = services.config.mcp.sessions ? new SessionStore(services.bus) : undefined;
    this.#origins = new Set(
      [services.config.publicUrl, ...services.config.mcp.allowedOrigins].map((o) => o.replace(/\/+$/, '')),
    );
  }

  /**
   * DNS-rebinding protection: no Origin (not a browser), our public origin, a loopback origin, or one
   * of WORKROOM_MCP_ALLOWED_ORIGINS. The Host header is not trusted for this: rebinding controls it.
   */
  originAllowed(origin: string | undefined): boolean {
    if (origin === undefined) return true;
    if (this.#origins.has(origin)) return true;
    try {
      const u = new URL(origin);
      return (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK.has(u.hostname);
    } catch {
      return false;
    }
  }

  /** Origin check and bot-key authentication; answers the refusal itself and returns undefined. */
  async #admit(rc: RequestContext): Promise<BotActor | undefined> {
    const { req, res } = rc;
    if (!this.originAllowed(header(req.headers, 'origin'))) {
      refuse(res, 403, 'Forbidden: this Origin may not use the MCP endpoint');
      return undefined;
    }
    const unauthorized = (message: string) => refuse(res, 401, message, { 'www-authenticate': 'Bearer' });
    const credential = bearerCredential(req.headers.authorization);
    if (!credential) return void unauthorized('Unauthorized: send Authorization: Bearer <bot API key>');
    if (!looksLikeBotKey(credential))
      return void unauthorized('Unauthorized: the MCP endpoint accepts only bot API keys');
    try {
      const actor = await authenticateBotKey(this.services, credential);
      enforceRateLimit(this.services, actor, res);
      rc.actor = actor;
      return actor;
    } catch (err) {
      if (isAppError(err) && err.code === 'unauthenticated')
        return void unauthorized(`Unauthorized: ${err.message}`);
      if (isAppError(err) && err.code === 'rate_limited') {
        return void refuse(res, 429, `Too Many Requests: ${err.message}`, {
          'retry-after': String(Math.ceil(err.details.retryAfterSeconds ?? 1)),
        });
      }
      throw err;
    }
  }

  /** The session named by Mcp-Session-Id; answers 400 (missing) or 404 (ended or unknown) itself. */
  #session(rc: RequestContext, actor: BotActor): McpSession | undefined {
    const id = header(rc.req.headers, 'mcp-session-id');
    if (!id)
      return void refuse(
        rc.res,
        400,
        'Bad Request: Mcp-Session-Id header is required; send initialize first',
      );
    const s = this.sessions!.get(id, actor.botId);
    if (!s)
      return void refuse(
        rc.res,
        404,
        'Session not found: it has ended or never existed; initialize a new session',
      );
    return s;
  }

  async post(rc: RequestContext): Promise<void> {
    const { req, res } = rc;
    const actor = await this.#admit(rc);
    if (!actor) return;
    const type = req.headers['content-type'];
    if (type !== undefined && !isJsonContentType(type)) {
      return refuse(res, 415, 'Unsupported Media Type: Content-Type must be application/json');
    }
    const pref = acceptPrefs(req.headers.accept);
    if (pref.json === 0 && pref.sse === 0) {
      return refuse(res, 406, 'Not Acceptable: Accept must list application/json and text/event-stream');
    }
    let raw: Buffer;
    try {
      raw = await readBody(req, this.services.config.maxBodyBytes);
    } catch (err) {
      if (isAppError(err) && err.code === 'payload_too_large')
        return refuse(res, 413, `Payload Too Large: ${err.message}`);
      throw err;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return send(res, 400, errorResponse(null, PARSE_ERROR, 'Parse error: the body is not valid JSON'));
    }
    const batch = Array.isArray(body);
    if (batch && (body as unknown[]).length === 0) {
      return send(
        res,
        400,
        errorResponse(null, INVALID_REQUEST, 'Invalid Request: a batch must not be empty'),
      );
    }
    const messages: Incoming[] = batch ? (body as unknown[]).map(classify) : [classify(body)];
    const first = messages[0]!;
    if (!batch && first.kind === 'invalid')
      return send(res, 400, errorResponse(first.id, INVALID_REQUEST, first.message));

    let session: McpSession | undefined;
    const initializing = !batch && first.kind === 'request' && first.method === 'initialize';
    if (this.sessions && !initializing) {
      session = this.#session(rc, actor);
      if (!session) return;
    }
    if (!messages.some((m) => m.kind === 'request' || m.kind === 'invalid')) {
      for (const m of messages)
        if (m.kind === 'notification' && m.method === 'notifications/initialized' && session)
          session.initialized = true;
      res.writeHead(202);
      res.end();
      return;
    }

    const cc: CallContext = {
      actor,
      services: this.services,
      requestId: rc.requestId,
      get log() {
        return rc.log; // made only when something logs
      },
      inBatch: batch,
      idempotencyKey: header(rc.req.headers, 'idempotency-key'),
      startSession: (version) => {
        if (!this.sessions) return;
        session = this.sessions.create(actor.botId, version);
        res.setHeader('mcp-session-id', session.id);
      },
    };
    const sse = pref.sse > pref.json;
    const out: string[] = [];
    for (const m of messages) {
      let response: string;
      if (m.kind === 'invalid') response = errorResponse(m.id, INVALID_REQUEST, m.message);
      else if (m.kind === 'request') response = await this.#answer(m, cc);
      else {
        if (m.kind === 'notification' && m.method === 'notifications/initialized' && session)
          session.initialized = true;
        continue;
      }
      if (!sse) out.push(response);
      else {
        // Each response is written as soon as it is ready.
        if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
        res.write(sseEvent(response, session?.nextEventId()));
      }
    }
    if (sse) res.end();
    else send(res, 200, batch ? `[${out.join(',')}]` : out[0]!);
  }

  async #answer(m: Extract<Incoming, { kind: 'request' }>, cc: CallContext): Promise<string> {
    try {
      if (m.arrayParams)
        return errorResponse(m.id, INVALID_PARAMS, 'Invalid params: params must be an object');
      return resultRaw(m.id, await dispatch(m.method, m.params, cc));
    } catch (err) {
      const e = rpcErrorOf(err, cc.log);
      return errorResponse(m.id, e.code, e.message, e.data);
    }
  }

  /** GET: the session's stream of server messages, resumable with Last-Event-ID. */
  async get(rc: RequestContext): Promise<void> {
    const { req, res } = rc;
    const actor = await this.#admit(rc);
    if (!actor) return;
    if (!this.sessions) {
      return refuse(res, 405, 'Method Not Allowed: sessions are off, so there is no GET stream', {
        allow: 'POST',
      });
    }
    if (acceptPrefs(req.headers.accept).sse === 0) {
      return refuse(res, 406, 'Not Acceptable: Accept must list text/event-stream');
    }
    const session = this.#session(rc, actor);
    if (!session) return;
    session.stream?.end();
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    const stream = new SseStream(res, req.socket as unknown as { server?: Server }, () => {
      if (session.stream === stream) session.stream = undefined;
    });
    session.stream = stream;
    const last = header(req.headers, 'last-event-id');
    if (last !== undefined) for (const e of session.since(last)) stream.send(e.data, String(e.seq));
  }

  /** DELETE: ends the session (its stream closes; later requests with its id answer 404). */
  async delete(rc: RequestContext): Promise<void> {
    const actor = await this.#admit(rc);
    if (!actor) return;
    if (!this.sessions) return refuse(rc.res, 405, 'Method Not Allowed: sessions are off', { allow: 'POST' });
    const session = this.#session(rc, actor);
    if (!session) return;
    this.sessions.end(session.id);
    rc.res.writeHead(204);
    rc.res.end();
  }
}

const endpoints = new WeakMap<Services, McpEndpoint>();

/** The endpoint of a running server (one per server: it holds the sessions). */
export function mcpEndpoint(services: Services, rc?: RequestContext): McpEndpoint {
  let e = endpoints.get(services);
  if (!e) {
    endpoints.set(services, (e = new McpEndpoint(services)));
    // Audit rows still buffered when the server stops are written before the database closes.
    const server = (rc?.req.socket as { server?: Server } | undefined)?.server;
    server?.once('close', () => void toolCallRecorder(services).flush());
  }
  return e;
}
