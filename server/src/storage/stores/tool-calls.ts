import type { ToolCallRow } from '../schema.js';
import type { Executor } from './executor.js';

/** The audit of MCP tools/call: one row per call, never arguments or results (no secrets, no content). */
export class ToolCallStore {
  constructor(private readonly db: Executor) {}

  async insertMany(rows: ToolCallRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.insertInto('tool_calls').values(rows).execute();
  }

  /** Newest first; `before` pages back by created_at. */
  listForBot(
    botId: string,
    f: { limit: number; before?: string | undefined; tool?: string | undefined },
  ): Promise<ToolCallRow[]> {
    let q = this.db.selectFrom('tool_calls').selectAll().where('bot_id', '=', botId);
    if (f.before) q = q.where('created_at', '<', f.before);
    if (f.tool) q = q.where('tool', '=', f.tool);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  }
}
