import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
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

  it('PGOPTIONS reaches every connection beside the schema’s search_path, on every pooled connection', async () => {
    const url = process.env.DATABASE_URL!;
    const schema = `wr_opts_${randomBytes(6).toString('hex')}`;
    const handle = await openPostgres(url, schema, 2, true, '-c statement_timeout=12345');
    try {
      const { rows } = await sql<{ timeout: string; path: string }>`
        select current_setting('statement_timeout') as timeout, current_setting('search_path') as path`.execute(
        handle.db,
      );
      expect(rows[0]).toEqual({ timeout: '12345ms', path: `"${schema}"` });
      const pool = handle.pgPool!;
      const clients = await Promise.all([pool.connect(), pool.connect()]);
      for (const c of clients) {
        expect((await c.query('show statement_timeout')).rows[0]).toEqual({ statement_timeout: '12345ms' });
        c.release();
      }
    } finally {
      await handle.close();
      await dropSchema(url, schema);
    }
  });
});
