import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import type {} from './test-run.js'; // the type of what setup() provides (ProvidedContext)

const ROOT = join(import.meta.dirname, '../../..');

/**
 * Builds server/dist when it is missing or older than the sources (server/bin/build-if-stale.js, as
 * `npm start` does; CI built it already). The server processes the tests start run the build
 * (helpers/server-proc.ts, `serverMain`), and the process tests run the `workroom` command on it.
 */
function ensureBuilt(): void {
  const r = spawnSync(process.execPath, [join(ROOT, 'server/bin/build-if-stale.js')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`build failed: ${r.stdout}${r.stderr}`);
}

/**
 * vitest's global setup, once per run before any test file starts: the build, and a name for this run's
 * PostgreSQL test schemas. Its teardown drops the schemas the test servers kept for reuse
 * (helpers/server.ts, `startTestServer`), and any a failed run left, of this run only: another run
 * beside it on the same database keeps its own.
 */
export default function setup(project: TestProject): () => Promise<void> {
  ensureBuilt();
  const run = randomBytes(4).toString('hex');
  project.provide('testRun', run);
  return async () => {
    const url = process.env.DATABASE_URL;
    if (!url) return;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ nspname: string }>(
        'select nspname from pg_namespace where nspname like $1',
        [`wr_test_${run}_%`],
      );
      for (const { nspname } of rows) await client.query(`drop schema if exists "${nspname}" cascade`);
    } finally {
      await client.end();
    }
  };
}
