import type { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { scopesAllow, type Scope } from '../domain/scopes.js';
import type { Actor, OpContext } from './context.js';

export type ActorKind = Actor['kind'];

/**
 * An operation is written once — input schema, who may call it, the scope a bot key needs, and what
 * it does — and every surface (REST, MCP, web app, built-in bots) calls it through `runOperation`.
 */
export interface Operation<S extends z.ZodType = z.ZodType, O = unknown> {
  name: string;
  summary: string;
  /** Validates the input; also the source of the OpenAPI request schema and the MCP inputSchema. */
  input: S;
  /** Describes the result, for the OpenAPI document. */
  output?: z.ZodType;
  /** Which kinds of caller may run it. `public` operations run without an actor (login). */
  actors: readonly ActorKind[];
  /** The bot key scope it needs ('any' = every key). Ignored for users. */
  scope?: Scope | 'any';
  /**
   * Tokens of the caller's rate-limit bucket one call takes (default 1). Operations whose cost grows
   * with the data (search) take more, so that a key cannot spend the server on them at the light rate.
   */
  rateCost?: number;
  run(ctx: OpContext, input: z.output<S>): Promise<O>;
}

export function defineOperation<S extends z.ZodType, O>(op: Operation<S, O>): Operation<S, O> {
  return op;
}

/** Turns zod issues into one message naming each offending field. */
export function describeIssues(error: z.ZodError): { message: string; field: string } {
  // An unknown field is reported by zod on the object holding it: name the field itself.
  const pathOf = (i: z.core.$ZodIssue): string => {
    const path = i.code === 'unrecognized_keys' && i.keys[0] !== undefined ? [...i.path, i.keys[0]] : i.path;
    return path.length > 0 ? path.join('.') : '(body)';
  };
  const first = error.issues[0];
  const field = first ? pathOf(first) : '(body)';
  const message = error.issues
    .slice(0, 5)
    .map((i) =>
      i.code === 'unrecognized_keys'
        ? i.keys.map((k) => `${[...i.path, k].join('.')}: unknown field`).join('; ')
        : `${pathOf(i)}: ${i.message}`,
    )
    .join('; ');
  return { message, field };
}

export function parseInput<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const res = schema.safeParse(raw);
  if (!res.success) {
    const { message, field } = describeIssues(res.error);
    throw new AppError('invalid_input', message, { field });
  }
  return res.data;
}

/** Checks the caller kind and scope, validates the input, and runs the operation. */
export function checkAccess(op: Operation, actor: Actor): void {
  if (!op.actors.includes(actor.kind)) {
    throw new AppError(
      'forbidden',
      actor.kind === 'bot' ? `${op.name} is not available to bots` : `${op.name} is only available to bots`,
    );
  }
  if (actor.kind === 'bot' && op.scope && !scopesAllow(actor.scopes, op.scope)) {
    throw new AppError('insufficient_scope', `This API key lacks the scope ${op.scope}`, { scope: op.scope });
  }
}

export async function runOperation<S extends z.ZodType, O>(
  op: Operation<S, O>,
  ctx: OpContext,
  raw: unknown,
): Promise<O> {
  checkAccess(op as Operation, ctx.actor);
  return op.run(ctx, parseInput(op.input, raw));
}
