import type { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { scopesAllow, type Scope } from '../domain/scopes.js';
import { MENTIONS_ALL_RE, toolOf, type ActiveGrants } from '../domain/grants.js';
import type { Actor, OpContext } from './context.js';
import type { Stores } from '../storage/stores/index.js';
import { burstRefusal, checkBurst, checkNotPaused, takeWriteBudgets } from './guardrails.js';
import { callDetail, GRANT_REFUSALS } from './audit/decision.js';
import { withFields } from '../domain/objects.js';

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
  /**
   * Whether it writes. Default: its scope ends in `:write`. A key whose grants say read_only cannot run
   * a writing operation, and each run spends one of the key's `writes_per_hour`.
   */
  mutates?: boolean;
  /**
   * Whether it has a dry run (docs/API.md, "Dry runs"): its writes happen in `write()` alone, with no
   * side effect before or after (files, outbound calls), so that rolling back the transaction undoes all.
   */
  dryRun?: boolean;
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

/**
 * Checks the caller kind, scope and the grants that depend on the operation alone. `confirmed`: the
 * agent's user confirmed this call (grant confirm; only the MCP transport can ask them).
 */
export function checkAccess(op: Operation, actor: Actor, dryRun = false, confirmed = false): void {
  if (!op.actors.includes(actor.kind)) {
    throw new AppError(
      'forbidden',
      actor.kind === 'bot' ? `${op.name} is not available to bots` : `${op.name} is only available to bots`,
    );
  }
  if (actor.kind === 'bot' && op.scope && !scopesAllow(actor.scopes, op.scope)) {
    throw new AppError('insufficient_scope', `This API key lacks the scope ${op.scope}`, { scope: op.scope });
  }
  if (actor.kind === 'bot' && actor.paused) checkNotPaused(op.name, actor);
  if (actor.kind === 'bot' && actor.grants) checkStaticGrants(op, actor.grants, dryRun, confirmed);
}

export const isWriting = (op: Operation): boolean =>
  op.mutates ?? (typeof op.scope === 'string' && op.scope.endsWith(':write'));

const denied = (grant: string, message: string) => new AppError('grant_denied', message, { grant });

/**
 * The grants that depend on the operation alone (tools, read_only, approval), checked next to the
 * scope, before the input is read. `dryRun`: a dry run of a tool that needs approval is allowed
 * (it does nothing; its report says that approval would be needed).
 */
export function checkStaticGrants(op: Operation, g: ActiveGrants, dryRun: boolean, confirmed = false): void {
  if (g.operations && !g.operations.has(op.name)) {
    const tool = toolOf(op.name);
    throw denied(
      'tools',
      tool
        ? `This API key is not granted the tool ${tool} (grant tools)`
        : `This API key may only call its granted tools (grant tools): ${op.name} is not one of them`,
    );
  }
  if (g.readOnly && isWriting(op))
    throw denied('read_only', 'This API key is read-only (grant read_only): it cannot write');
  if (!dryRun && g.approvalOperations.has(op.name)) {
    throw new AppError(
      'approval_required',
      `The tool ${toolOf(op.name) ?? op.name} needs approval under this API key's grants (grant approval); this path cannot hold it for approval, so nothing was done`,
      { grant: 'approval' },
    );
  }
  if (!dryRun && !confirmed && g.confirmOperations.has(op.name)) {
    throw new AppError(
      'confirmation_required',
      `The tool ${toolOf(op.name) ?? op.name} needs the agent's user to confirm each call under this API key's grants (grant confirm): only an MCP 2026-07-28 client that declares elicitation can ask them, so nothing was done`,
      { grant: 'confirm' },
    );
  }
}

/**
 * The grants that depend on the input (mentions_all), the burst rule and the write budgets
 * (guardrails.ts), checked once the input is valid. Returns a function that gives the budget tokens
 * back (when the operation then fails), or undefined when none was taken. A dry run only asks whether
 * a token is there. `done`, when given, receives what records the write in its own transaction (the
 * burst window).
 */
export async function checkInputGrants(
  op: Operation,
  ctx: OpContext,
  input: unknown,
  done?: (inWrite: (stores: Stores, now: string) => Promise<void>) => void,
): Promise<(() => Promise<void>) | undefined> {
  const { actor } = ctx;
  if (actor.kind !== 'bot' || !actor.grants) return undefined;
  const g = actor.grants;
  if (!isWriting(op)) return undefined;
  if (!g.mentionsAll && input !== null && typeof input === 'object') {
    const c = (input as { content?: unknown }).content;
    if (typeof c === 'string' && MENTIONS_ALL_RE.test(c))
      throw denied('mentions_all', 'This API key may not mention @all or @here (grant mentions_all)');
  }
  const record = await checkBurst(ctx, actor, g, op.name, input);
  if (record) done?.(record);
  return takeWriteBudgets(ctx, actor, g);
}

/**
 * Runs a checked operation (access already checked, input parsed): the input's grants and the write
 * budget, then the operation; a write that fails gives its budget token back. A dry run needs an
 * operation that has one.
 */
export async function runChecked<O>(op: Operation<z.ZodType, O>, ctx: OpContext, input: unknown): Promise<O> {
  if (ctx.dryRun && !op.dryRun)
    throw new AppError('invalid_input', `${op.name} has no dry run`, { field: 'dry_run' });
  // No grants (every user, most keys): nothing to check on the input, no budget to take or give back.
  if (ctx.actor.kind !== 'bot' || !ctx.actor.grants) return op.run(ctx, input);
  let inWrite: ((stores: Stores, now: string) => Promise<void>) | undefined;
  const giveBack = await checkInputGrants(op as Operation, ctx, input, (r) => (inWrite = r));
  // The burst rule's record of a send is written in the send's own transaction (write.ts).
  if (!giveBack && !inWrite) return op.run(ctx, input);
  try {
    return await op.run(inWrite ? withFields(ctx, { inWrite }) : ctx, input);
  } catch (err) {
    await giveBack?.().catch(() => undefined);
    throw await burstRefusal(ctx, err);
  }
}

export async function runOperation<S extends z.ZodType, O>(
  op: Operation<S, O>,
  ctx: OpContext,
  raw: unknown,
): Promise<O> {
  const { actor } = ctx;
  if (actor.kind === 'bot' && (actor.grants || actor.paused)) {
    // Audited (docs/API.md, "Agent grants"): every write, and every call the grants refuse.
    const started = performance.now();
    const audited: OpContext = withFields(ctx, { auditChange: {} });
    let writing = false;
    try {
      checkAccess(op as Operation, actor, ctx.dryRun !== undefined);
      writing = isWriting(op as Operation);
      const out = await runChecked(op, audited, parseInput(op.input, raw));
      if (writing) auditRest(audited, op.name, started, null);
      return out;
    } catch (err) {
      const refused = err instanceof AppError && GRANT_REFUSALS.has(err.code);
      if (writing || refused) auditRest(audited, op.name, started, err);
      throw err;
    }
  }
  checkAccess(op as Operation, actor, ctx.dryRun !== undefined);
  return runChecked(op, ctx, parseInput(op.input, raw));
}

/**
 * Records a REST call of a key with grants (or a paused key) in the tool-call audit, surface rest: a
 * write with its outcome and change, or a call the grants refused (audit/decision.ts).
 */
function auditRest(ctx: OpContext, operation: string, started: number, err: unknown): void {
  if (ctx.actor.kind !== 'bot') return;
  const e = err === null ? null : err instanceof AppError ? err : new AppError('internal', 'internal');
  ctx.services.toolCalls.record(
    ctx.actor,
    operation,
    e === null ? 'ok' : 'tool_error',
    e?.code ?? null,
    performance.now() - started,
    callDetail(!!ctx.actor.grants, {
      surface: 'rest',
      grant: e?.details.grant,
      dryRun: ctx.dryRun !== undefined,
      errorCode: e?.code ?? null,
      change: ctx.auditChange,
    }),
  );
}

/** What a dry run reports: the operation, its target, the result it would give, the events. */
export function dryRunReport(
  op: Operation,
  ctx: OpContext,
  input: Record<string, unknown>,
  result: unknown,
): Record<string, unknown> {
  const target: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) if (k.endsWith('_id') && typeof v === 'string') target[k] = v;
  const g = ctx.actor.kind === 'bot' ? ctx.actor.grants : null;
  return {
    dry_run: true,
    operation: op.name,
    target,
    result,
    events: ctx.dryRun?.events ?? [],
    approval_required: g?.approvalOperations.has(op.name) ?? false,
  };
}
