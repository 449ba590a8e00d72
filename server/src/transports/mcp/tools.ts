import { z } from 'zod';
import { listContainers, type ContainersView } from '../../operations/containers/list-containers.js';
import { listMessages, sendMessage } from '../../operations/messages/messages.js';
import type { Operation } from '../../operations/operation.js';
import { search, type SearchResultView } from '../../operations/search/search.js';
import { createTask, listTasks, updateTask } from '../../operations/tasks/tasks.js';
import { getUser, listUsers } from '../../operations/users/users.js';
import type { MessageView, UserView } from '../../operations/views.js';
import {
  getOwnPendingAction,
  PendingApprovalAnswer,
  type PendingActionView,
} from '../../operations/approvals/pending-actions.js';
import * as fmt from './format.js';
import { TOOL_NAME_RE } from './versions.js';
import { TOOL_OPERATIONS, type ActiveGrants, type ToolName } from '../../domain/grants.js';

/**
 * The nine tools: name → the operation its REST twin also calls, a description written for a
 * language model, and how its result reads. `inputSchema` is generated from the operation's own zod
 * input schema (the one that validates the call), once, at start.
 */
export interface Tool {
  name: string;
  op: Operation;
  description: string;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  text(result: unknown, args: Record<string, unknown>): string;
  /** Creates something: honors an idempotency key (see docs/MCP.md, "Idempotency"). */
  creates?: boolean;
  /** Listed and callable only for keys whose grants put some tool under approval (get_pending_action). */
  approvalOnly?: boolean;
  /** Its result lists messages (`{ items }`): their JSON is kept between calls (listed-json.ts). */
  listsMessages?: boolean;
}

type Items<T> = { items: T[] };
const where = (a: Record<string, unknown>) =>
  a.channel_id
    ? `channel ${a.channel_id as string}`
    : a.topic_id
      ? `topic ${a.topic_id as string}`
      : `DM room ${a.dm_room_id as string}`;
const read = (title: string) => ({ title, readOnlyHint: true, openWorldHint: false });

export const TOOLS: readonly Tool[] = [
  {
    name: 'send_message',
    op: sendMessage as Operation,
    creates: true,
    description:
      'Post a Markdown message as this bot. Give `content` and exactly one target: `channel_id`, `topic_id` or `dm_room_id` (the bot must be a member; find ids with list_channels or search). Content is at most 50,000 characters. Optional `actions`: up to 10 buttons ({type:"button", id, label, value, style?}) and selects ({type:"select", id, placeholder?, options:[{label, value}]}) users can click; each click is sent to this bot as an action.invoked webhook. Returns the new message_id. Requires scope messages:write.',
    annotations: {
      title: 'Send a message',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    },
    text: (r) => fmt.sentMessage(r as MessageView),
  },
  {
    name: 'read_messages',
    op: listMessages as Operation,
    description:
      'Read the most recent messages of one channel, topic or DM room (give exactly one of `channel_id`, `topic_id`, `dm_room_id`), newest first. `limit` defaults to 20, at most 100; `before` (ISO-8601 timestamp) pages back. Each message shows its message_id, sender and time. Requires scope messages:read.',
    annotations: read('Read messages'),
    listsMessages: true,
    text: (r, a) => fmt.messageList(where(a), (r as Items<MessageView>).items),
  },
  {
    name: 'list_channels',
    op: listContainers as Operation,
    description:
      'List the channels, projects and topics this bot can reach, with their ids. `type` is channels, projects, topics or all (default all); `project_id` lists only the topics of that project. Use the ids with read_messages, send_message and the task tools. Requires scope channels:read.',
    annotations: read('List channels, projects and topics'),
    text: (r) => fmt.containers(r as ContainersView),
  },
  {
    name: 'create_task',
    op: createTask as Operation,
    creates: true,
    description:
      'Create a task in a topic (`topic_id`, from list_channels) with a `title`; optional `description`, `priority` (low, medium, high, urgent; default medium), `assignee_id` (a user id from list_users or get_user_info) and `due_date` (YYYY-MM-DD). New tasks start with status todo. Returns the task_id. Requires scope tasks:write.',
    annotations: {
      title: 'Create a task',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    },
    text: (r) => fmt.createdTask(r as never),
  },
  {
    name: 'update_task',
    op: updateTask as Operation,
    description:
      'Change a task by `task_id`: `status` (todo, in_progress, review, done), `title`, `description`, `priority` (low, medium, high, urgent), `assignee_id` (null unassigns) and `due_date` (YYYY-MM-DD, null clears). Only the fields given change. Requires scope tasks:write.',
    annotations: {
      title: 'Update a task',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    },
    text: (r) => fmt.updatedTask(r as never),
  },
  {
    name: 'list_tasks',
    op: listTasks as Operation,
    description:
      'List the tasks of a topic (`topic_id`), newest first, with task_id, status, priority, assignee and due date. Filter with `status` (todo, in_progress, review, done, or all — the default) and `assignee_id`. Requires scope tasks:read.',
    annotations: read('List tasks'),
    text: (r, a) => fmt.taskList(a.topic_id as string, (r as Items<never>).items),
  },
  {
    name: 'search',
    op: search as Operation,
    description:
      'Full-text search across what this bot can reach: messages, users, tasks and channels. `query`: words (all must match, in any order; case and accents ignored; the last word also matches as a prefix), "quoted phrases", word* for a prefix, and filters in:#channel or in:<channel/topic/DM id>, from:@name or from:<user/bot id>, before:YYYY-MM-DD, after:YYYY-MM-DD, has:file (messages linking a file). Ranked by relevance (newer first among equals); `sort`: newest for newest first. `type` narrows it to one category (default all); `limit` is per category, default 10, at most 50. Results carry the ids to use with the other tools. Works with any API key; a search that runs out of its time budget answers an error asking to narrow it.',
    annotations: read('Search'),
    text: (r) => fmt.searchResults(r as SearchResultView),
  },
  {
    name: 'get_user_info',
    op: getUser as Operation,
    description:
      "Look up one user of this bot's organization by `user_id` or `email` (at least one). Returns id, email, display_name, role, status and department. Requires scope users:read.",
    annotations: read('Get user info'),
    text: (r) => fmt.user(r as UserView),
  },
  {
    name: 'list_users',
    op: listUsers as Operation,
    description:
      "List users of this bot's organization, by display name. Filter with `department` (partial, case-insensitive), `role` (system_admin, org_admin, dept_admin, member) and `q` (name or email contains). `limit` defaults to 50, at most 200; `offset` pages. Requires scope users:read.",
    annotations: read('List users'),
    text: (r) => fmt.userList((r as Items<UserView>).items),
  },
];

/**
 * The agent's way to learn how a call held for approval went (docs/MCP.md, "Approval"): only for keys
 * whose grants have `approval`, so every other key's list stays the nine tools.
 */
export const GET_PENDING_ACTION: Tool = {
  name: 'get_pending_action',
  op: getOwnPendingAction as Operation,
  approvalOnly: true,
  description:
    'Check a call that is waiting for a human\'s approval (a tool call answered "pending approval" with a pending_action_id): its status (pending, approved, rejected, expired, executed, failed) and, once executed, the result (e.g. the posted message). Read-only; the call itself runs once, when an approver approves it.',
  annotations: read('Get a pending action'),
  text: (r) => pendingText(r as PendingActionView),
};

/** How a pending action reads for a model. */
export function pendingText(v: PendingActionView): string {
  const head = `Pending action ${v.id} (${v.tool}: ${v.summary}) is ${v.status}`;
  switch (v.status) {
    case 'pending':
      return `${head}: waiting for a human's approval until ${v.expires_at}. Nothing was done yet; check again later with get_pending_action.`;
    case 'approved':
      return `${head} by ${v.decided_by ?? 'an approver'}: it is running now.`;
    case 'executed':
      return `${head}: approved by ${v.decided_by ?? 'an approver'} and done. Result: ${JSON.stringify(v.result)}`;
    case 'failed':
      return `${head}: approved, but it failed: ${v.error ?? 'unknown reason'}`;
    case 'rejected':
      return `${head} by ${v.decided_by ?? 'an approver'}: nothing was done. Do not retry it unchanged.`;
    default:
      return `${head}: nobody decided before ${v.expires_at}; nothing was done.`;
  }
}

export const TOOLS_BY_NAME: ReadonlyMap<string, Tool> = new Map(
  [...TOOLS, GET_PENDING_ACTION].map((t) => [t.name, t]),
);

// The grants' table of tools (domain/grants.ts) must be this one: grants are validated and enforced
// in the operation layer by it.
for (const t of TOOLS) {
  if (TOOL_OPERATIONS[t.name as ToolName] !== t.op.name)
    throw new Error(`MCP tool ${t.name} is not in domain/grants.ts TOOL_OPERATIONS as ${t.op.name}`);
}
if (Object.keys(TOOL_OPERATIONS).length !== TOOLS.length)
  throw new Error('domain/grants.ts TOOL_OPERATIONS names a tool that does not exist');

/** A writing tool: it takes `dry_run` and is hidden from a read-only key. */
export const isWritingTool = (t: Tool): boolean => !t.annotations.readOnlyHint;

// 2025-11-25 tool-name rules (versions.ts): 1–128 characters of [A-Za-z0-9_.-], unique. A tool added
// against them stops the server at start instead of reaching a client that would reject it.
for (const t of TOOLS)
  if (!TOOL_NAME_RE.test(t.name)) throw new Error(`MCP tool name "${t.name}" breaks the naming rules`);
if (TOOLS_BY_NAME.size !== TOOLS.length + 1) throw new Error('MCP tool names must be unique');

type JsonSchema = Record<string, unknown>;

/** UUID fields carry `format: uuid`; the long pattern next to it only costs a model's context. */
function trim(schema: JsonSchema): JsonSchema {
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  for (const p of Object.values(props ?? {})) {
    if (p.format === 'uuid') delete p.pattern;
    for (const alt of (p.anyOf as JsonSchema[] | undefined) ?? [])
      if (alt.format === 'uuid') delete alt.pattern;
  }
  return schema;
}

/** The `dry_run` argument every writing tool takes (decisions.md, "Agent grants"). */
export const DryRunArgument = z
  .boolean()
  .optional()
  .describe(
    'true: validate and check permissions, grants and budget, and answer what would happen (target, the message or task, the events) without writing, emitting or spending anything',
  );
const DRY_RUN_SCHEMA = (() => {
  const s = z.toJSONSchema(DryRunArgument, { io: 'input' }) as JsonSchema;
  delete s.$schema;
  return s;
})();

export function inputSchema(op: Operation, dryRun = false): JsonSchema {
  const s = z.toJSONSchema(op.input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  if (dryRun) s.properties = { ...(s.properties as JsonSchema), dry_run: DRY_RUN_SCHEMA };
  return trim(s);
}

/**
 * The tool's `outputSchema` (2025-06-18+): generated from the operation's zod `output` — the schema the
 * OpenAPI document gives its REST twin's response — on the output side. server/tools: "If an output
 * schema is provided: Servers MUST provide structured results that conform to this schema"; the
 * `structuredContent` is the operation's result itself, the REST body (handler.ts).
 */
export function outputSchema(op: Operation): JsonSchema {
  if (!op.output) throw new Error(`MCP tool operation ${op.name} has no output schema`);
  const s = z.toJSONSchema(op.output, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  return s;
}

/** What a call held for approval answers in `structuredContent` (docs/MCP.md, "Approval"). */
const PENDING_SCHEMA = (() => {
  const s = z.toJSONSchema(PendingApprovalAnswer, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  return s;
})();

/**
 * The `outputSchema` of a tool that may answer "pending approval" for this key: its own result, or
 * the pending action (so that structured results conform, server/tools).
 */
const orPending = (s: JsonSchema): JsonSchema => ({ type: 'object', anyOf: [s, PENDING_SCHEMA] });

/** The tools of tools/list, with the `outputSchema` of versions that have structured output or without. */
const toolList = (
  structured: boolean,
  tools: readonly Tool[] = TOOLS,
  approval?: ReadonlySet<string>,
  tasks = false,
) =>
  tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: inputSchema(t.op, isWritingTool(t)),
    ...(structured
      ? {
          outputSchema: approval?.has(t.name) ? orPending(outputSchema(t.op)) : outputSchema(t.op),
        }
      : {}),
    annotations: { ...t.annotations, openWorldHint: false },
    // A call this key's grants hold for approval may run as a task (2025-11-25+, tasks.ts).
    ...(tasks && approval?.has(t.name) ? { execution: { taskSupport: 'optional' } } : {}),
  }));

/** The tools/list result, serialized once per shape (2025-03-26 clients get exactly today's). */
const LIST_PLAIN = JSON.stringify({ tools: toolList(false) });
const LIST_STRUCTURED = JSON.stringify({ tools: toolList(true) });

/** Whether a key's grants let it see and call a tool (its `tools`, and `read_only` for writing tools). */
export const toolGranted = (t: Tool, g: ActiveGrants): boolean =>
  t.approvalOnly
    ? g.approval.size > 0
    : (g.tools === null || g.tools.has(t.name)) && !(g.readOnly && isWritingTool(t));

/** Lists of keys with grants, serialized once per grants (the parsed grants are shared per text). */
const GRANTED_LISTS = new WeakMap<ActiveGrants, (string | undefined)[]>();

export function toolsListJson(structured: boolean, grants?: ActiveGrants | null, tasks = false): string {
  if (!grants) return structured ? LIST_STRUCTURED : LIST_PLAIN;
  let cached = GRANTED_LISTS.get(grants);
  if (!cached) GRANTED_LISTS.set(grants, (cached = []));
  const i = (structured ? 1 : 0) + (tasks ? 2 : 0);
  return (cached[i] ??= JSON.stringify({
    tools: toolList(
      structured,
      [...TOOLS, GET_PENDING_ACTION].filter((t) => toolGranted(t, grants)),
      grants.approval,
      tasks,
    ),
  }));
}
