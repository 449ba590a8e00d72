import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError, isAppError } from '../../domain/errors.js';
import {
  authenticate,
  authenticateWithChannel,
  bearerCredential,
} from '../../operations/auth/authenticate.js';
import type { Actor, PreloadedChannel, Services } from '../../operations/context.js';
import { needsApproval, requestApprovalFor } from '../../operations/approvals/pending-actions.js';
import { withIdempotency } from '../../operations/idempotency.js';
import { dryRunReport, runOperation } from '../../operations/operation.js';
import { HTTP_STATUS } from '../kit/errors.js';
import { UnauthenticatedBodies, type BodyReservation } from '../kit/body-budget.js';
import {
  camelToSnake,
  clientAddress,
  ClientGoneError,
  queryObject,
  readJsonObject,
  sendJson,
} from '../kit/io.js';
import { enforceRateLimit } from '../kit/rate-limit.js';
import { Router } from './router.js';
import { isWebPath, serveStatic } from './static.js';
import { isOpRoute, type OpRoute, type RequestContext, type Route } from './types.js';
import { withFields } from '../../domain/objects.js';

const REQUEST_ID_RE = /^[\w.:-]{1,128}$/;
/**
 * A request target of letters, digits, `_`, `-` and `/` only (every API path with its ids): `new URL`
 * would give it back unchanged as the path (no dot segments, escapes or query to normalize), so it is
 * the path, and the URL object is made only if a handler asks for it (~1 µs a request).
 */
const PLAIN_PATH_RE = /^\/[\w/-]*$/;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Answers an error in the shape of decisions.md: `{ "error": { "code", "message" } }`. */
export function sendError(rc: Pick<RequestContext, 'res' | 'log' | 'requestId'>, err: unknown): void {
  if (err instanceof ClientGoneError) {
    // Routine (a client gave up, a connection dropped): not an error of ours, and nobody to answer.
    rc.log.debug(err.message);
    rc.res.destroy();
    return;
  }
  const e = isAppError(err) ? err : new AppError('internal', 'Internal server error');
  const status = HTTP_STATUS[e.code];
  if (!isAppError(err)) rc.log.error({ err }, 'unhandled error');
  const headers: Record<string, string | number> = {};
  if (e.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
  // The rest of a body that was refused is not read: the connection cannot carry another request.
  if (e.code === 'request_timeout' || e.code === 'payload_too_large' || !rc.res.req.complete)
    headers.connection = 'close';
  if (e.details.retryAfterSeconds !== undefined)
    headers['retry-after'] = Math.ceil(e.details.retryAfterSeconds);
  const body: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.details.field !== undefined) body.field = e.details.field;
  if (e.details.scope !== undefined) body.scope = e.details.scope;
  if (e.details.grant !== undefined) body.grant = e.details.grant;
  if (e.details.paused !== undefined) {
    body.paused_at = e.details.paused.at;
    body.paused_reason = e.details.paused.reason;
  }
  if (rc.res.headersSent) {
    rc.res.destroy();
    return;
  }
  sendJson(rc.res, status, { error: body }, headers);
}

/** Authenticates the request for a route that requires it. */
export async function authenticateRequest(
  rc: RequestContext,
  need: 'user' | 'bot' | 'any',
  rateCost = 1,
): Promise<Actor> {
  return admit(
    rc,
    await authenticate(rc.services, bearerCredential(rc.req.headers.authorization)),
    need,
    rateCost,
  );
}

/** The rate limit and the kind of caller a route takes, for an authenticated actor. */
async function admit(
  rc: RequestContext,
  actor: Actor,
  need: 'user' | 'bot' | 'any',
  rateCost = 1,
): Promise<Actor> {
  await enforceRateLimit(rc.services, actor, rc.res, rateCost);
  if (need === 'user' && actor.kind !== 'user') {
    throw new AppError('forbidden', 'This endpoint takes a user token, not a bot API key');
  }
  if (need === 'bot' && actor.kind !== 'bot') {
    throw new AppError('forbidden', 'This endpoint takes a bot API key, not a user token');
  }
  rc.actor = actor;
  return actor;
}

/** The input field of each path parameter of a route (`route.params`, else the name in snake case). */
function inputField(route: OpRoute, name: string, fields: Map<string, string>): string {
  let field = fields.get(name);
  if (field === undefined) fields.set(name, (field = route.params?.[name] ?? camelToSnake(name)));
  return field;
}

async function runOpRoute(rc: RequestContext, route: OpRoute, fields: Map<string, string>): Promise<void> {
  const op = route.op;
  const need = op.actors.length === 2 ? 'any' : op.actors[0]!;
  // On a route that names its channel, the credential and the channel are read in one statement.
  const channelId = route.preloadChannel === undefined ? undefined : rc.params[route.preloadChannel];
  const credential = bearerCredential(rc.req.headers.authorization);
  const auth: { actor: Actor; channel?: PreloadedChannel } =
    channelId === undefined
      ? { actor: await authenticate(rc.services, credential) }
      : await authenticateWithChannel(rc.services, credential, channelId);
  const actor = await admit(rc, auth.actor, need, op.rateCost);
  const channel = auth.channel;
  const input: Record<string, unknown> = BODY_METHODS.has(route.method)
    ? await readJsonObject(rc.req, rc.services.config.maxBodyBytes, rc.services.config.http.bodyTimeoutMs)
    : queryObject(rc.url);
  for (const name in rc.params) input[inputField(route, name, fields)] = rc.params[name];
  const ctx = { actor, services: rc.services, requestId: rc.requestId, channel };
  // A dry run (docs/API.md, "Dry runs"): answered 200 with what would happen; no Idempotency-Key record.
  if (isDryRun(rc.req.headers['x-dry-run'])) {
    const dryRun = { events: [] };
    const dryCtx = withFields(ctx, { dryRun });
    const result = await runOperation(op, dryCtx, input);
    sendJson(rc.res, 200, dryRunReport(op, dryCtx, input, result));
    return;
  }
  // Without a key (or on a route that takes none) withIdempotency simply runs the operation.
  const key = route.idempotent ? rc.req.headers['idempotency-key'] : undefined;
  if (needsApproval(op, actor)) {
    // The key's grants hold this call for a human (docs/API.md, "Approval"): 202 with the pending action.
    const r = await withIdempotency(
      rc.services,
      actor,
      typeof key === 'string' ? key : undefined,
      { operation: op.name, input, statusOf: () => 202 },
      async (idempotency) => ({
        status: 202,
        body: {
          status: 'pending_approval',
          pending_action: await requestApprovalFor(op, withFields(ctx, { idempotency }), input),
        },
      }),
    );
    sendJson(rc.res, r.status, r.body, r.replayed ? { 'idempotent-replayed': 'true' } : {});
    return;
  }
  const statusOf = (result: unknown) => route.statusOf?.(result) ?? route.status ?? 200;
  const r = await withIdempotency(
    rc.services,
    actor,
    typeof key === 'string' ? key : undefined,
    { operation: op.name, input, statusOf },
    async (idempotency) => {
      const result = await runOperation(op, withFields(ctx, { idempotency }), input);
      return { status: statusOf(result), body: result };
    },
  );
  sendJson(rc.res, r.status, r.body, r.replayed ? { 'idempotent-replayed': 'true' } : {});
}

/** `X-Dry-Run: true` (or 1) asks for a dry run; `false`, `0` or no header: a real call; else 400. */
function isDryRun(h: string | string[] | undefined): boolean {
  if (h === undefined) return false;
  const v = (Array.isArray(h) ? h.join(',') : h).trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0' || v === '') return false;
  throw new AppError('invalid_input', 'X-Dry-Run: must be true or false', { field: 'X-Dry-Run' });
}

export interface HttpHandler {
  (req: IncomingMessage, res: ServerResponse): void;
}

export function createHttpHandler(services: Services, routes: Route[]): HttpHandler {
  const router = new Router<Route>();
  for (const r of routes) router.add(r.method, r.path, r);
  const { http } = services.config;
  const strangers = new UnauthenticatedBodies(
    {
      totalBytes: http.unauthenticatedBodyBytes,
      perAddressBytes: http.unauthenticatedBodyBytesPerAddress,
    },
    () => services.metrics.rejected('unauthenticated_body'),
  );
  const { metrics } = services;
  // Input field names of each operation route's path parameters, worked out on first use.
  const paramFields = new WeakMap<OpRoute, Map<string, string>>();
  const fieldsOf = (r: OpRoute): Map<string, string> => {
    let fields = paramFields.get(r);
    if (!fields) paramFields.set(r, (fields = new Map()));
    return fields;
  };

  return (req, res) => {
    // Nothing that happens to this request may escape as an exception: a client that resets its
    // connection makes the streams emit 'error', which without a listener would end the process.
    req.on('error', ignoreStreamError);
    res.on('error', ignoreStreamError);
    try {
      handle(req, res);
    } catch (err) {
      // A bug in the synchronous part of routing: answered like any other internal error.
      services.log.error({ err }, 'request handling failed');
      if (!res.headersSent)
        sendJson(res, 500, { error: { code: 'internal', message: 'Internal server error' } });
      else res.destroy();
    }
  };

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    const incomingId = req.headers['x-request-id'];
    const requestId =
      typeof incomingId === 'string' && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
    res.setHeader('x-request-id', requestId);
    res.setHeader('x-content-type-options', 'nosniff');
    const plain = req.url !== undefined && PLAIN_PATH_RE.test(req.url);
    const parsed: URL | null | undefined = plain ? undefined : parseRequestTarget(req.url);
    const pathname = plain ? req.url! : parsed?.pathname;
    // Metrics (docs/METRICS.md): by the route's template, never the raw path, so series stay bounded.
    let route: string = pathname === undefined ? '(invalid)' : '(unmatched)';
    if (metrics.on) {
      const t0 = performance.now();
      res.once('close', () =>
        metrics.httpRequest(
          req.method ?? '',
          route,
          res.headersSent ? res.statusCode : 0,
          (performance.now() - t0) / 1000,
        ),
      );
    }
    // The URL and the per-request child logger are made only when something asks for them.
    const rc: RequestContext = new HttpRequestContext(req, res, requestId, services, parsed);

    if (services.log.isLevelEnabled('info')) {
      res.on('finish', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        rc.log.info(
          {
            method: req.method,
            path: pathname ?? '(invalid)',
            status: res.statusCode,
            ms: Math.round(ms * 10) / 10,
          },
          'request',
        );
      });
    }
    if (pathname === undefined) {
      sendError(rc, new AppError('invalid_input', 'The request target is not a valid URL path'));
      return;
    }

    // The web app answers every path outside /api/ (static.ts).
    if (isWebPath(pathname)) {
      route = '(web)';
      return serveStatic(req, res, services.config.imageHosts);
    }

    const m = router.match(req.method ?? 'GET', pathname);
    if (m === null) {
      sendError(rc, new AppError('not_found', `No route for ${req.method} ${pathname}`));
      return;
    }
    if ('allowed' in m) {
      res.setHeader('allow', m.allowed.join(', '));
      sendError(rc, new AppError('method_not_allowed', `${req.method} is not allowed on ${pathname}`));
      return;
    }
    for (const [name, value] of Object.entries(m.params)) {
      if (value.includes('\0')) {
        sendError(
          rc,
          new AppError('invalid_input', `${name}: must not contain the NUL character`, { field: name }),
        );
        return;
      }
    }
    rc.params = m.params;
    const target = m.handler;
    route = target.path;
    if (!isOpRoute(target) && target.auth === 'none' && BODY_METHODS.has(target.method)) {
      // A body read before the caller is known counts against the strangers' budget until the answer.
      const reservation = strangers.reserve(clientAddress(req, http.trustProxy));
      rc.unauthenticatedBody = reservation;
      res.once('close', reservation.release);
    }
    const work = isOpRoute(target)
      ? runOpRoute(rc, target, fieldsOf(target))
      : (async () => {
          if (target.auth !== 'none') await authenticateRequest(rc, target.auth);
          await target.handle(rc);
        })();
    work.catch((err: unknown) => sendError(rc, err));
  }
}

const ignoreStreamError = (): void => {
  // The connection is gone (reset, time-out); the request's own handlers see it as closed.
};

/**
 * The HTTP server's `RequestContext`: its URL and child logger are made only if something asks. A
 * class, not an object literal with getters: V8 (Node 20) builds such a literal on a slow path,
 * ~1.25 µs against ~60 ns for a class instance (bench/object-spread.ts), for every request.
 */
class HttpRequestContext implements RequestContext {
  params: Record<string, string> = {};
  actor?: Actor;
  unauthenticatedBody?: BodyReservation;
  #parsed: URL | null | undefined;
  #log: Logger | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly requestId: string,
    readonly services: Services,
    /** The request target already parsed (null: not a URL), or undefined to parse when asked. */
    parsed: URL | null | undefined,
  ) {
    this.#parsed = parsed;
  }

  get url(): URL {
    return (this.#parsed ??= parseRequestTarget(this.req.url)) ?? new URL('http://localhost/');
  }

  get log(): Logger {
    return (this.#log ??= this.services.log.child({ reqId: this.requestId }));
  }
}

/**
 * The request target as a URL, or null when it is not one: origin-form (`/path?query`, any number of
 * leading slashes) or absolute-form (`http://host/path`, which HTTP/1.1 servers must accept). The host
 * of an absolute-form target is ignored. `new URL` throws on inputs such as `//`, `http://[` or
 * `http://%zz/`; such a target answers 400 instead of reaching anything else.
 */
export function parseRequestTarget(target: string | undefined): URL | null {
  if (target === undefined || target === '') return null;
  try {
    if (target.startsWith('/')) return new URL(`http://localhost${target}`);
    const abs = new URL(target);
    if (abs.protocol !== 'http:' && abs.protocol !== 'https:') return null;
    return new URL(`http://localhost${abs.pathname}${abs.search}`);
  } catch {
    return null;
  }
}
