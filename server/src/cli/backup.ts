import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config/config.js';
import { describeDatabase, out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { appliedMigrations, serverVersion } from './schema.js';
import {
  countFiles,
  FILES_DIR,
  keyReminder,
  MANIFEST,
  PG_FILE,
  SQLITE_FILE,
  type Manifest,
} from './backup-format.js';

const HELP = `Usage: workroom backup <directory>

Writes a backup of the database and the uploaded files into <directory> (new or empty), while the
server runs:
  SQLite       SQLite's online backup of workroom.db (a consistent copy, writers go on meanwhile)
  PostgreSQL   pg_dump --format=custom (pg_dump must be on the PATH, of the server's major version
               or newer; without it the command to run is printed)
  both         the files directory (<data dir>/files), copied after the database, so that every
               file the copy of the database names is in it
The encryption key is not in the backup: keep it apart (the command reminds you where it is).
Archive the directory as you like (tar czf workroom-$(date +%F).tar.gz <directory>).

Exit codes: 0 written, 1 failed, 2 invalid configuration, 64 wrong arguments.`;

export const backupCommand: Command = {
  name: 'backup',
  summary: 'back up the database and files into a directory (online)',
  help: HELP,
  async run(args, env) {
    const { positionals } = parse('backup', args, {}, 1);
    const target = positionals[0];
    if (!target)
      throw new CliError('the backup directory is required: workroom backup <directory>', EXIT.usage);
    const dir = resolve(target);
    if (existsSync(dir) && readdirSync(dir).length > 0)
      throw new CliError(`${dir} exists and is not empty: give a new directory.`, EXIT.failed);
    const config = readConfig(env);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      const migrations =
        config.database.kind === 'sqlite'
          ? await backupSqlite(config, dir)
          : await backupPostgres(config, dir);
      // After the database: a file written meanwhile is in the copy without a row (harmless), never a row
      // without its file.
      const filesDir = join(config.dataDir, FILES_DIR);
      // (With WORKROOM_BLOB_STORE=database, the default on PostgreSQL, the bytes are in the database: only
      // files still on disk are here.)
      if (existsSync(filesDir))
        cpSync(filesDir, join(dir, FILES_DIR), { recursive: true, preserveTimestamps: true });
      else mkdirSync(join(dir, FILES_DIR), { mode: 0o700 });
      const { files, bytes } = countFiles(join(dir, FILES_DIR));
      const manifest: Manifest = {
        format: 'workroom-backup',
        formatVersion: 1,
        workroom: serverVersion(),
        createdAt: new Date().toISOString(),
        database: config.database.kind,
        ...(config.database.kind === 'postgres' && { schema: config.database.schema }),
        migrations,
        files,
        fileBytes: bytes,
      };
      writeFileSync(join(dir, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
      out(
        `backup of ${describeDatabase(config)} written to ${dir}: schema ${migrations[migrations.length - 1] ?? 'empty'}, ${files} file(s), ${bytes} bytes of files`,
      );
      out(
        keyReminder(
          config.encryptionKey
            ? 'it is WORKROOM_ENCRYPTION_KEY'
            : `it is ${resolve(config.dataDir, 'encryption.key')}`,
        ),
      );
      return EXIT.ok;
    } catch (e) {
      rmSync(dir, { recursive: true, force: true }); // no half backup that looks whole
      throw e;
    }
  },
};

async function backupSqlite(config: Config, dir: string): Promise<string[]> {
  if (config.database.kind !== 'sqlite' || !existsSync(config.database.file))
    throw new CliError(`There is no database at ${describeDatabase(config)}.`, EXIT.failed);
  return withDatabase(config, async ({ handle }) => {
    const file = join(dir, SQLITE_FILE);
    await handle.sqlite!.raw.backup(file);
    chmodSync(file, 0o600);
    return appliedMigrations(handle);
  });
}

async function backupPostgres(config: Config, dir: string): Promise<string[]> {
  if (config.database.kind !== 'postgres') throw new Error('unreachable');
  const file = join(dir, PG_FILE);
  const schema = config.database.schema;
  const args = ['--format=custom', '--no-owner', `--file=${file}`, ...(schema ? [`--schema=${schema}`] : [])];
  const r = spawnSync('pg_dump', [...args, '--dbname', config.database.url], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.error || r.status !== 0) {
    throw new CliError(
      (r.error ? `pg_dump could not be run (${r.error.message}).` : `pg_dump failed (exit ${r.status}).`) +
        `\nRun it yourself (PostgreSQL client tools of the server's major version):\n  pg_dump ${args.join(' ')} --dbname "$DATABASE_URL"` +
        "\nand copy the data directory's files/ beside it.",
      EXIT.failed,
    );
  }
  chmodSync(file, 0o600);
  return withDatabase(config, ({ handle }) => appliedMigrations(handle));
}
