import type { Operation } from '../../operations/operation.js';
import type { RequestContext } from '../kit/request-context.js';
import type { Method } from './router.js';

export type { RequestContext };

/** A REST route that is a thin adapter over one operation. */
export interface OpRoute {
  method: Method;
  path: string;
  op: Operation;
  /** Success status; default 200 (use 201 for creations). */
  status?: number;
  /** Success status chosen from the result (e.g. 200 for done, 202 for accepted), over `status`. */
  statusOf?: (result: unknown) => number;
  /**
   * Honors an `Idempotency-Key` header (operations/idempotency.ts): a retry with the same key and
   * input answers the first result and changes nothing again.
   */
  idempotent?: boolean;
  /** More documented answers (OpenAPI response objects by status), e.g. 202 or 409. */
  responses?: Record<string, unknown>;
  tags: string[];
  /** Maps path parameter names to input fields; default turns `botId` into `bot_id`, `id` into `id`. */
  params?: Record<string, string>;
  /**
   * A path parameter naming a channel the operation checks access to (`loadChannel` with
   * `OpContext.channel`): the channel is read with the credential, in one statement.
   */
  preloadChannel?: string;
}

/** A route with its own handler (health, login, OpenAPI, MCP, uploads, downloads, ...). */
export interface RawRoute {
  method: Method;
  path: string;
  /** none: public; user/bot/any: the caller must authenticate as such. */
  auth: 'none' | 'user' | 'bot' | 'any';
  tags: string[];
  handle(rc: RequestContext): Promise<void>;
  /** OpenAPI operation object for this route. */
  doc?: Record<string, unknown>;
}

export type Route = OpRoute | RawRoute;
export const isOpRoute = (r: Route): r is OpRoute => 'op' in r;
