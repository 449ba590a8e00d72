import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError, isAppError } from '../../domain/errors.js';
import { authenticate, bearerCredential } from '../../operations/auth/authenticate.js';
import type { Actor, Services } from '../../operations/context.js';
import { withIdempotency } from '../../operations/idempotency.js';
import { runOperation } from '../../operations/operation.js';
import { HTTP_STATUS } from './errors.js';
import { camelToSnake, queryObject, readJsonObject, sendJson } from './io.js';
import { enforceRateLimit } from './rate-limit.js';
import { Router } from './router.js';
import { isOpRoute, type OpRoute, type RequestContext, type Route } from './types.js';

const REQUEST_ID_RE = /^[\w.:-]{1,128}$/;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Answers an error in the shape of decisions.md: `{ "error": { "code", "message" } }`. */
export function sendError(rc: Pick<RequestContext, 'res' | 'log' | 'requestId'>, err: unknown): void {
  const e = isAppError(err) ? err : new AppError('internal', 'Internal server error');
  const status = HTTP_STATUS[e.code];
  if (!isAppError(err)) rc.log.error({ err }, 'unhandled error');
  const headers: Record<string, string | number> = {};
  if (e.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
  if (e.details.retryAfterSeconds !== undefined)
    headers['retry-after'] = Math.ceil(e.details.retryAfterSeconds);
  const body: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.details.field !== undefined) body.field = e.details.field;
  if (e.details.scope !== undefined) body.scope = e.details.scope;
  if (rc.res.headersSent) {
    rc.res.destroy();
    return;
  }
  sendJson(rc.res, status, { error: body }, headers);
}

/** Authenticates the request for a route that requires it. */
export async function authenticateRequest(rc: RequestContext, need: 'user' | 'bot' | 'any'): Promise<Actor> {
  const actor = await authenticate(rc.services, bearerCredential(rc.req.headers.authorization));
  enforceRateLimit(rc.services, actor, rc.res);
  if (need === 'user' && actor.kind !== 'user') {
    throw new AppError('forbidden', 'This endpoint takes a user token, not a bot API key');
  }
  if (need === 'bot' && actor.kind !== 'bot') {
    throw new AppError('forbidden', 'This endpoint takes a bot API key, not a user token');
  }
  rc.actor = actor;
  return actor;
}

async function runOpRoute(rc: RequestContext, route: OpRoute): Promise<void> {
  const op = route.op;
  const need = op.actors.length === 2 ? 'any' : op.actors[0]!;
  const actor = await authenticateRequest(rc, need);
  const input: Record<string, unknown> = BODY_METHODS.has(route.method)
    ? await readJsonObject(rc.req, rc.services.config.maxBodyBytes)
    : queryObject(rc.url);
  for (const [name, value] of Object.entries(rc.params))
    input[route.params?.[name] ?? camelToSnake(name)] = value;
  const ctx = { actor, services: rc.services, requestId: rc.requestId };
  // Without a key (or on a route that takes none) withIdempotency simply runs the operation.
  const key = route.idempotent ? rc.req.headers['idempotency-key'] : undefined;
  const statusOf = (result: unknown) => route.statusOf?.(result) ?? route.status ?? 200;
  const r = await withIdempotency(
    rc.services,
    actor,
    typeof key === 'string' ? key : undefined,
    { operation: op.name, input, statusOf },
    async () => {
      const result = await runOperation(op, ctx, input);
      return { status: statusOf(result), body: result };
    },
  );
  sendJson(rc.res, r.status, r.body, r.replayed ? { 'idempotent-replayed': 'true' } : {});
}

export interface HttpHandler {
  (req: IncomingMessage, res: ServerResponse): void;
}

export function createHttpHandler(services: Services, routes: Route[]): HttpHandler {
  const router = new Router<Route>();
  for (const r of routes) router.add(r.method, r.path, r);

  return (req, res) => {
    const started = process.hrtime.bigint();
    const incomingId = req.headers['x-request-id'];
    const requestId =
      typeof incomingId === 'string' && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
    res.setHeader('x-request-id', requestId);
    res.setHeader('x-content-type-options', 'nosniff');
    const url = new URL(req.url ?? '/', 'http://localhost');
    let log: Logger | undefined; // the per-request child logger is made only when something logs
    const rc: RequestContext = {
      req,
      res,
      url,
      params: {},
      requestId,
      services,
      get log() {
        return (log ??= services.log.child({ reqId: requestId }));
      },
    };

    if (services.log.isLevelEnabled('info')) {
      res.on('finish', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        rc.log.info(
          { method: req.method, path: url.pathname, status: res.statusCode, ms: Math.round(ms * 10) / 10 },
          'request',
        );
      });
    }

    const m = router.match(req.method ?? 'GET', url.pathname);
    if (m === null) {
      sendError(rc, new AppError('not_found', `No route for ${req.method} ${url.pathname}`));
      return;
    }
    if ('allowed' in m) {
      res.setHeader('allow', m.allowed.join(', '));
      sendError(rc, new AppError('method_not_allowed', `${req.method} is not allowed on ${url.pathname}`));
      return;
    }
    rc.params = m.params;
    const route = m.handler;
    const work = isOpRoute(route)
      ? runOpRoute(rc, route)
      : (async () => {
          if (route.auth !== 'none') await authenticateRequest(rc, route.auth);
          await route.handle(rc);
        })();
    work.catch((err: unknown) => sendError(rc, err));
  };
}
