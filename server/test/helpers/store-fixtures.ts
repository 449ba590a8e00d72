import { sql } from 'kysely';
import { newId, nowIso } from '../../src/domain/ids.js';
import type { Executor } from '../../src/storage/stores/executor.js';
import type { BotRow, MessageRow, UserRow } from '../../src/storage/schema.js';
import type { Storage } from '../../src/storage/storage.js';
import type { Database } from '../../src/storage/schema.js';
import { openTestStorage } from './storage.js';

/** An ISO time `s` seconds after a fixed instant (2030-01-01T00:00:00Z): tests pass `now` explicitly. */
export const at = (s: number): string => new Date(Date.UTC(2030, 0, 1) + s * 1000).toISOString();

/**
 * Set-up shared by the store contract files (store-contract-*.test.ts): a migrated Storage on its own
 * database (SQLite, or a fresh PostgreSQL schema with DATABASE_URL), one organization, and rows the
 * stores under test point at (users, bots, channels, messages).
 */
export async function openContractWorld() {
  const { storage, close } = await openTestStorage();
  const orgId = (await storage.stores.orgs.create('Acme')).id;
  return { storage, close, orgId, ...fixtures(storage, orgId) };
}

export const dialectName = () => (process.env.DATABASE_URL ? 'postgres' : 'sqlite');

/**
 * PostgreSQL: the entries an index has handed out so far in the current transaction (run it inside the
 * transaction whose reads it counts): whether a claim read an index in order up to its limit or all of it.
 */
export async function indexEntriesRead(db: Executor, index: string): Promise<number> {
  const read = sql<{ n: string }>`select pg_stat_get_xact_tuples_returned(${index}::regclass) as n`;
  const r = await read.execute(db);
  return Number(r.rows[0]!.n);
}

/** Empties tables whose store methods read across every row (due deliveries, claimable jobs). */
export async function clearTables(storage: Storage, tables: (keyof Database)[]): Promise<void> {
  for (const t of tables) await storage.stores.db.deleteFrom(t).execute();
}

export function fixtures(storage: Storage, orgId: string) {
  const user = async (over: Partial<UserRow> = {}): Promise<UserRow> => {
    const now = nowIso();
    const row: UserRow = {
      id: newId(),
      org_id: orgId,
      email: `${newId()}@t.local`,
      display_name: 'User',
      role: 'member',
      status: 'active',
      department_id: null,
      password_hash: 'x',
      created_at: now,
      updated_at: now,
      ...over,
    };
    await storage.stores.users.create(row);
    return row;
  };

  const bot = async (over: Partial<BotRow> = {}): Promise<BotRow> => {
    const now = nowIso();
    const row: BotRow = {
      id: newId(),
      org_id: orgId,
      type: 'custom',
      name: `b-${newId()}`,
      description: '',
      webhook_url: 'https://example.test/hook',
      events: '["message.created"]',
      created_by: null,
      status: 'active',
      builtin: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
      ...over,
    };
    await storage.stores.bots.insert(row);
    return row;
  };

  const channel = async (isPrivate = false) => {
    const now = nowIso();
    const row = {
      id: newId(),
      org_id: orgId,
      name: `c-${newId()}`,
      description: '',
      is_private: isPrivate ? 1 : 0,
      created_by: null,
      created_at: now,
      updated_at: now,
    };
    await storage.stores.containers.createChannel(row);
    return row;
  };

  const projectWithTopic = async () => {
    const now = nowIso();
    const p = {
      id: newId(),
      org_id: orgId,
      name: `p-${newId()}`,
      description: '',
      created_by: null,
      created_at: now,
      updated_at: now,
    };
    await storage.stores.containers.createProject(p);
    const t = {
      id: newId(),
      org_id: orgId,
      project_id: p.id,
      name: 't',
      created_by: null,
      created_at: now,
      updated_at: now,
    };
    await storage.stores.containers.createTopic(t);
    return { project: p, topic: t };
  };

  const message = async (
    container: { channel_id?: string; topic_id?: string; dm_room_id?: string },
    over: Partial<MessageRow> = {},
  ): Promise<MessageRow> => {
    const row: MessageRow = {
      id: newId(),
      org_id: orgId,
      channel_id: container.channel_id ?? null,
      topic_id: container.topic_id ?? null,
      dm_room_id: container.dm_room_id ?? null,
      sender_type: 'user',
      sender_id: newId(),
      bot_id: null,
      content: 'hello',
      content_html: null,
      actions: null,
      created_at: nowIso(),
      edited_at: null,
      deleted_at: null,
      ...over,
    };
    await storage.stores.messages.insert(row);
    return row;
  };

  return { user, bot, channel, projectWithTopic, message };
}
