import type { ToolCallRow } from '../schema.js';
import type { Executor } from './executor.js';
import { prepared } from './prepared.js';

const COLUMNS = [
  'id',
  'org_id',
  'bot_id',
  'key_id',
  'tool',
  'outcome',
  'error_code',
  'duration_ms',
  'created_at',
  'detail',
] as const satisfies readonly (keyof ToolCallRow)[];

type Value = string | number | null;

/**
 * The insert of `rows` audit rows, built and compiled once per database (stores/prepared.ts): Kysely
 * built it again for every batch, ~1 % of an MCP tools/call's profile (measured 2026-11-28).
 */
function insertOf(rows: number) {
  return prepared((db: Executor, ...values: Value[]) =>
    db
      .insertInto('tool_calls')
      .values(
        Array.from({ length: rows }, (_, r) =>
          Object.fromEntries(COLUMNS.map((c, i) => [c, values[r * COLUMNS.length + i]])),
        ) as unknown as ToolCallRow[],
      ),
  );
}
const INSERTS = new Map<number, ReturnType<typeof insertOf>>();

/** The audit of MCP tools/call: one row per call, never arguments or results (no secrets, no content). */
export class ToolCallStore {
  constructor(private readonly db: Executor) {}

  /**
   * Inserts `rows` in one statement. The caller keeps to a few row counts (operations/audit: 64, 16, 4,
   * 1): one prepared statement each.
   */
  async insertMany(rows: ToolCallRow[]): Promise<void> {
    if (rows.length === 0) return;
    let insert = INSERTS.get(rows.length);
    if (!insert) INSERTS.set(rows.length, (insert = insertOf(rows.length)));
    const values: Value[] = [];
    for (const row of rows) for (const c of COLUMNS) values.push(row[c]);
    await insert(this.db, ...values);
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
