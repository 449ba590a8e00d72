import type { ServerResponse } from 'node:http';
import type { Server } from 'node:net';
import { isAppError } from '../../domain/errors.js';
import { looksLikeBotKey } from '../../domain/secrets.js';
import { authenticateBotKey, bearerCredential } from '../../operations/auth/authenticate.js';
import type { BotActor, Services } from '../../operations/context.js';
import {
  findNul,
  headerValue,
  isJsonContentType,
  MAX_JSON_DEPTH,
  readBody,
  sendText,
  tooDeep,
} from '../kit/io.js';
import { enforceRateLimit, rateLimitHeaders, takeRateLimit } from '../kit/rate-limit.js';
import type { RequestContext } from '../kit/request-context.js';
import { dispatch, rateCostOf, rpcErrorOf, type CallContext } from './handler.js';
import {
  classify,
  errorResponse,
  INVALID_PARAMS,
  INVALID_REQUEST,
  PARSE_ERROR,
  RATE_LIMITED,
  RESPONSE_TOO_LARGE,
  resultRaw,
  TRANSPORT_ERROR,
  UNAUTHORIZED,
  type Incoming,
} from './jsonrpc.js';
import { SessionStore, type McpSession, type StreamEvent } from './session.js';
import { SessionSigner } from './session-token.js';
import { SSE_HEADERS, sseEvent, SseStream } from './sse.js';
import { allowsBatches, HEADERLESS_VERSION, isLegacyVersion } from './versions.js';
import { ListenHub } from './listen.js';
import type { CommittedEvents } from '../../events/committed.js';
import { announceMcpSessionEnded } from '../../operations/bots/mcp-sessions.js';
import { checkModern, isModernRequest, modernResult } from './modern.js';
import { ListedMessageJson } from './listed-json.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
/** A batch answer stops growing here: the calls after it are answered with an error, not run. */
const MAX_BATCH_ANSWER_BYTES = 8 * 1024 * 1024;
/** U+0000 can only reach a JSON body as this escape (JSON forbids a raw NUL inside strings). */
const NUL_ESCAPE = '\\u0000';

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

/** Aborted when the client goes away before its answer is written (a waiting tasks/result stops). */
function goneSignal(res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  // Made when a method first asks (HttpCall.gone): the client may have gone already.
  if (res.destroyed && !res.writableFinished) ac.abort();
  else
    res.once('close', () => {
      if (!res.writableFinished) ac.abort();
    });
  return ac.signal;
}

/**
 * A call's context on this transport. What only some methods need is made when first asked for: the
 * `gone` signal (an AbortController and a close listener, ~11 µs a request under load; only
 * tasks/result waits on it) and the Idempotency-Key header (creating tools). Measured in
 * bench/notes/mcp-profile.md.
 */
class HttpCall implements CallContext {
  #gone: AbortSignal | undefined;
  /** The session this request runs in (legacy, sessions on), or the one its initialize opened. */
  session: McpSession | undefined;

  constructor(
    private readonly rc: RequestContext,
    readonly actor: BotActor,
    readonly services: Services,
    readonly inBatch: boolean,
    public version: string,
    readonly modern: boolean,
    readonly events: CommittedEvents,
    private readonly sessions: SessionStore | undefined,
    session: McpSession | undefined,
    readonly listedJson: ListedMessageJson,
  ) {
    this.session = session;
  }

  get requestId(): string {
    return this.rc.requestId;
  }

  get log(): RequestContext['log'] {
    return this.rc.log; // made only when something logs
  }

  get gone(): AbortSignal {
    return (this.#gone ??= goneSignal(this.rc.res));
  }

  get idempotencyKey(): string | undefined {
    return headerValue(this.rc.req.headers, 'idempotency-key');
  }

  startSession(negotiated: string): void {
    this.version = negotiated;
    if (!this.sessions) return;
    this.session = this.sessions.create(this.actor, negotiated);
    this.rc.res.setHeader('mcp-session-id', this.session.id);
  }
}

/** Accept headers remembered per endpoint (clients send the same one on every request). */
const ACCEPT_MEMO_MAX = 64;

/**
 * The MCP endpoint (Streamable HTTP, 2025-03-26) of one server: POST for messages, GET for the
 * session's server-message stream, DELETE to end a session. See docs/MCP.md.
 */

export class McpEndpoint {
  readonly sessions: SessionStore | undefined;
  readonly #listen: ListenHub;
  readonly #origins: Set<string>;
  /** Every instance's committed events: what tasks/result waits on (tasks.ts). */
  readonly #events: CommittedEvents;
  /** acceptPrefs by Accept header text: a client sends one text, parsed once (bounded; cleared when full). */
  readonly #accepts = new Map<string, { json: number; sse: number }>();
  /** Listed messages' JSON kept between read_messages calls (listed-json.ts). */
  readonly #listedJson = new ListedMessageJson();

  /**
   * `events`: what list_changed notifications are made of; the server passes every instance's committed
   * events (events/committed.ts), so a session's stream hears a change made through another instance.
   */
  constructor(
    private readonly services: Services,
    events: CommittedEvents = services.bus,
  ) {
    this.#events = events;
    const m = services.config.mcp;
    this.sessions = m.sessions
      ? new SessionStore(
          events,
          {
            perKey: m.sessionsPerKey,
            perOrg: m.sessionsPerOrg,
            max: m.sessionsMax,
            idleMs: m.sessionIdleMs,
            ttlMs: services.config.sessionTtlMs,
          },
          new SessionSigner(services.encryptionKey),
          () => services.clock.now(),
          (s) =>
            announceMcpSessionEnded(services, s).catch((err: unknown) =>
              services.log.error({ err }, 'could not tell the other instances that an MCP session ended'),
            ),
        )
      : undefined;
    this.#listen = new ListenHub(events, m.sessionsPerKey);
    // (The public URL is read at each check: with PORT=0 it is known only once listening.)
    this.#origins = new Set(services.config.mcp.allowedOrigins.map((o) => o.replace(/\/+$/, '')));
  }

  /**
   * DNS-rebinding protection, every version (2025-11-25 and 2026-07-28 Streamable HTTP: "Servers MUST
   * validate the Origin header on all incoming connections to prevent DNS rebinding attacks. If the
   * Origin header is present and invalid, servers MUST respond with HTTP 403 Forbidden"): no Origin
   * (not a browser), our public origin, a loopback origin, or one of WORKROOM_MCP_ALLOWED_ORIGINS. The
   * Host header is not trusted for this ("same host as the request" would pass the very attack:
   * rebinding makes the attacker's name, in both Origin and Host, resolve to this server).
   */
  originAllowed(origin: string | undefined): boolean {
    if (origin === undefined) return true;
    if (this.#origins.has(origin)) return true;
    try {
      if (origin === new URL(this.services.config.publicUrl).origin) return true;
      const u = new URL(origin);
      return (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK.has(u.hostname);
    } catch {
      return false;
    }
  }

  /** acceptPrefs, remembered by header text. */
  #acceptPrefs(accept: string | undefined): { json: number; sse: number } {
    if (accept === undefined) return acceptPrefs(accept);
    let p = this.#accepts.get(accept);
    if (!p) {
      if (this.#accepts.size >= ACCEPT_MEMO_MAX) this.#accepts.clear();
      this.#accepts.set(accept, (p = acceptPrefs(accept)));
    }
    return p;
  }

  /** Origin check and bot-key authentication; answers the refusal itself and returns undefined. */
  async #admit(rc: RequestContext): Promise<BotActor | undefined> {
    const { req, res } = rc;
    if (!this.originAllowed(headerValue(req.headers, 'origin'))) {
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
      await enforceRateLimit(this.services, actor, res);
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
    const id = headerValue(rc.req.headers, 'mcp-session-id');
    if (!id)
      return void refuse(
        rc.res,
        400,
        'Bad Request: Mcp-Session-Id header is required; send initialize first',
      );
    const s = this.sessions!.resolve(id, actor);
    if (!s)
      return void refuse(
        rc.res,
        404,
        'Session not found: it has ended or never existed; initialize a new session',
      );
    return s;
  }

  /**
   * The version governing a legacy request after initialize; answers 400 itself and returns undefined
   * for a bad header. 2025-06-18 / 2025-11-25 Streamable HTTP: "If using HTTP, the client MUST include
   * the MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent requests" and "If the
   * server receives a request with an invalid or unsupported MCP-Protocol-Version, it MUST respond with
   * 400 Bad Request." A header naming another version we support than the session negotiated is
   * neither invalid nor unsupported: it is accepted, as the SDK's reference server does (and the official
   * conformance suite's multiple-streams scenario sends 2025-03-26 on a 2025-11-25 session), and the
   * session's negotiated version governs the request. Missing: the session's version, else (sessions
   * off) 2025-03-26 (see HEADERLESS_VERSION).
   */
  #legacyVersion(rc: RequestContext, session: McpSession | undefined): string | undefined {
    const v = headerValue(rc.req.headers, 'mcp-protocol-version');
    if (v === undefined) return session?.protocolVersion ?? HEADERLESS_VERSION;
    if (!isLegacyVersion(v)) {
      return void refuse(
        rc.res,
        400,
        `Bad Request: unsupported MCP-Protocol-Version "${v.slice(0, 40)}"; send the version negotiated at initialize`,
      );
    }
    return session?.protocolVersion ?? v;
  }

  async post(rc: RequestContext): Promise<void> {
    const { req, res } = rc;
    const actor = await this.#admit(rc);
    if (!actor) return;
    const type = req.headers['content-type'];
    if (type !== undefined && !isJsonContentType(type)) {
      return refuse(res, 415, 'Unsupported Media Type: Content-Type must be application/json');
    }
    const pref = this.#acceptPrefs(req.headers.accept);
    if (pref.json === 0 && pref.sse === 0) {
      return refuse(res, 406, 'Not Acceptable: Accept must list application/json and text/event-stream');
    }
    let raw: Buffer;
    try {
      raw = await readBody(req, this.services.config.maxBodyBytes, this.services.config.http.bodyTimeoutMs);
    } catch (err) {
      if (isAppError(err) && err.code === 'payload_too_large')
        return refuse(res, 413, `Payload Too Large: ${err.message}`, { connection: 'close' });
      if (isAppError(err) && err.code === 'request_timeout')
        return refuse(res, 408, `Request Timeout: ${err.message}`, { connection: 'close' });
      throw err;
    }
    const text = raw.toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return send(res, 400, errorResponse(null, PARSE_ERROR, 'Parse error: the body is not valid JSON'));
    }
    const refusal = this.#refuseWhole(body);
    if (refusal !== null) return send(res, 400, errorResponse(null, INVALID_REQUEST, refusal));
    // On the text, not the Buffer: a string search skips Buffer.includes' call into C++ (0.15 → 0.03 µs).
    const mayHoldNul = text.includes(NUL_ESCAPE);
    const batch = Array.isArray(body);
    const messages: Incoming[] = batch ? (body as unknown[]).map(classify) : [classify(body)];
    const first = messages[0]!;
    if (!batch && first.kind === 'invalid')
      return send(res, 400, errorResponse(first.id, INVALID_REQUEST, first.message));

    const sse = pref.sse > pref.json;
    if (isModernRequest(body, batch ? undefined : first, req.headers))
      return this.#modern(rc, actor, first, sse, mayHoldNul);

    let session: McpSession | undefined;
    const initializing = !batch && first.kind === 'request' && first.method === 'initialize';
    if (this.sessions && initializing && !this.sessions.hasRoomFor(actor)) {
      return refuse(res, 503, 'Service Unavailable: too many MCP sessions on this server; retry later', {
        'retry-after': '60',
      });
    }
    if (this.sessions && !initializing) {
      session = this.#session(rc, actor);
      if (!session) return;
    }
    let version = HEADERLESS_VERSION;
    if (!initializing) {
      const v = this.#legacyVersion(rc, session);
      if (v === undefined) return;
      version = v;
    }
    // 2025-06-18 changelog: "Remove support for JSON-RPC batching". A batch in a later session is
    // answered with one error, none of it run (answering each call would be batching after all).
    if (batch && !allowsBatches(version)) {
      return send(
        res,
        400,
        errorResponse(
          null,
          INVALID_REQUEST,
          `Invalid Request: protocol version ${version} has no JSON-RPC batches (removed in 2025-06-18); send each message in its own request`,
        ),
      );
    }
    if (!messages.some((m) => m.kind === 'request' || m.kind === 'invalid')) {
      for (const m of messages)
        if (m.kind === 'notification' && m.method === 'notifications/initialized' && session)
          session.initialized = true;
      res.writeHead(202);
      res.end();
      return;
    }

    const cc = new HttpCall(
      rc,
      actor,
      this.services,
      batch,
      version,
      false,
      this.#events,
      this.sessions,
      session,
      this.#listedJson,
    );
    const out: string[] = [];
    let answerBytes = 0;
    let requests = 0;
    for (const m of messages) {
      let response: string;
      if (m.kind === 'invalid') response = errorResponse(m.id, INVALID_REQUEST, m.message);
      else if (m.kind === 'request') {
        response =
          answerBytes > MAX_BATCH_ANSWER_BYTES
            ? errorResponse(
                m.id,
                RESPONSE_TOO_LARGE,
                `The answer to this batch passed ${MAX_BATCH_ANSWER_BYTES} bytes before this call; it was not run: send it again on its own`,
              )
            : ((await this.#charge(m, requests++, actor, res)) ??
              this.#refuseNul(m, mayHoldNul) ??
              (await this.#answer(m, cc)));
      } else {
        if (m.kind === 'notification' && m.method === 'notifications/initialized' && cc.session)
          cc.session.initialized = true;
        continue;
      }
      answerBytes += response.length;
      if (!sse) out.push(response);
      else {
        // Each response is written as soon as it is ready.
        if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
        res.write(sseEvent(response, cc.session?.nextEventId()));
      }
    }
    if (sse) res.end();
    else send(res, 200, batch ? `[${out.join(',')}]` : out[0]!);
  }

  /**
   * Bodies refused whole with -32600, before any message runs: nesting no request needs, an empty
   * batch, and a batch over the limit (it would multiply the work of one request).
   */
  #refuseWhole(body: unknown): string | null {
    if (tooDeep(body) !== null) return `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
    if (!Array.isArray(body)) return null;
    if (body.length === 0) return 'Invalid Request: a batch must not be empty';
    const max = this.services.config.mcp.maxBatch;
    if (body.length > max) {
      return `Invalid Request: a batch may hold at most ${max} messages (this one has ${body.length}); send the rest in further requests`;
    }
    return null;
  }

  /** PostgreSQL cannot store U+0000 in text: refused here, for both databases alike, naming the field. */
  #refuseNul(m: Extract<Incoming, { kind: 'request' }>, mayHoldNul: boolean): string | undefined {
    const field = mayHoldNul ? findNul(m.params) : null;
    if (field === null) return undefined;
    return errorResponse(
      m.id,
      INVALID_PARAMS,
      `Invalid params: ${field || 'params'} contains the NUL character (U+0000), which is not allowed`,
      { field },
    );
  }

  /**
   * Rate limiting per call: the HTTP request already took one token at admission, which pays for its
   * first call; every further call of a batch takes its own, and a call of an expensive tool (search)
   * its extra cost. A refused call answers a JSON-RPC error with the retry time; the others still run.
   * Returns that error, or undefined when the call may run.
   */
  async #charge(
    m: Extract<Incoming, { kind: 'request' }>,
    index: number,
    actor: BotActor,
    res: ServerResponse,
  ): Promise<string | undefined> {
    const cost = (index === 0 ? 0 : 1) + rateCostOf(m.method, m.params) - 1;
    if (cost <= 0) return undefined;
    const d = await takeRateLimit(this.services, actor, cost);
    if (!d) return undefined;
    if (!res.headersSent) for (const [k, v] of Object.entries(rateLimitHeaders(d))) res.setHeader(k, v);
    if (d.allowed) return undefined;
    return errorResponse(
      m.id,
      RATE_LIMITED,
      `Rate limit exceeded for this API key: this call was not run; retry in ${d.retryAfterSeconds} s`,
      { retry_after_seconds: d.retryAfterSeconds },
    );
  }

  /**
   * A modern (2026-07-28) request: stateless — no session is looked up, minted or echoed
   * (streamable-http.mdx: an `Mcp-Session-Id` header on a request: "ignore it, and do not mint or echo
   * session IDs") — checked by checkModern, then answered like a legacy call, its result carrying
   * `resultType` and the cache hints. A notification is accepted with 202.
   */
  async #modern(
    rc: RequestContext,
    actor: BotActor,
    m: Incoming,
    sse: boolean,
    mayHoldNul: boolean,
  ): Promise<void> {
    const { res } = rc;
    if (m.kind === 'notification') {
      res.writeHead(202);
      res.end();
      return;
    }
    if (m.kind !== 'request') {
      return send(
        res,
        400,
        errorResponse(
          null,
          INVALID_REQUEST,
          'Invalid Request: the body must be one JSON-RPC request or notification',
        ),
      );
    }
    const checked = checkModern(m, rc.req.headers);
    if ('status' in checked)
      return send(res, checked.status, errorResponse(m.id, checked.code, checked.message, checked.data));
    // No session: startSession has no store to open one in (and initialize is not a modern method).
    const cc = new HttpCall(
      rc,
      actor,
      this.services,
      false,
      checked.version,
      true,
      this.#events,
      undefined,
      undefined,
      this.#listedJson,
    );
    const refused = (await this.#charge(m, 0, actor, res)) ?? this.#refuseNul(m, mayHoldNul);
    if (refused === undefined && m.method === 'subscriptions/listen') {
      let filter: ReturnType<typeof ListenHub.filterOf>;
      try {
        filter = ListenHub.filterOf(m.params);
      } catch (err) {
        const e = rpcErrorOf(err, cc.log);
        return send(res, 200, errorResponse(m.id, e.code, e.message, e.data));
      }
      return this.#listen.open(res, rc.req.socket as unknown as { server?: Server }, actor, m.id, filter);
    }
    const response = refused ?? (await this.#answer(m, cc));
    if (!sse) return send(res, 200, response);
    res.writeHead(200, SSE_HEADERS);
    res.end(sseEvent(response));
  }

  async #answer(m: Extract<Incoming, { kind: 'request' }>, cc: CallContext): Promise<string> {
    try {
      if (m.arrayParams)
        return errorResponse(m.id, INVALID_PARAMS, 'Invalid params: params must be an object');
      const json = await dispatch(m.method, m.params, cc);
      return resultRaw(m.id, cc.modern ? modernResult(m.method, json) : json);
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
    if (this.#acceptPrefs(req.headers.accept).sse === 0) {
      return refuse(res, 406, 'Not Acceptable: Accept must list text/event-stream');
    }
    const session = this.#session(rc, actor);
    if (!session || this.#legacyVersion(rc, session) === undefined) return;
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    const stream = new SseStream(res, req.socket as unknown as { server?: Server }, () => {
      if (session.stream === stream) session.stream = undefined;
    });
    const last = headerValue(req.headers, 'last-event-id');
    const from = /^o(\d+)$/.exec(last ?? '');
    // Attached first, then read: a change committed meanwhile is in the replay, or held and sent after
    // it (once: the session sends each outbox position at most once on a stream).
    session.attach(stream, from ? Number(from[1]) : 0, last !== undefined);
    if (last === undefined) return;
    let missed: StreamEvent[] = [];
    try {
      missed = await this.sessions.replay(session, last);
    } finally {
      session.resume(stream, missed);
    }
  }

  /** DELETE: ends the session (its stream closes; later requests with its id answer 404). */
  async delete(rc: RequestContext): Promise<void> {
    const actor = await this.#admit(rc);
    if (!actor) return;
    if (!this.sessions) return refuse(rc.res, 405, 'Method Not Allowed: sessions are off', { allow: 'POST' });
    const session = this.#session(rc, actor);
    if (!session || this.#legacyVersion(rc, session) === undefined) return;
    await this.sessions.end(session);
    rc.res.writeHead(204);
    rc.res.end();
  }
}
