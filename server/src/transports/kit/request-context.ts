import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Actor, Services } from '../../operations/context.js';
import type { BodyReservation } from './body-budget.js';

/** One HTTP request as the REST routes and the MCP endpoint see it. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
  requestId: string;
  services: Services;
  log: Logger;
  /** Set once the route's authentication passed. */
  actor?: Actor;
  /**
   * On a route without authentication that takes a body: the budget its body is read under
   * (body-budget.ts); pass it to readBody / readJsonObject.
   */
  unauthenticatedBody?: BodyReservation;
}
