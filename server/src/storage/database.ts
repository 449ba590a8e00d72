import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import type { Config } from '../config/config.js';
import type { Database } from './schema.js';
import { PgLookupBatches, PgWriteBatches } from './pg-batches.js';
import * as m0001 from './migrations/0001_initial.js';
import * as m0003 from './migrations/0003_incoming_token.js';
import * as m0002 from './migrations/0002_search.js';
import type { Progress } from './migrations/0002_search.js';
import * as m0004 from './migrations/0004_deliveries.js';
import * as m0005 from './migrations/0005_bot_platform.js';
import * as m0006 from './migrations/0006_scheduler.js';
import * as m0007 from './migrations/0007_search_index_at_commit.js';
import * as m0008 from './migrations/0008_outbox_numbering.js';
import * as m0009 from './migrations/0009_quota_usage.js';
import * as m0010 from './migrations/0010_event_dead_letters.js';
import * as m0011 from './migrations/0011_reactions_archive.js';
import * as m0012 from './migrations/0012_incoming_webhooks.js';
import * as m0014 from './migrations/0014_blob_chunks.js';
import * as m0015 from './migrations/0015_cluster_settings.js';
import * as m0013 from './migrations/0013_webhook_signing_keys.js';
import * as m0016 from './migrations/0016_shared_rate_limits.js';
import * as m0017 from './migrations/0017_presence.js';
import * as m0018 from './migrations/0018_leases.js';
import * as m0019 from './migrations/0019_key_grants.js';
import * as m0020 from './migrations/0020_pending_actions.js';
import * as m0021 from './migrations/0021_key_guardrails.js';
import * as m0022 from './migrations/0022_command_forwards.js';
import * as m0023 from './migrations/0023_due_deliveries.js';
import * as m0024 from './migrations/0024_claimable_jobs.js';
import * as m0025 from './migrations/0025_gin_pending_list.js';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpointer.js';
import { useNamedStatements, type PgTypes } from './pg-statements.js';
import { engineDialect, SqliteEngine } from './sqlite-engine.js';
import { PgReaders } from './pg-readers.js';
import { SqliteReaders, type Readers } from './sqlite-readers.js';
import { makePrivateDatabaseFile, makePrivateDir } from './private-files.js';

export type Dialect = 'sqlite' | 'postgres';

/** Connections of the main pool: most it opens, in use, idle, and requests waiting for one. */
export interface PoolUse {
  max: number;
  used: number;
  idle: number;
  waiting: number;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The SQLite engine, on SQLite. */
  sqlite?: SqliteEngine;
  /**
   * Where long reads (search) run within a time budget: on SQLite (on a file) read-only connections in
   * worker threads, on PostgreSQL a pool of their own with a statement_timeout.
   */
  readers?: Readers;
  /** PostgreSQL schema, when not the default one. */
  schema?: string | undefined;
  /** PostgreSQL: the main pool's connections (metrics). */
  pool?: () => PoolUse;
  /** PostgreSQL: the main pool itself (write transactions, storage/pg-deferred-transaction.ts). */
  pgPool?: pg.Pool;
  /** PostgreSQL: group commit of one-statement writes on that pool (storage/pg-batches.ts). */
  pgWrites?: PgWriteBatches;
  /** PostgreSQL: batching of the request path's one-row reads on that pool (storage/pg-batches.ts). */
  pgLookups?: PgLookupBatches;
  close(): Promise<void>;
}

/** Migrations in order; each receives the dialect for the few places where SQL types differ. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run before the typed schema exists
type MigrationUp = (db: Kysely<any>, dialect: Dialect, progress: Progress) => Promise<void>;
const MIGRATIONS: Record<string, MigrationUp> = {
  '0001_initial': m0001.up,
  '0003_incoming_token': m0003.up,
  '0002_search': m0002.up,
  '0004_deliveries': m0004.up,
  '0005_bot_platform': m0005.up,
  '0006_scheduler': m0006.up,
  '0007_search_index_at_commit': m0007.up,
  '0008_outbox_numbering': m0008.up,
  '0009_quota_usage': m0009.up,
  '0010_event_dead_letters': m0010.up,
  '0011_reactions_archive': m0011.up,
  '0012_incoming_webhooks': m0012.up,
  '0014_blob_chunks': m0014.up,
  '0015_cluster_settings': m0015.up,
  '0013_webhook_signing_keys': m0013.up,
  '0016_shared_rate_limits': m0016.up,
  '0017_presence': m0017.up,
  '0018_leases': m0018.up,
  '0019_key_grants': m0019.up,
  '0020_pending_actions': m0020.up,
  '0021_key_guardrails': m0021.up,
  '0022_command_forwards': m0022.up,
  '0023_due_deliveries': m0023.up,
  '0024_claimable_jobs': m0024.up,
  '0025_gin_pending_list': m0025.up,
};

/**
 * Readers for long reads (search): two worker threads on SQLite, so that one abandoned read never leaves
 * none; two connections of their own on PostgreSQL.
 */
const READERS = 2;

/** Above this size the WAL is checkpointed by the writer between commits, so that it starts over. */
const WAL_LIMIT_BYTES = 64 * 1024 * 1024;

export function openSqlite(
  file: string,
  wal: { limitBytes: number; checkpointIntervalMs: number } = {
    limitBytes: WAL_LIMIT_BYTES,
    checkpointIntervalMs: 500,
  },
): DatabaseHandle {
  if (file !== ':memory:') {
    makePrivateDir(dirname(file));
    makePrivateDatabaseFile(file);
  }
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  // Reads through a memory map instead of read() calls into the page cache.
  raw.pragma('mmap_size = 268435456');
  // When the WAL starts over, its file is cut back to this size instead of keeping its high-water mark.
  raw.pragma(`journal_size_limit = ${wal.limitBytes}`);
  let checkpointer: Checkpointer | undefined;
  let reader: BetterSqlite3.Database | undefined;
  if (file !== ':memory:') {
    raw.pragma('wal_autocheckpoint = 0');
    checkpointer = startCheckpointer(
      file,
      {
        intervalMs: wal.checkpointIntervalMs,
        walLimitBytes: wal.limitBytes,
        onWalLarge: () => engine.checkpointSoon(),
      },
      () => {
        // Without the worker, fall back to SQLite's own checkpoints on the request path.
        if (raw.open) raw.pragma('wal_autocheckpoint = 1000');
      },
    );
    reader = new BetterSqlite3(file, { readonly: true });
    reader.pragma('busy_timeout = 5000');
    reader.pragma('mmap_size = 268435456');
  }
  const engine = new SqliteEngine(raw, reader);
  indexPendingAtCommit(engine);
  const db = new Kysely<Database>({ dialect: engineDialect(engine) });
  const readers = file !== ':memory:' ? new SqliteReaders(file, READERS) : undefined;
  return {
    db,
    dialect: 'sqlite',
    sqlite: engine,
    ...(readers && { readers }),
    async close() {
      await readers?.close();
      await checkpointer?.close();
      await db.destroy();
    },
  };
}

// 64-bit integers (bigint, bigserial, count(*)) arrive as strings by default; our values fit in a double.
const PG_INT8 = 20;
const pgTypes: PgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === PG_INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as never,
};

/**
 * Session settings for every pooled connection: the operator's `PGOPTIONS` (as libpq and psql read it,
 * e.g. `-c statement_timeout=30s`), then our schema's search_path. node-postgres reads PGOPTIONS only
 * when no `options` are given, and a schema gives them, so they are joined here. (CI's PostgreSQL
 * stage sets `-c synchronous_commit=off`: see .ci/run.)
 */
function sessionOptions(operator: string | undefined, schema: string | undefined): { options?: string } {
  const options = [operator?.trim(), schema ? `-c search_path="${schema}"` : undefined]
    .filter(Boolean)
    .join(' ');
  return options ? { options } : {};
}

export async function openPostgres(
  url: string,
  schema: string | undefined,
  poolSize: number,
  namedStatements = true,
  /** Session settings for every connection, in PGOPTIONS form (`-c name=value …`). */
  pgOptions?: string,
): Promise<DatabaseHandle> {
  if (schema) {
    // Create the schema once, then point every pooled connection's search_path at it.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // Instances starting together on a new schema: `if not exists` alone races (a duplicate key in
      // pg_namespace), so one creates it at a time.
      await client.query('begin');
      await client.query('select pg_advisory_xact_lock(hashtext($1))', [`workroom.schema.${schema}`]);
      await client.query(`create schema if not exists "${schema}"`);
      await client.query('commit');
    } finally {
      await client.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: pgTypes,
    ...sessionOptions(pgOptions, schema),
  });
  if (namedStatements) useNamedStatements(pool, pgTypes);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const readers = new PgReaders(
    new pg.Pool({
      connectionString: url,
      max: READERS,
      types: pgTypes,
      ...sessionOptions(pgOptions, schema),
    }),
  );
  return {
    db,
    dialect: 'postgres',
    schema,
    readers,
    pgPool: pool,
    pgWrites: new PgWriteBatches(pool),
    pgLookups: new PgLookupBatches(pool),
    pool: () => ({
      max: poolSize,
      used: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
    async close() {
      await readers.close();
      await db.destroy();
    },
  };
}

export async function openDatabase(config: Config['database']): Promise<DatabaseHandle> {
  return config.kind === 'sqlite'
    ? openSqlite(config.file)
    : openPostgres(config.url, config.schema, config.poolSize, config.namedStatements, config.sessionOptions);
}

/**
 * Whether exactly our migrations are recorded as applied (every start after the first): one query,
 * where Kysely's migrator first looks for its tables over every schema of the database (~210 ms on a
 * PostgreSQL with a few dozen schemas, as in CI). Anything else (no table yet, a migration missing or
 * unknown, an error) is left to the migrator, which also waits for another instance migrating now:
 * that one's records are not visible here before its transaction commits.
 */
async function allApplied(handle: DatabaseHandle): Promise<boolean> {
  const table = handle.schema ? sql.id(handle.schema, 'kysely_migration') : sql.id('kysely_migration');
  try {
    const { rows } = await sql<{ name: string }>`select name from ${table}`.execute(handle.db);
    const applied = new Set(rows.map((r) => r.name));
    const ours = Object.keys(MIGRATIONS);
    return applied.size === ours.length && ours.every((name) => applied.has(name));
  } catch {
    return false;
  }
}

/** Applies the pending migrations (up to `target` when given: tests of a migration over existing data). */
export async function migrate(
  handle: DatabaseHandle,
  progress: Progress = () => {},
  target?: string,
): Promise<string[]> {
  if (!target && (await allApplied(handle))) {
    if (handle.sqlite) indexPendingAtCommit(handle.sqlite);
    return [];
  }
  const migrations: Record<string, Migration> = {};
  for (const [name, up] of Object.entries(MIGRATIONS)) {
    migrations[name] = { up: (db) => up(db, handle.dialect, progress) };
  }
  const migrator = new Migrator({
    db: handle.db,
    // Kysely looks for its migration tables in every schema unless told which one is ours.
    ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  for (let attempt = 1; ; attempt++) {
    const run = target ? migrator.migrateTo(target) : migrator.migrateToLatest();
    const { error, results } = await run.catch((e: unknown) => ({
      error: e,
      results: undefined,
    }));
    if (!error) {
      if (handle.sqlite) indexPendingAtCommit(handle.sqlite);
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    }
    // Kysely looks for its migration tables with a query over every schema of the database (calling
    // has_schema_privilege on each, reading their tables' columns): a schema another client drops
    // meanwhile fails that query with "schema … does not exist" (3F000), or, when the drop lands while
    // its tables' columns are read, "column … of relation … does not exist" (42703) or "relation … does
    // not exist" (42P01). Not ours to worry about: look again shortly. (A migration of ours failing so
    // would fail ten times over and be thrown; migrations run in one transaction, so a retry is safe.)
    if (attempt < 10 && isOtherSchemaGone(error, handle.schema)) {
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
      continue;
    }
    throw error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * SQLite: new messages enter the search index in batches right before a commit (migration 0007), once
 * the database has the pending list; what another process left pending is indexed now.
 */
function indexPendingAtCommit(engine: SqliteEngine): void {
  engine.beforeCommit = m0007.indexPendingMessages(engine.raw);
  if (!engine.inTransaction) engine.beforeCommit?.(true);
}

function isOtherSchemaGone(error: unknown, ours: string | undefined): boolean {
  const e = error as { code?: string; message?: string } | null;
  if (e?.code === '42703' || e?.code === '42P01') return true;
  return e?.code === '3F000' && !(ours !== undefined && e.message?.includes(`"${ours}"`));
}

export async function pingDatabase(handle: DatabaseHandle): Promise<boolean> {
  try {
    await sql`select 1`.execute(handle.db);
    return true;
  } catch {
    return false;
  }
}

/** True for a unique/primary-key violation on either dialect. */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string } | null;
  return (
    err?.code === '23505' ||
    err?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}
