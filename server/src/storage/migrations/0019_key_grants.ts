import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Agent grants (issue 21): a bot API key's grants as JSON (domain/grants.ts; null = none, the key
 * behaves as before), and on the tool-call audit a JSON detail of the call's grant decision, dry-run
 * flag, or a grant change's before and after.
 */
export async function up(db: Db, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('bot_api_keys').addColumn('grants', 'text').execute();
  await db.schema.alterTable('tool_calls').addColumn('detail', 'text').execute();
}
