import { z } from 'zod';
import type { Logger } from 'pino';
import { newId } from '../../domain/ids.js';
import type { ToolCallRow } from '../../storage/schema.js';
import type { Storage } from '../../storage/storage.js';
import type { Clock } from '../../runtime/clock.js';
import type { BotActor } from '../context.js';
import { loadManagedBot } from '../bots/bots.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { listOf } from '../views.js';

export type ToolCallOutcome = ToolCallRow['outcome'];

/**
 * What the audit adds to a call (never arguments or content): the grant that refused it, whether it
 * was a dry run, the surface when not MCP; for a change of a key's grants, who changed them and the
 * grants before and after.
 */
export interface ToolCallDetail {
  surface?: 'rest' | 'admin' | 'guardrail' | undefined;
  /** A key with grants: whether its grants let the call through (audit/decision.ts). */
  decision?: 'allowed' | 'refused' | 'pending_approval' | 'confirmation_asked' | 'declined' | undefined;
  /** Why a guard rail paused the key (tool key.paused). */
  reason?: string | undefined;
  grant?: string | undefined;
  dry_run?: true | undefined;
  by?: string | undefined;
  before?: unknown;
  after?: unknown;
}

/**
 * Records every MCP tools/call (bot, key, tool, outcome, error code, duration; never arguments or
 * results). Rows are buffered for at most `FLUSH_MS` (or `FLUSH_ROWS` rows) and written with one insert,
 * so that under load the audit costs a fraction of a statement per call. Listings flush first, so a
 * manager sees every finished call; the transport flushes when the server closes.
 */
const FLUSH_MS = 10;
const FLUSH_ROWS = 200;
/** Rows per insert statement, largest first (see `flush`). */
const CHUNKS = [64, 16, 4, 1] as const;

export class ToolCallRecorder {
  readonly name = 'tool-call audit';
  #pending: ToolCallRow[] = [];
  #scheduled = false;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
    private readonly clock: Clock,
  ) {}

  record(
    actor: BotActor,
    tool: string,
    outcome: ToolCallOutcome,
    errorCode: string | null,
    durationMs: number,
    detail?: ToolCallDetail,
  ): void {
    this.#pending.push({
      id: newId(),
      org_id: actor.orgId,
      bot_id: actor.botId,
      key_id: actor.keyId,
      tool: tool.slice(0, 100),
      outcome,
      error_code: errorCode,
      duration_ms: Math.round(durationMs),
      created_at: this.clock.nowIso(),
      detail: detail === undefined ? null : JSON.stringify(detail),
    });
    if (this.#pending.length >= FLUSH_ROWS) void this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(() => void this.flush(), FLUSH_MS).unref();
    }
  }

  /** Writes what is buffered before the database closes. */
  stop(): Promise<void> {
    return this.flush();
  }

  flush(): Promise<void> {
    this.#scheduled = false;
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.length === 0) return;
      const batch = this.#pending;
      this.#pending = [];
      try {
        // Chunks of a few fixed sizes: each new row count was a new statement text to prepare (and, on
        // SQLite, to work out the tables of with EXPLAIN: ~4 ms for 71 rows), several a second under
        // load (bench/notes/mcp-profile.md). Also under every dialect's parameter limit.
        for (let i = 0; i < batch.length;) {
          const n = CHUNKS.find((c) => c <= batch.length - i)!;
          await this.storage.stores.toolCalls.insertMany(batch.slice(i, i + n));
          i += n;
        }
      } catch (err) {
        this.log.error({ err, lost: batch.length }, 'could not record MCP tool calls');
      }
    });
    return this.#flushing;
  }
}

export const ToolCallView = z.object({
  id: z.string(),
  bot_id: z.string(),
  key_id: z.string(),
  tool: z.string(),
  outcome: z.enum(['ok', 'tool_error', 'protocol_error']),
  error_code: z.string().nullable(),
  duration_ms: z.number(),
  created_at: z.string(),
  detail: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('grant decision (grant), dry_run, surface; for a grants change: by, before, after'),
});
const toolCallView = (r: ToolCallRow): z.infer<typeof ToolCallView> => ({
  id: r.id,
  bot_id: r.bot_id,
  key_id: r.key_id,
  tool: r.tool,
  outcome: r.outcome,
  error_code: r.error_code,
  duration_ms: Number(r.duration_ms),
  created_at: r.created_at,
  detail:
    r.detail === null || r.detail === undefined ? null : (JSON.parse(r.detail) as Record<string, unknown>),
});

export const listToolCalls = defineOperation({
  name: 'bots.tool_calls.list',
  summary:
    "MCP tool calls of a bot you manage, newest first (the audit: tool, outcome, duration, grant decision, dry run; never arguments). Also holds REST calls its key grants refused and changes of its keys' grants (tool grants.set).",
  input: z.strictObject({
    bot_id: uuid('bot'),
    tool: z.string().max(100).optional(),
    before: z.iso.datetime({ message: 'must be an ISO-8601 timestamp' }).optional(),
    limit: limit(50, 500),
  }),
  output: listOf(ToolCallView),
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadManagedBot(stores, ctx.actor, input.bot_id);
    await ctx.services.toolCalls.flush();
    const rows = await stores.toolCalls.listForBot(bot.id, input);
    return { items: rows.map(toolCallView) };
  },
});
