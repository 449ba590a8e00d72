import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgres, openSqlite } from '../../src/storage/database.js';
import { Storage } from '../../src/storage/storage.js';
import { dropSchema } from './server.js';

/** A migrated Storage on its own database: SQLite file, or a fresh schema when DATABASE_URL is set. */
export async function openTestStorage(): Promise<{ storage: Storage; close(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const schema = `wr_store_${randomBytes(6).toString('hex')}`;
    const storage = new Storage(await openPostgres(url, schema, 4));
    await storage.migrate();
    return {
      storage,
      async close() {
        await storage.close();
        await dropSchema(url, schema);
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'workroom-store-'));
  const storage = new Storage(openSqlite(join(dir, 'test.db')));
  await storage.migrate();
  return {
    storage,
    async close() {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
