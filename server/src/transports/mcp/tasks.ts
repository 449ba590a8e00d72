import type { Services } from '../../operations/context.js';
import {
  cancelOwnTask,
  getOwnTask,
  listOwnTasks,
  waitOwnTask,
  type OwnTask,
} from '../../operations/approvals/tasks.js';
import type { CommittedEvents } from '../../events/committed.js';
import { INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, TRANSPORT_ERROR, type Params } from './jsonrpc.js';
import { CLIENT_CAPABILITIES_META } from './modern.js';
import { TOOLS_BY_NAME } from './tools.js';
import { hasStructuredOutput } from './versions.js';

/**
 * MCP Tasks for calls held for approval (issue 21; docs/MCP.md, "Approval"). 2025-11-25 has tasks in
 * the base protocol (basic/utilities/tasks, SEP-1686); 2026-07-28 moved them to the extension
 * `io.modelcontextprotocol/tasks`, which a request opts into by declaring it in its client
 * capabilities. A task here IS a pending action (operations/approvals/tasks.ts: the status map, the
 * wait): taskId = the pending action's id. Only the key that made the call sees its tasks (any other
 * key: "no task", -32602).
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';
/** The 2025-11-25 server capability (and the 2026-07-28 extension's settings). */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** The longest tasks/result holds its request; then -32000 "still working" (call again). */
export const RESULT_WAIT_MS = 50_000;
const PAGE = 50;

/** Base-protocol tasks: 2025-11-25 (and the modern era through its extension). */
export const hasTasks = (version: string): boolean => version >= '2025-11-25';

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Whether a tools/call asks to run as a task: its params carry `task` (an object, `ttl` a number if
 * given), and either the session speaks 2025-11-25, or the modern request's client capabilities
 * declare the extension. Otherwise the call answers as it always does (`task` ignored).
 */
export function taskRequested(params: Params, version: string, modern: boolean): boolean {
  const t = params.task;
  if (t === undefined) return false;
  if (!isObject(t))
    throw new RpcError(INVALID_PARAMS, 'Invalid params: task must be an object', { field: 'task' });
  if (t.ttl !== undefined && (typeof t.ttl !== 'number' || !(t.ttl >= 0)))
    throw new RpcError(INVALID_PARAMS, 'Invalid params: task.ttl must be a non-negative number', {
      field: 'task.ttl',
    });
  if (!modern) return hasTasks(version);
  const meta = params._meta;
  const caps = isObject(meta) ? meta[CLIENT_CAPABILITIES_META] : undefined;
  const ext = isObject(caps) && isObject(caps.extensions) ? caps.extensions[TASKS_EXTENSION] : undefined;
  return isObject(ext);
}

/** The CreateTaskResult of a held call (taskId = the pending action's id). */
export async function createTaskResult(services: Services, keyId: string, id: string): Promise<string> {
  const own = await getOwnTask(services, keyId, id);
  if (!own) throw new Error(`pending action ${id} vanished`);
  return JSON.stringify({ task: own.task });
}

/** What a task method needs from its call. */
export interface TaskCall {
  services: Services;
  orgId: string;
  keyId: string;
  version: string;
  events: CommittedEvents;
  gone?: AbortSignal | undefined;
}

const taskIdOf = (params: Params | undefined): string => {
  const id = params?.taskId;
  if (typeof id !== 'string' || id === '')
    throw new RpcError(INVALID_PARAMS, 'Invalid params: taskId must be a string', { field: 'taskId' });
  return id;
};

const notFound = (id: string) =>
  new RpcError(
    INVALID_PARAMS,
    `Invalid params: no task ${id.slice(0, 64)} (tasks are seen by the API key that made them)`,
    {
      field: 'taskId',
    },
  );

const encodeCursor = (at: { requested_at: string; id: string }) =>
  Buffer.from(JSON.stringify([at.requested_at, at.id])).toString('base64url');

function decodeCursor(c: unknown): { requested_at: string; id: string } | undefined {
  if (c === undefined) return undefined;
  try {
    if (typeof c !== 'string') throw new Error();
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(v) || typeof v[0] !== 'string' || typeof v[1] !== 'string') throw new Error();
    return { requested_at: v[0], id: v[1] };
  } catch {
    throw new RpcError(INVALID_PARAMS, 'Invalid params: cursor is not one tasks/list answered', {
      field: 'cursor',
    });
  }
}

/** The underlying CallToolResult of a terminal task, marked as the task's. */
function payloadOf(own: OwnTask, version: string): string {
  const { task } = own;
  const _meta = { [RELATED_TASK_META]: { taskId: task.taskId } };
  if (task.status === 'completed') {
    const tool = TOOLS_BY_NAME.get(own.tool);
    const text = tool ? tool.text(own.result as never, own.input as never) : JSON.stringify(own.result);
    return JSON.stringify({
      content: [{ type: 'text', text }],
      ...(hasStructuredOutput(version) && own.result !== null ? { structuredContent: own.result } : {}),
      _meta,
    });
  }
  return JSON.stringify({ content: [{ type: 'text', text: task.statusMessage }], isError: true, _meta });
}

/** tasks/get, tasks/result, tasks/list, tasks/cancel. */
export async function taskMethod(method: string, params: Params | undefined, tc: TaskCall): Promise<string> {
  if (!hasTasks(tc.version)) throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method}`);
  const { services, keyId } = tc;
  switch (method) {
    case 'tasks/get': {
      const id = taskIdOf(params);
      const own = await getOwnTask(services, keyId, id);
      if (!own) throw notFound(id);
      return JSON.stringify(own.task);
    }
    case 'tasks/result': {
      const id = taskIdOf(params);
      const own = await waitOwnTask(services, tc.events, keyId, id, RESULT_WAIT_MS, tc.gone);
      if (!own) throw notFound(id);
      const { task } = own;
      if (task.status === 'working' || task.status === 'input_required')
        throw new RpcError(
          TRANSPORT_ERROR,
          `Task ${id} is still ${task.status} (${task.statusMessage}); call tasks/result again`,
          { taskId: id, status: task.status },
        );
      return payloadOf(own, tc.version);
    }
    case 'tasks/list': {
      const after = decodeCursor(params?.cursor);
      const { tasks, next } = await listOwnTasks(services, tc.orgId, keyId, { limit: PAGE, after });
      return JSON.stringify({ tasks, ...(next ? { nextCursor: encodeCursor(next) } : {}) });
    }
    case 'tasks/cancel': {
      const id = taskIdOf(params);
      const r = await cancelOwnTask(services, keyId, id);
      if (!r) throw notFound(id);
      const { task } = r.own;
      if (!r.cancelled)
        throw new RpcError(
          INVALID_PARAMS,
          `Invalid params: task ${id} cannot be cancelled: it is ${task.status} (${task.statusMessage})`,
          { taskId: id, status: task.status },
        );
      return JSON.stringify(task);
    }
    default:
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method}`);
  }
}
