import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config/config.js';
import { describeDatabase, out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { lockDataDir } from './lock.js';
import { knownMigrations, newerDatabaseError, schemaStatus } from './schema.js';
import {
  FILES_DIR,
  keyReminder,
  PG_FILE,
  readManifest,
  SQLITE_FILE,
  type Manifest,
} from './backup-format.js';

const HELP = `Usage: workroom restore <directory> [--force]

Restores a backup made by \`workroom backup\` into the configured data directory and database. The
server must be stopped (on SQLite the data directory's lock is taken).
  SQLite       the database file and files/ are copied into WORKROOM_DATA_DIR
  PostgreSQL   pg_restore into DATABASE_URL (an empty database or schema; pg_restore on the PATH)
A backup of an older version is migrated by the next start; one of a newer version is refused.
Put the encryption key of the backed-up server in place before starting (WORKROOM_ENCRYPTION_KEY or
encryption.key in the data directory).

  --force   the data directory has a database or files already: move them aside into
            <data dir>/before-restore-<time>/ and restore anyway (SQLite)

Exit codes: 0 restored, 1 failed, 2 invalid configuration, 3 data directory in use,
4 backup from a newer version, 64 wrong arguments.`;

export const restoreCommand: Command = {
  name: 'restore',
  summary: 'restore a backup directory (server stopped)',
  help: HELP,
  async run(args, env) {
    const { values, positionals } = parse('restore', args, { force: { type: 'boolean', default: false } }, 1);
    const source = positionals[0];
    if (!source)
      throw new CliError('the backup directory is required: workroom restore <directory>', EXIT.usage);
    const dir = resolve(source);
    const manifest = readManifest(dir);
    const known = knownMigrations();
    const unknown = manifest.migrations.filter((m) => !known.includes(m));
    if (unknown.length > 0) throw newerDatabaseError(unknown);
    const config = readConfig(env);
    if (manifest.database !== config.database.kind)
      throw new CliError(
        `This is a ${manifest.database} backup and the configuration names ${describeDatabase(config)}: ` +
          'restore into the same kind of database (DATABASE_URL set for PostgreSQL, unset for SQLite).',
        EXIT.failed,
      );
    const lock = lockDataDir(config.dataDir, 'workroom restore');
    try {
      if (config.database.kind === 'sqlite') restoreSqlite(config, dir, values.force);
      else await restorePostgres(config, dir, manifest);
      const filesFrom = join(dir, FILES_DIR);
      if (existsSync(filesFrom))
        cpSync(filesFrom, join(config.dataDir, FILES_DIR), { recursive: true, preserveTimestamps: true });
      const pending = await withDatabase(config, async ({ handle }) => (await schemaStatus(handle)).pending);
      out(
        `restored the backup of ${manifest.createdAt} (Workroom ${manifest.workroom}, ${manifest.files} file(s)) into ${describeDatabase(config)}` +
          (pending.length > 0 ? `; ${pending.length} migration(s) will be applied by the next start` : ''),
      );
      const keyFile = join(config.dataDir, 'encryption.key');
      if (!config.encryptionKey && !existsSync(keyFile))
        out(
          keyReminder(
            `none is set and ${keyFile} does not exist — put it back BEFORE starting, or a new key is generated and the stored secrets are lost`,
          ),
        );
      return EXIT.ok;
    } finally {
      lock.release();
    }
  },
};

function restoreSqlite(config: Config, dir: string, force: boolean): void {
  if (config.database.kind !== 'sqlite') return;
  const from = join(dir, SQLITE_FILE);
  if (!existsSync(from)) throw new CliError(`${from} is missing: the backup is incomplete.`, EXIT.failed);
  const db = config.database.file;
  const files = join(config.dataDir, FILES_DIR);
  const present = [db, `${db}-wal`, `${db}-shm`, files].filter((p) => existsSync(p));
  if (present.length > 0) {
    if (!force)
      throw new CliError(
        `The data directory ${resolve(config.dataDir)} has a database or files already (${present.join(', ')}). ` +
          'Restore into an empty data directory, or pass --force to move them aside.',
        EXIT.failed,
      );
    const aside = join(config.dataDir, `before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    mkdirSync(aside, { mode: 0o700 });
    for (const p of present) renameSync(p, join(aside, p.slice(p.lastIndexOf('/') + 1)));
    out(`moved the data directory's database and files aside into ${aside}`);
  }
  copyFileSync(from, db);
  chmodSync(db, 0o600);
}

async function restorePostgres(config: Config, dir: string, manifest: Manifest): Promise<void> {
  if (config.database.kind !== 'postgres') return;
  const from = join(dir, PG_FILE);
  if (!existsSync(from)) throw new CliError(`${from} is missing: the backup is incomplete.`, EXIT.failed);
  if (manifest.schema !== config.database.schema)
    throw new CliError(
      `The backup is of the schema ${manifest.schema ?? '(default)'}; set WORKROOM_DATABASE_SCHEMA to the same ` +
        '(restore into another database, not another schema).',
      EXIT.failed,
    );
  const applied = await withDatabase(config, async ({ handle }) => (await schemaStatus(handle)).applied);
  if (applied.length > 0)
    throw new CliError(
      `${describeDatabase(config)} has a Workroom schema already: restore into an empty database (createdb), ` +
        'or drop it first yourself.',
      EXIT.failed,
    );
  // --clean --if-exists: the schema's CREATE finds the empty schema this command's check just made.
  const args = ['--no-owner', '--clean', '--if-exists', '--exit-on-error', '--single-transaction'];
  const r = spawnSync('pg_restore', [...args, '--dbname', config.database.url, from], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.error || r.status !== 0)
    throw new CliError(
      (r.error
        ? `pg_restore could not be run (${r.error.message}).`
        : `pg_restore failed (exit ${r.status}).`) +
        `\nRun it yourself:\n  pg_restore ${args.join(' ')} --dbname "$DATABASE_URL" ${from}`,
      EXIT.failed,
    );
}
