import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { migrate, openDatabase } from '../../src/storage/database.js';
import { testRun } from './test-run.js';

export const ADMIN_EMAIL = 'admin@test.local';
export const ADMIN_PASSWORD = 'admin-password-1';

/**
 * scrypt's cost for the passwords test servers hash: 1 MiB and ~2 ms, where the server's own
 * (PASSWORD_COST) takes 16 MiB and ~40 ms of one core. Some 1,300 hashes and sign-ins a run cost ~50 s
 * of CPU per database that way. Verifying reads the cost from each hash, so it is the same code. The
 * sign-in flood test (hardening-login) passes PASSWORD_COST; ops-safe-start checks that a server process
 * hashes with it.
 */
export const TEST_PASSWORD_COST = { N: 1024, r: 8, p: 1 };

/**
 * A real Workroom server on a random port with its own database: a fresh SQLite file, or, when
 * DATABASE_URL points at PostgreSQL, a uniquely named schema that is dropped afterwards.
 */
export interface TestServer {
  url: string;
  app: RunningApp;
  dialect: 'sqlite' | 'postgres';
  /** Stops the server and removes its database. */
  close(): Promise<void>;
  /**
   * Stops the server (graceful, as on SIGTERM) and starts a new one in this process on the same port,
   * database and options (the same clock); `whileDown` runs in between, e.g. to move a test clock
   * through the time the server was not running. `app` is the new server afterwards.
   */
  restart(whileDown?: () => void | Promise<void>): Promise<void>;
}

/**
 * A SQLite database file with every migration applied, made once per test process: each new SQLite
 * test server starts from a copy instead of migrating a new file (about 300 ms of CPU and 0.8 s each
 * under CI load, for some 150 servers a run). The migrations themselves still run here, in every
 * worker, and on PostgreSQL for every test server; search-migration and pg-migrate-race test them over
 * existing data, and the process tests (cli-start, ops-safe-start) start empty data directories.
 */
let migratedSqlite: Promise<string> | undefined;
function migratedSqliteTemplate(): Promise<string> {
  migratedSqlite ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workroom-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'workroom.db');
    const handle = await openDatabase({ kind: 'sqlite', file });
    try {
      await migrate(handle);
    } finally {
      await handle.close(); // the last connection's close checkpoints the WAL into the file
    }
    return file;
  })();
  return migratedSqlite;
}

/**
 * PostgreSQL schemas of closed test servers, emptied, that the next test server of this process takes
 * instead of a new one: a new schema cost ~1 s of CPU to migrate (most of it PostgreSQL's, the DDL of
 * every migration), emptying one a fraction of that. A schema goes back only when no other instance
 * used it (`sameDatabaseAs`) and it emptied cleanly; the run's global teardown drops them
 * (helpers/global-setup.ts). The migrations still run on the first schema of each test process, and
 * pg-migrate-race and search-migration test them on PostgreSQL.
 */
const emptiedSchemas: string[] = [];
const sharedSchemas = new Set<string>();

export async function startTestServer(
  env: Record<string, string> = {},
  /**
   * Passed to startApp: e.g. a jobHandler, or `clock`, a TestClock (server/src/runtime/clock.ts) the
   * test moves instead of waiting for real time (the only way to set a server's clock: in process).
   */
  appOptions: Parameters<typeof startApp>[1] = {},
): Promise<TestServer> {
  const options = { passwordCost: TEST_PASSWORD_COST, ...appOptions };
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-test-'));
  const pgUrl = process.env.DATABASE_URL;
  const run = pgUrl ? testRun() : undefined;
  const schema = pgUrl
    ? ((env.WORKROOM_DATABASE_SCHEMA ? undefined : emptiedSchemas.pop()) ??
      `wr_test_${run ? `${run}_` : ''}${randomBytes(6).toString('hex')}`)
    : undefined;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    WORKROOM_DATA_DIR: dataDir,
    WORKROOM_ADMIN_EMAIL: ADMIN_EMAIL,
    WORKROOM_ADMIN_PASSWORD: ADMIN_PASSWORD,
    WORKROOM_LOG_LEVEL: process.env.WORKROOM_TEST_LOG_LEVEL ?? 'silent',
    WORKROOM_DATABASE_POOL_SIZE: '4',
    // Rate limits are off unless a test turns them on (rate-limit tests pass their own values).
    WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
    WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
    // Metrics off (the default port would be shared by every test server); metrics tests turn them on.
    WORKROOM_METRICS_PORT: '0',
    ...(pgUrl ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema! } : {}),
    ...env,
  });
  let app: RunningApp;
  try {
    if (config.database.kind === 'sqlite' && !existsSync(config.database.file))
      copyFileSync(await migratedSqliteTemplate(), config.database.file);
    app = await startApp(config, options);
  } catch (err) {
    // A server that failed to start leaves nothing behind either.
    if (pgUrl && schema) await dropSchema(pgUrl, schema).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const srv: TestServer = {
    url: app.url,
    app,
    dialect: app.services.storage.dialect,
    async close() {
      await srv.app.close();
      if (pgUrl && schema) {
        const used = srv.app.services.config.database;
        const ownSchema = used.kind === 'postgres' && used.schema === schema;
        if (run && ownSchema && !sharedSchemas.has(schema) && (await emptySchema(pgUrl, schema)))
          emptiedSchemas.push(schema);
        else await dropSchema(pgUrl, schema);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
    async restart(whileDown) {
      const port = new URL(srv.url).port;
      await srv.app.close();
      await whileDown?.();
      srv.app = await startApp({ ...config, port: Number(port) }, options);
    },
  };
  return srv;
}

/**
 * The environment that makes another test server an instance of `first`'s database: its PostgreSQL
 * schema (several instances on one database; the second's own, unused schema is dropped on close, and
 * the shared one is not reused).
 */
export function sameDatabaseAs(first: TestServer): { WORKROOM_DATABASE_SCHEMA: string } {
  const db = first.app.services.config.database;
  if (db.kind !== 'postgres' || !db.schema) throw new Error('expected a PostgreSQL schema');
  sharedSchemas.add(db.schema); // dropped at the end, not reused: another instance may still use it
  return { WORKROOM_DATABASE_SCHEMA: db.schema };
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

/**
 * Empties a closed test server's schema as a new, migrated one is: every table but the migrations'
 * own, identities restarted, in one statement. False when it could not (a connection still holds a
 * table: the lock timeout), and the caller drops it instead.
 */
async function emptySchema(url: string, schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ tables: string | null }>(
      `select string_agg(format('%I.%I', schemaname, tablename), ', ') as tables
         from pg_tables where schemaname = $1 and tablename not like 'kysely_migration%'`,
      [schema],
    );
    await client.query("set lock_timeout = '5s'");
    if (rows[0]?.tables) await client.query(`truncate ${rows[0].tables} restart identity`);
    return true;
  } catch {
    return false;
  } finally {
    await client.end();
  }
}
