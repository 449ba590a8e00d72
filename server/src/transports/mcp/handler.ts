import type { Logger } from 'pino';
import { withIdempotency } from '../../operations/idempotency.js';
import {
  checkAccessForApproval,
  needsApproval,
  requestApproval,
  type PendingActionView,
} from '../../operations/approvals/pending-actions.js';
import type { z } from 'zod';
import { AppError, isAppError } from '../../domain/errors.js';
import type { ToolCallOutcome } from '../../operations/audit/tool-calls.js';
import { callDetail, type AuditChange } from '../../operations/audit/decision.js';
import type { BotActor, OpContext, Services } from '../../operations/context.js';
import { checkAccess, dryRunReport, runChecked } from '../../operations/operation.js';
import {
  GRANT_DENIED,
  INSUFFICIENT_SCOPE,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  RpcError,
  type Params,
} from './jsonrpc.js';
import { listResources, readResource, RESOURCE_TEMPLATES_JSON } from './resources.js';
import { discoverResult } from './modern.js';
import { confirmation, ConfirmationSigner } from './confirm.js';
import { isWritingTool, toolGranted, toolsListJson, TOOLS_BY_NAME } from './tools.js';
import { hasStructuredOutput, isLegacyVersion, LATEST_LEGACY } from './versions.js';
import type { CommittedEvents } from '../../events/committed.js';
import type { ListedMessageJson } from './listed-json.js';
import {
  createTaskResult,
  hasTasks,
  taskMethod,
  taskRequested,
  TASKS_CAPABILITY,
  TASKS_EXTENSION,
} from './tasks.js';

/** What a method handler needs: who calls, the services, and the session (when sessions are on). */
export interface CallContext {
  actor: BotActor;
  services: Services;
  requestId: string;
  log: Logger;
  inBatch: boolean;
  /**
   * The protocol version governing this request: the session's negotiated one, the
   * MCP-Protocol-Version header's without sessions, or the modern request's `_meta` one.
   */
  version: string;
  /** A modern (2026-07-28, stateless) request: server/discover exists, initialize does not. */
  modern?: boolean;
  /** The request's Idempotency-Key header (only for a single, non-batch message). */
  idempotencyKey?: string | undefined;
  /** Every instance's committed events (tasks/result waits on them); the bus when not given. */
  events?: CommittedEvents;
  /** Aborted when the client went away (a waiting tasks/result stops waiting). */
  gone?: AbortSignal;
  /** Called by a successful initialize with the negotiated version (the transport opens a session). */
  startSession(protocolVersion: string): void;
  /** The endpoint's kept JSON of listed messages (listed-json.ts); without it, serialized each time. */
  listedJson?: ListedMessageJson;
}

const SERVER_INFO = { name: 'workroom', title: 'Workroom', version: '0.1.0' };
const INSTRUCTIONS =
  'Workroom is a work-collaboration server (channels, projects with topics, DM rooms, messages, tasks, users). ' +
  'You act as a bot and reach only the channels, projects and DM rooms the bot was added to. ' +
  'Start with list_channels or search to find ids, then read_messages / send_message for conversations and ' +
  'list_tasks / create_task / update_task for tasks in a topic. Every result names the ids you need next. ' +
  'A tool refused for a missing API-key scope answers error -32003 naming the scope; one the key is not granted, -32004 naming the grant. ' +
  'Writing tools take dry_run: true to see what a call would do without doing it.';

/**
 * server/discover (2026-07-28; versioning.mdx: "Servers MUST implement server/discover"): every
 * version we serve, our capabilities (resources' list changes, delivered on subscriptions/listen;
 * listen.ts), the server info and the instructions. The same for every caller.
 */
const DISCOVER_JSON = discoverResult(
  {
    tools: { listChanged: false },
    resources: { subscribe: false, listChanged: true },
    extensions: { [TASKS_EXTENSION]: TASKS_CAPABILITY },
  },
  SERVER_INFO,
  INSTRUCTIONS,
);

/**
 * Negotiation at `initialize` (lifecycle, 2025-03-26 to 2025-11-25): "If the server supports the
 * requested protocol version, it MUST respond with the same version. Otherwise, the server MUST
 * respond with another protocol version it supports." A legacy version we speak is echoed; any other
 * (unknown, or the modern 2026-07-28, which has no handshake) gets our latest legacy version, never an
 * error.
 */
export function negotiate(requested: string): string {
  return isLegacyVersion(requested) ? requested : LATEST_LEGACY;
}

/** The operation context of a call, with `extra` fields (properties first: see domain/objects.ts). */
const opContext = (cc: CallContext, extra?: Partial<OpContext>): OpContext => ({
  actor: cc.actor,
  services: cc.services,
  requestId: cc.requestId,
  ...extra,
});

/** Rate-limit tokens one request costs: its tool's `rateCost` for tools/call, else 1. */
export function rateCostOf(method: string, params: Params | undefined): number {
  if (method !== 'tools/call' || typeof params?.name !== 'string') return 1;
  return TOOLS_BY_NAME.get(params.name)?.op.rateCost ?? 1;
}

/** Answers one request: the result as JSON text, or throws RpcError. */
export async function dispatch(method: string, params: Params | undefined, cc: CallContext): Promise<string> {
  switch (method) {
    case 'tools/call':
      return callTool(params, cc);
    case 'tools/list':
      return toolsListJson(hasStructuredOutput(cc.version), cc.actor.grants, hasTasks(cc.version));
    case 'tasks/get':
    case 'tasks/result':
    case 'tasks/list':
    case 'tasks/cancel':
      return taskMethod(method, params, {
        services: cc.services,
        orgId: cc.actor.orgId,
        keyId: cc.actor.keyId,
        version: cc.version,
        events: cc.events ?? cc.services.bus,
        gone: cc.gone,
      });
    case 'ping':
      return '{}';
    case 'initialize':
      return initialize(params, cc);
    case 'server/discover':
      if (!cc.modern) throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method}`);
      return DISCOVER_JSON;
    case 'resources/list':
      return JSON.stringify(await listResources(opContext(cc)));
    case 'resources/read':
      return JSON.stringify(await readResource(opContext(cc), params));
    case 'resources/templates/list':
      return RESOURCE_TEMPLATES_JSON;
    default:
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method.slice(0, 100)}`);
  }
}

function initialize(params: Params | undefined, cc: CallContext): string {
  if (cc.inBatch)
    throw new RpcError(INVALID_REQUEST, 'Invalid Request: initialize must not be part of a batch');
  const requested = params?.protocolVersion;
  if (typeof requested !== 'string') {
    throw new RpcError(INVALID_PARAMS, 'Invalid params: protocolVersion must be a string', {
      field: 'protocolVersion',
    });
  }
  const caps = params?.capabilities;
  if (caps !== undefined && (caps === null || typeof caps !== 'object' || Array.isArray(caps))) {
    throw new RpcError(INVALID_PARAMS, 'Invalid params: capabilities must be an object', {
      field: 'capabilities',
    });
  }
  const protocolVersion = negotiate(requested);
  cc.startSession(protocolVersion);
  const sessions = cc.services.config.mcp.sessions;
  return JSON.stringify({
    protocolVersion,
    capabilities: {
      tools: { listChanged: false },
      resources: { subscribe: false, listChanged: sessions },
      // Calls held for approval answer as tasks when asked (tasks.ts).
      ...(hasTasks(protocolVersion) ? { tasks: TASKS_CAPABILITY } : {}),
    },
    serverInfo: SERVER_INFO,
    instructions: INSTRUCTIONS,
  });
}

/** Issues that say "over a limit" (too long, too many, too small) are tool errors; the rest are -32602. */
const LIMIT_ISSUES = new Set(['too_big', 'too_small']);

function describeArgs(
  issues: readonly z.core.$ZodIssue[],
  args: Record<string, unknown>,
): { message: string; field: string } {
  const parts: string[] = [];
  let field = '';
  for (const i of issues.slice(0, 5)) {
    if (i.code === 'unrecognized_keys') {
      for (const k of i.keys) parts.push(`${k}: unknown argument`);
      field ||= i.keys[0] ?? '';
      continue;
    }
    const path = i.path.join('.');
    const missing = i.code === 'invalid_type' && i.path.length === 1 && !(String(i.path[0]) in args);
    parts.push(`${path || '(arguments)'}: ${missing ? 'is required' : i.message}`);
    field ||= path;
  }
  return { message: parts.join('; '), field };
}

/**
 * A tools/call result. From 2025-06-18 a successful one also carries `structuredContent` (the
 * operation's result, which its `outputSchema` describes); server/tools: "For backwards
 * compatibility, a tool that returns structured content SHOULD also return the serialized JSON in a
 * TextContent block" — ours keeps its text for a model instead (docs/MCP.md, "Result format").
 */
const toolResult = (
  text: string,
  isError: boolean,
  structured?: unknown,
  listed?: ListedMessageJson,
): string =>
  listed !== undefined && !isError && structured !== undefined
    ? // The same bytes as below, with the listed messages' JSON kept between calls (listed-json.ts).
      `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${listed.list(structured)}}`
    : JSON.stringify(
        isError
          ? { content: [{ type: 'text', text }], isError: true }
          : structured === undefined
            ? { content: [{ type: 'text', text }] }
            : { content: [{ type: 'text', text }], structuredContent: structured },
      );

/**
 * A dry run's result: the text says it was one, the `structuredContent` (2025-06-18+) is the result the
 * call would have given (so it validates against the tool's outputSchema), and the result's `_meta`
 * holds the report (target, events, whether approval would be needed).
 */
const dryRunResult = (text: string, report: Record<string, unknown>, structured?: unknown): string => {
  const events = (report.events as string[]).join(', ') || 'none';
  const note =
    `DRY RUN: nothing was written, emitted or spent. Had this been a real call: ${text}\n` +
    `Events that would fire: ${events}.` +
    (report.approval_required
      ? " This tool needs approval under the key's grants: the real call would wait for a human as a pending action."
      : '');
  return JSON.stringify({
    content: [{ type: 'text', text: note }],
    ...(structured === undefined ? {} : { structuredContent: structured }),
    _meta: { 'workroom/dry_run': report },
  });
};

/**
 * A call held for approval (docs/MCP.md, "Approval"): a normal result (not isError) whose text says it
 * waits and names the pending action; from 2025-06-18 its `structuredContent` is
 * `{status: "pending_approval", pending_action}` (the tool's outputSchema for such a key allows it),
 * and `_meta` carries the same for every version.
 */
const pendingResult = (view: PendingActionView, structured: boolean): string => {
  const answer = { status: 'pending_approval', pending_action: view };
  return JSON.stringify({
    content: [
      {
        type: 'text',
        text: `PENDING APPROVAL: this call was not run. It waits for a human's approval as pending action ${view.id} (${view.summary}), until ${view.expires_at}. Once approved it runs exactly once; check its outcome with get_pending_action {"pending_action_id": "${view.id}"}.`,
      },
    ],
    ...(structured ? { structuredContent: answer } : {}),
    _meta: { 'workroom/pending_action': view },
  });
};

const AUDIT_CODE: Record<number, string> = {
  [INVALID_PARAMS]: 'invalid_params',
  [INSUFFICIENT_SCOPE]: 'insufficient_scope',
  [GRANT_DENIED]: 'grant_denied',
  [INTERNAL_ERROR]: 'internal',
};

/**
 * The idempotency key of a call: `_meta.idempotency_key` in the call's params, else the HTTP
 * Idempotency-Key header of a single (non-batch) request.
 */
function idempotencyKeyOf(params: Params, cc: CallContext): string | undefined {
  const meta = (params as { _meta?: unknown })._meta;
  const fromMeta =
    meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>).idempotency_key : undefined;
  if (fromMeta !== undefined && typeof fromMeta !== 'string') {
    throw new AppError('invalid_input', '_meta.idempotency_key: must be a string', {
      field: '_meta.idempotency_key',
    });
  }
  return fromMeta ?? (cc.inBatch ? undefined : cc.idempotencyKey);
}

async function callTool(params: Params | undefined, cc: CallContext): Promise<string> {
  const started = performance.now();
  const name = params?.name;
  let outcome: ToolCallOutcome = 'ok';
  let errorCode: string | null = null;
  let dryRun = false;
  /** The key grant that refused the call, for the audit. */
  let grant: string | undefined;
  /** What an update changes, noted for the audit of a key with grants (audit/decision.ts). */
  const auditChange: AuditChange | undefined = cc.actor.grants ? {} : undefined;
  try {
    if (typeof name !== 'string') {
      throw new RpcError(INVALID_PARAMS, 'Invalid params: name must be a string (the tool to call)', {
        field: 'name',
      });
    }
    const tool = TOOLS_BY_NAME.get(name);
    if (!tool) {
      throw new RpcError(INVALID_PARAMS, `Invalid params: unknown tool "${name.slice(0, 100)}"`, {
        field: 'name',
      });
    }
    const args = params!.arguments ?? {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new RpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object', {
        field: 'arguments',
      });
    }
    // A task-augmented call (tasks.ts): a call held for approval answers its task instead.
    const asTask = taskRequested(params!, cc.version, cc.modern === true);
    const grants = cc.actor.grants;
    if (tool.approvalOnly && !(grants && grants.approval.size > 0)) {
      throw new RpcError(INVALID_PARAMS, `Invalid params: unknown tool "${name}"`, { field: 'name' });
    }
    if (grants && !toolGranted(tool, grants)) {
      grant = grants.tools !== null && !grants.tools.has(name) ? 'tools' : 'read_only';
      throw new RpcError(
        GRANT_DENIED,
        grant === 'tools'
          ? `Tool ${name} is not granted to this API key (grant tools)`
          : `Tool ${name} writes and this API key is read-only (grant read_only)`,
        { grant, tool: name },
      );
    }
    let callArgs = args as Record<string, unknown>;
    if (isWritingTool(tool) && 'dry_run' in callArgs) {
      const { dry_run: flag, ...rest } = callArgs;
      if (typeof flag !== 'boolean')
        throw new RpcError(INVALID_PARAMS, `Invalid arguments for tool ${name}: dry_run: must be a boolean`, {
          field: 'dry_run',
        });
      dryRun = flag;
      callArgs = rest;
    }
    // A call held for a human's approval (grant approval) is checked like a dry run, then stored.
    const held = !dryRun && needsApproval(tool.op, cc.actor);
    // Confirmation by the agent's user (grant confirm) is asked last: only of a call that would run.
    const needsConfirm = !dryRun && !held && grants != null && grants.confirmOperations.has(tool.op.name);
    if (held) checkAccessForApproval(tool.op, cc.actor);
    else checkAccess(tool.op, cc.actor, dryRun, needsConfirm);
    const parsed = tool.op.input.safeParse(callArgs);
    if (!parsed.success) {
      const { message, field } = describeArgs(parsed.error.issues, args as Record<string, unknown>);
      if (parsed.error.issues.every((i) => LIMIT_ISSUES.has(i.code))) {
        throw new AppError('invalid_input', message, { field });
      }
      throw new RpcError(INVALID_PARAMS, `Invalid arguments for tool ${name}: ${message}`, { field });
    }
    if (held) {
      grant = 'approval';
      const key = tool.creates ? idempotencyKeyOf(params!, cc) : undefined;
      const { body } = await withIdempotency(
        cc.services,
        cc.actor,
        key,
        { operation: tool.op.name, input: args },
        async (idempotency) => ({
          status: 200,
          body: await requestApproval(tool.op, opContext(cc, { idempotency }), parsed.data),
        }),
      );
      // Not an error: the call waits for a human (the audit's detail says so).
      errorCode = 'pending_approval';
      if (asTask) return createTaskResult(cc.services, cc.actor.keyId, (body as PendingActionView).id);
      return pendingResult(body as PendingActionView, hasStructuredOutput(cc.version));
    }
    if (needsConfirm) {
      grant = 'confirm';
      const c = confirmation(
        new ConfirmationSigner(cc.services.encryptionKey),
        params!,
        cc.modern === true,
        cc.actor.keyId,
        name,
        callArgs,
        cc.services.clock.now(),
      );
      if (c.kind === 'ask') {
        // Not an error: the call waits for the user's answer (the audit's detail says so).
        errorCode = 'input_required';
        return c.result;
      }
      if (c.kind === 'declined') {
        outcome = 'tool_error';
        errorCode = 'declined';
        return toolResult(
          `Declined: the agent's user did not confirm this call (${c.action}); nothing was done`,
          true,
        );
      }
    }
    if (dryRun) {
      const ctx = opContext(cc, { dryRun: { events: [] }, auditChange });
      const value = await runChecked(tool.op, ctx, parsed.data);
      const report = dryRunReport(tool.op, ctx, callArgs, value);
      return dryRunResult(
        tool.text(value, parsed.data as Record<string, unknown>),
        report,
        hasStructuredOutput(cc.version) ? value : undefined,
      );
    }
    const key = tool.creates ? idempotencyKeyOf(params!, cc) : undefined;
    // Without a key (reads, and most sends) the operation runs directly: withIdempotency would only
    // wrap it in two more async functions and result objects.
    const value =
      key === undefined
        ? await runChecked(tool.op, opContext(cc, { auditChange }), parsed.data)
        : (
            await withIdempotency(
              cc.services,
              cc.actor,
              key,
              { operation: tool.op.name, input: args },
              async (idempotency) => ({
                status: 200,
                body: await runChecked(tool.op, opContext(cc, { idempotency, auditChange }), parsed.data),
              }),
            )
          ).body;
    return toolResult(
      tool.text(value, parsed.data as Record<string, unknown>),
      false,
      hasStructuredOutput(cc.version) ? value : undefined,
      tool.listsMessages ? cc.listedJson : undefined,
    );
  } catch (err) {
    if (err instanceof RpcError) {
      outcome = 'protocol_error';
      errorCode = AUDIT_CODE[err.code] ?? String(err.code);
      throw err;
    }
    if (isAppError(err) && err.code !== 'internal') {
      if (err.code === 'insufficient_scope') {
        outcome = 'protocol_error';
        errorCode = 'insufficient_scope';
        throw new RpcError(INSUFFICIENT_SCOPE, err.message, { scope: err.details.scope });
      }
      outcome = 'tool_error';
      errorCode = err.code;
      grant = err.details.grant;
      return toolResult(`Error (${err.code}): ${err.message}`, true);
    }
    outcome = 'protocol_error';
    errorCode = 'internal';
    cc.log.error({ err, tool: name }, 'MCP tool failed');
    throw new RpcError(INTERNAL_ERROR, 'Internal error');
  } finally {
    const ms = performance.now() - started;
    cc.services.toolCalls.record(
      cc.actor,
      typeof name === 'string' ? name : '(missing)',
      outcome,
      errorCode,
      ms,
      callDetail(!!cc.actor.grants, { grant, dryRun, errorCode, change: auditChange }),
    );
    // By the tools table's names only (an unknown name is not a label value: series stay bounded).
    cc.services.metrics.mcpToolCall(
      typeof name === 'string' && TOOLS_BY_NAME.has(name) ? name : '(unknown)',
      isLegacyVersion(cc.version) ? 'legacy' : 'modern',
      outcome === 'ok' ? 'ok' : outcome === 'tool_error' ? 'is_error' : 'protocol_error',
      ms / 1000,
    );
  }
}

/** Maps an error of a non-tool method (resources) to JSON-RPC. */
export function rpcErrorOf(err: unknown, log: Logger): RpcError {
  if (err instanceof RpcError) return err;
  if (isAppError(err)) {
    if (err.code === 'insufficient_scope')
      return new RpcError(INSUFFICIENT_SCOPE, err.message, { scope: err.details.scope });
    if (err.code === 'invalid_input')
      return new RpcError(INVALID_PARAMS, `Invalid params: ${err.message}`, { field: err.details.field });
    if (err.code === 'grant_denied')
      return new RpcError(GRANT_DENIED, err.message, { grant: err.details.grant });
    if (err.code === 'key_paused')
      return new RpcError(GRANT_DENIED, err.message, {
        paused_at: err.details.paused?.at,
        paused_reason: err.details.paused?.reason,
      });
    if (err.code !== 'internal') return new RpcError(INTERNAL_ERROR, err.message);
  }
  log.error({ err }, 'MCP request failed');
  return new RpcError(INTERNAL_ERROR, 'Internal error');
}
