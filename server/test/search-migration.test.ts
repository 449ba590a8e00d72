import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrate, openPostgres, openSqlite, type DatabaseHandle } from '../src/storage/database.js';
import { Storage } from '../src/storage/storage.js';
import { SearchBudget } from '../src/storage/stores/search.js';
import { dropSchema } from './helpers/server.js';

/**
 * Migration 0002 on a database that already has messages (as on an upgrade): it indexes them, saying
 * how far it got, and search finds them afterwards; deleted ones stay out. On the suite's database.
 */
async function open(): Promise<{ handle: DatabaseHandle; done(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const schema = `wr_mig_${randomBytes(6).toString('hex')}`;
    const handle = await openPostgres(url, schema, 2);
    return { handle, done: () => handle.close().then(() => dropSchema(url, schema)) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'workroom-mig-'));
  const handle = openSqlite(join(dir, 'test.db'));
  return { handle, done: () => handle.close().then(() => rmSync(dir, { recursive: true, force: true })) };
}

describe('migration 0002 over existing data', () => {
  it('indexes the messages already there, logs progress, leaves deleted ones out', async () => {
    const { handle, done } = await open();
    try {
      expect(await migrate(handle, undefined, '0001_initial')).toEqual(['0001_initial']);
      const db = handle.db;
      const now = '2025-01-01T00:00:00.000Z';
      await db.insertInto('organizations').values({ id: 'o1', name: 'o', created_at: now }).execute();
      await db
        .insertInto('channels')
        .values({
          id: 'c1',
          org_id: 'o1',
          name: 'c',
          description: '',
          is_private: 0,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const rows = Array.from({ length: 120_000 }, (_, i) => i);
      for (let i = 0; i < rows.length; i += 2000)
        await db
          .insertInto('messages')
          .values(
            rows.slice(i, i + 2000).map((n) => ({
              id: `m${String(n).padStart(7, '0')}`,
              org_id: 'o1',
              channel_id: 'c1',
              sender_type: 'user' as const,
              sender_id: 'u1',
              content: n % 40_000 === 5 ? `Crème brûlée number ${n}` : `plain message ${n}`,
              created_at: now,
              deleted_at: n === 80_005 ? now : null,
            })),
          )
          .execute();
      const log: string[] = [];
      const applied = await migrate(handle, (m) => log.push(m));
      expect(applied).toContain('0002_search');
      expect(log).toContain('search index: indexing 120000 messages');
      expect(log.at(-1)).toMatch(/^search index: (messages|users|tasks) done$/);
      expect(log.some((l) => l.startsWith('search index: messages done'))).toBe(true);
      // A start after that finds every migration applied (one query, storage/database.ts allApplied).
      expect(await migrate(handle)).toEqual([]);
      if (handle.dialect === 'sqlite')
        expect(log.filter((l) => /messages \d+%/.test(l)).length).toBeGreaterThan(1);
      const storage = new Storage(handle);
      const found = await storage.search.messages(
        {
          orgId: 'o1',
          reach: { channelIds: ['c1'], topicIds: [], dmRoomIds: [] },
          clauses: [{ words: ['creme', 'brulee'], prefix: false }],
          candidates: 10,
        },
        new SearchBudget(10_000),
      );
      expect(found.map((m) => m.id)).toEqual(['m0040005', 'm0000005']);
      const count = await sql<{ n: number }>`select count(*) as n from messages`.execute(db);
      expect(Number(count.rows[0]!.n)).toBe(120_000);
    } finally {
      await done();
    }
  }, 120_000);
});

describe.skipIf(!process.env.DATABASE_URL)('migration 0025 (PostgreSQL)', () => {
  it('gives every search index a 64 kB pending list, so no insert moves 4 MB of entries at once', async () => {
    const { handle, done } = await open();
    try {
      await migrate(handle);
      const { rows } = await sql<{ relname: string; reloptions: string[] | null }>`
        select c.relname, c.reloptions from pg_class c
        join pg_index i on i.indexrelid = c.oid join pg_am am on am.oid = c.relam
        where am.amname = 'gin' and c.relnamespace = current_schema()::regnamespace
        order by c.relname`.execute(handle.db);
      expect(rows).toEqual(
        ['messages_search', 'tasks_search', 'users_search'].map((relname) => ({
          relname,
          reloptions: ['gin_pending_list_limit=64'],
        })),
      );
    } finally {
      await done();
    }
  });
});
