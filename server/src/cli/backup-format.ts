import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

/**
 * A backup is a directory (docs/OPERATIONS.md, "Backup and restore"):
 *   backup.json         this manifest
 *   workroom.db         SQLite: a consistent copy made with SQLite's online backup
 *   database.pgdump     PostgreSQL: pg_dump --format=custom
 *   files/              the uploaded files (<data dir>/files)
 * The encryption key is never in it: it is kept apart, so that a stolen backup does not reveal the
 * stored secrets (webhook secrets) — and must be backed up apart.
 */
export const MANIFEST = 'backup.json';
export const SQLITE_FILE = 'workroom.db';
export const PG_FILE = 'database.pgdump';
export const FILES_DIR = 'files';

export interface Manifest {
  format: 'workroom-backup';
  formatVersion: 1;
  workroom: string;
  createdAt: string;
  database: 'sqlite' | 'postgres';
  /** PostgreSQL: the schema dumped (WORKROOM_DATABASE_SCHEMA), when not the default one. */
  schema?: string | undefined;
  migrations: string[];
  files: number;
  fileBytes: number;
}

export function readManifest(dir: string): Manifest {
  const file = join(dir, MANIFEST);
  if (!existsSync(file))
    throw new CliError(`${dir} is not a Workroom backup (no ${MANIFEST} in it).`, EXIT.failed);
  const m = JSON.parse(readFileSync(file, 'utf8')) as Partial<Manifest>;
  if (m.format !== 'workroom-backup' || m.formatVersion !== 1)
    throw new CliError(
      `${file} is not a backup this version can read (format ${String(m.format)} ${String(m.formatVersion)}).`,
      EXIT.failed,
    );
  return m as Manifest;
}

/** Files and bytes under `dir` (0 when absent). */
export function countFiles(dir: string): { files: number; bytes: number } {
  if (!existsSync(dir)) return { files: 0, bytes: 0 };
  let files = 0;
  let bytes = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    files++;
    bytes += statSync(join(e.parentPath, e.name)).size;
  }
  return { files, bytes };
}

/** What to tell about the encryption key after a backup or a restore. */
export function keyReminder(keySource: string): string {
  return (
    `\n  The encryption key is NOT in the backup: ${keySource}.\n` +
    '  Keep a copy of it apart from the backups. Without it a restored server cannot read the stored\n' +
    '  secrets (webhook signing secrets): set WORKROOM_ENCRYPTION_KEY, or put encryption.key back into\n' +
    '  the data directory, before the restored server starts.\n'
  );
}
