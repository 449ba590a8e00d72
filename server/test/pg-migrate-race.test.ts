import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../src/storage/database.js';
import { Storage } from '../src/storage/storage.js';
import { dropSchema } from './helpers/server.js';

/**
 * Kysely finds its migration tables with a query over every schema of the database; a schema that
 * another client drops meanwhile must not make our migration fail (seen in CI, where test files create
 * and drop schemas in parallel).
 */
describe.skipIf(!process.env.DATABASE_URL)('PostgreSQL migrations beside schemas that come and go', () => {
  it('migrate while another client creates and drops schemas', async () => {
    const url = process.env.DATABASE_URL!;
    const churn = new pg.Client({ connectionString: url });
    await churn.connect();
    let stop = false;
    const churning = (async () => {
      while (!stop) {
        const s = `wr_churn_${randomBytes(6).toString('hex')}`;
        // A schema with tables, as the other test files' servers have: dropped while Kysely reads
        // their columns, it fails that read with 42703 / 42P01 rather than 3F000 (seen in CI).
        await churn.query(`create schema "${s}"; create table "${s}".t (a int, kind text, b text)`);
        await churn.query(`drop schema "${s}" cascade`);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      for (let i = 0; i < 10; i++) {
        const schema = `wr_race_${randomBytes(6).toString('hex')}`;
        const storage = new Storage(await openPostgres(url, schema, 2));
        try {
          expect(await storage.migrate()).toContain('0001_initial');
        } finally {
          await storage.close();
          await dropSchema(url, schema);
        }
      }
    } finally {
      stop = true;
      await churning;
      await churn.end();
    }
  }, 60_000);
});
