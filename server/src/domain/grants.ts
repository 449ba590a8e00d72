import { z } from 'zod';

/**
 * Grants of a bot API key (issue 21; names in decisions.md, "Agent grants"): finer than scopes, they
 * narrow what an agent using the key may do. A key without grants (null) behaves exactly as before.
 *
 * - `tools`: the MCP tools the key may call; the others are hidden from tools/list and refused. The
 *   rule holds on REST too: the key runs only the operations behind those tools (plus `bots.auth`).
 * - `read_only`: every write is refused (mutating tools are hidden from tools/list).
 * - `containers`: ids of channels, projects, topics and DM rooms the key may read and act in (a topic
 *   is inside the grant when it or its project is named). Elsewhere it answers "not found".
 * - `writes_per_hour`: a write budget (a token bucket of that size refilled over an hour, shared by
 *   every instance on PostgreSQL).
 * - `approval`: tools whose calls need a human's approval: they become pending actions that run once
 *   approved (operations/approvals/); `approvers`: users who may approve, besides the bot's owner.
 * - `confirm`: tools whose calls the agent's own user must confirm: over MCP 2026-07-28 with a client
 *   that declares elicitation, the call answers `input_required` (a yes/no question) and runs on the
 *   retry that carries the user's yes (transports/mcp/confirm.ts); refused anywhere else.
 * - `mentions_all`: false refuses messages that mention @all or @here.
 * - `writes_per_day`: a second write budget beside writes_per_hour (a bucket refilled over a day).
 * - `pause_on`: the guard rails that pause the key (operations/guardrails.ts); with grants, both are
 *   on at their defaults unless set to false.
 */
export interface KeyGrants {
  tools?: string[] | undefined;
  read_only?: boolean | undefined;
  containers?: string[] | undefined;
  writes_per_hour?: number | undefined;
  approval?: string[] | undefined;
  /** Users who may approve (besides the bot's owner and org admins) and get the card. */
  approvers?: string[] | undefined;
  confirm?: string[] | undefined;
  mentions_all?: boolean | undefined;
  writes_per_day?: number | undefined;
  pause_on?: PauseOn | undefined;
}

/** The guard rails of a key with grants (docs/API.md, "Guard rails"). */
export interface PauseOn {
  /** Pause after this many budget refusals within the window; false: never. */
  budget?: { refusals: number; window_minutes: number } | false | undefined;
  /** Pause when the same text goes to this many distinct targets within the window; false: never. */
  burst?: { targets: number; window_minutes: number } | false | undefined;
}

/** The guard rails' defaults (a key with grants and no `pause_on`, or a rule left out of it). */
export const PAUSE_DEFAULTS = {
  budget: { refusals: 5, window_minutes: 10 },
  burst: { targets: 5, window_minutes: 10 },
} as const;

/**
 * The MCP tools and the operation each calls (transports/mcp/tools.ts checks its table against this one
 * at start). Kept here so that the operation layer can validate and enforce `tools` and `approval`
 * without knowing the MCP transport.
 */
export const TOOL_OPERATIONS = {
  send_message: 'messages.send',
  read_messages: 'messages.list',
  list_channels: 'containers.list',
  create_task: 'tasks.create',
  update_task: 'tasks.update',
  list_tasks: 'tasks.list',
  search: 'search',
  get_user_info: 'users.get',
  list_users: 'users.list',
} as const;
export type ToolName = keyof typeof TOOL_OPERATIONS;
export const TOOL_NAMES = Object.keys(TOOL_OPERATIONS) as ToolName[];

/** Operations a key with a `tools` grant may always run: who am I, and how its pending actions went. */
const ALWAYS_ALLOWED = new Set(['bots.auth', 'pending_actions.get_own']);

const toolName = z.enum(TOOL_NAMES as [ToolName, ...ToolName[]], {
  message: `must be one of ${TOOL_NAMES.join(', ')}`,
});

/** The `grants` field of POST and PATCH /api/bots/{id}/api-keys. */
export const KeyGrantsInput = z
  .strictObject({
    tools: z
      .array(toolName)
      .max(TOOL_NAMES.length * 2)
      .optional()
      .describe('MCP tools the key may call (the others are hidden and refused); omitted: every tool'),
    read_only: z.boolean().optional().describe('true: every write is refused'),
    containers: z
      .array(z.uuid({ message: 'must be a channel, project, topic or DM room id' }))
      .max(500)
      .optional()
      .describe(
        'ids of channels, projects, topics and DM rooms the key may read and act in; each must be one the bot is a member of (a project covers its topics). Omitted: everywhere the bot is',
      ),
    writes_per_hour: z
      .number({ message: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'must be at most 1000000')
      .optional()
      .describe('write budget: at most this many writes in any hour (429 write_budget_exceeded beyond)'),
    approval: z
      .array(toolName)
      .max(TOOL_NAMES.length * 2)
      .optional()
      .describe(
        'tools whose calls need a human\'s approval: a call answers pending (REST 202) and runs once approved (docs/API.md, "Approval")',
      ),
    approvers: z
      .array(z.uuid({ message: 'must be a user id' }))
      .max(20)
      .optional()
      .describe(
        "users of the organization who get the approval card and may decide, besides the bot's owner and org admins",
      ),
    confirm: z
      .array(toolName)
      .max(TOOL_NAMES.length * 2)
      .optional()
      .describe(
        "tools whose calls the agent's own user must confirm (MCP 2026-07-28 clients that declare elicitation: the call answers input_required and runs on the confirmed retry; refused on REST and older MCP versions)",
      ),
    mentions_all: z.boolean().optional().describe('false: messages mentioning @all or @here are refused'),
    writes_per_day: z
      .number({ message: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(10_000_000, 'must be at most 10000000')
      .optional()
      .describe(
        'a second write budget: at most this many writes in any day (429 write_budget_exceeded beyond)',
      ),
    pause_on: z
      .strictObject({
        budget: z
          .union([
            z.literal(false),
            z.strictObject({
              refusals: z.number().int('must be a whole number').min(1).max(1000),
              window_minutes: z.number().int('must be a whole number').min(1).max(1440),
            }),
          ])
          .optional()
          .describe(
            `pause the key after this many write_budget_exceeded refusals within window_minutes (default ${PAUSE_DEFAULTS.budget.refusals} in ${PAUSE_DEFAULTS.budget.window_minutes}); false: never`,
          ),
        burst: z
          .union([
            z.literal(false),
            z.strictObject({
              targets: z.number().int('must be a whole number').min(2).max(1000),
              window_minutes: z.number().int('must be a whole number').min(1).max(1440),
            }),
          ])
          .optional()
          .describe(
            `pause the key when the same text (normalized) is sent to this many distinct channels, topics, DM rooms or users within window_minutes (default ${PAUSE_DEFAULTS.burst.targets} in ${PAUSE_DEFAULTS.burst.window_minutes}); false: never`,
          ),
      })
      .optional()
      .describe(
        'guard rails that pause the key (refused with 403 key_paused until a manager resumes it); a key with grants has both at their defaults unless set to false',
      ),
  })
  .describe('Grants narrowing what the key may do (docs/API.md, "Agent grants"); null or omitted: none');
export type KeyGrantsInput = z.output<typeof KeyGrantsInput>;

/** The grants as shown on a key (what was stored). */
export const KeyGrantsView = z.object({
  tools: z.array(z.string()).optional(),
  read_only: z.boolean().optional(),
  containers: z.array(z.string()).optional(),
  writes_per_hour: z.number().optional(),
  approval: z.array(z.string()).optional(),
  approvers: z.array(z.string()).optional(),
  confirm: z.array(z.string()).optional(),
  mentions_all: z.boolean().optional(),
  writes_per_day: z.number().optional(),
  pause_on: z
    .object({
      budget: z
        .union([z.literal(false), z.object({ refusals: z.number(), window_minutes: z.number() })])
        .optional(),
      burst: z
        .union([z.literal(false), z.object({ targets: z.number(), window_minutes: z.number() })])
        .optional(),
    })
    .optional(),
});

/** Normalizes grants for storage: duplicates removed, empty object → null. */
export function normalizeGrants(g: KeyGrantsInput | null | undefined): KeyGrants | null {
  if (!g) return null;
  const out: KeyGrants = {};
  if (g.tools !== undefined) out.tools = [...new Set(g.tools)];
  if (g.read_only !== undefined) out.read_only = g.read_only;
  if (g.containers !== undefined) out.containers = [...new Set(g.containers)];
  if (g.writes_per_hour !== undefined) out.writes_per_hour = g.writes_per_hour;
  if (g.approval !== undefined) out.approval = [...new Set(g.approval)];
  if (g.approvers !== undefined) out.approvers = [...new Set(g.approvers)];
  if (g.confirm !== undefined) out.confirm = [...new Set(g.confirm)];
  if (g.mentions_all !== undefined) out.mentions_all = g.mentions_all;
  if (g.writes_per_day !== undefined) out.writes_per_day = g.writes_per_day;
  if (g.pause_on !== undefined) out.pause_on = { ...g.pause_on };
  return Object.keys(out).length === 0 ? null : out;
}

/**
 * Grants as the request path uses them, parsed once per stored JSON text (keys are looked up on every
 * request; a handful of distinct grant texts are live at a time).
 */
export interface ActiveGrants {
  readonly raw: KeyGrants;
  /** Allowed tools, or null for every tool. */
  readonly tools: ReadonlySet<string> | null;
  /** Operations behind the allowed tools, or null for every operation. */
  readonly operations: ReadonlySet<string> | null;
  readonly readOnly: boolean;
  readonly containers: ReadonlySet<string> | null;
  readonly writesPerHour: number | null;
  readonly approval: ReadonlySet<string>;
  /** Operations behind the tools that need approval. */
  readonly approvalOperations: ReadonlySet<string>;
  /** Operations behind the tools that the agent's user must confirm. */
  readonly confirmOperations: ReadonlySet<string>;
  readonly mentionsAll: boolean;
  readonly writesPerDay: number | null;
  /** Guard rails (operations/guardrails.ts): null when off. */
  readonly pauseOnBudget: { refusals: number; windowMs: number } | null;
  readonly pauseOnBurst: { targets: number; windowMs: number } | null;
}

const PARSED = new Map<string, ActiveGrants>();

export function activeGrants(json: string | null | undefined): ActiveGrants | null {
  if (json === null || json === undefined) return null;
  let g = PARSED.get(json);
  if (g) return g;
  const raw = JSON.parse(json) as KeyGrants;
  const ops = (names: readonly string[]) =>
    new Set(names.map((t) => TOOL_OPERATIONS[t as ToolName]).filter((o): o is never => o !== undefined));
  g = {
    raw,
    tools: raw.tools ? new Set(raw.tools) : null,
    operations: raw.tools ? new Set([...ops(raw.tools), ...ALWAYS_ALLOWED]) : null,
    readOnly: raw.read_only === true,
    containers: raw.containers ? new Set(raw.containers) : null,
    writesPerHour: raw.writes_per_hour ?? null,
    approval: new Set(raw.approval ?? []),
    approvalOperations: ops(raw.approval ?? []),
    confirmOperations: ops(raw.confirm ?? []),
    mentionsAll: raw.mentions_all !== false,
    writesPerDay: raw.writes_per_day ?? null,
    pauseOnBudget: rule(raw.pause_on?.budget, PAUSE_DEFAULTS.budget, (r) => ({
      refusals: r.refusals,
      windowMs: r.window_minutes * 60_000,
    })),
    pauseOnBurst: rule(raw.pause_on?.burst, PAUSE_DEFAULTS.burst, (r) => ({
      targets: r.targets,
      windowMs: r.window_minutes * 60_000,
    })),
  };
  if (PARSED.size >= 1000) PARSED.clear();
  PARSED.set(json, g);
  return g;
}

/** A guard rail as set (false: off; omitted: its default), in the form the request path uses. */
function rule<R, A>(set: R | false | undefined, def: R, active: (r: R) => A): A | null {
  if (set === false) return null;
  return active(set ?? def);
}

/** The tool an operation is behind, if any (for messages naming the grant). */
export function toolOf(operation: string): ToolName | undefined {
  return TOOL_NAMES.find((t) => TOOL_OPERATIONS[t] === operation);
}

/** Whether a message text mentions @all or @here (as bots/notifications.ts reads mentions). */
export const MENTIONS_ALL_RE = /(^|[^\p{L}\p{N}_])@(all|here)(?![\p{L}\p{N}_])/iu;
