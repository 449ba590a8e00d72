import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

/**
 * What the server writes under its data directory (database, WAL, uploads, the encryption key) is for
 * the server's user alone: folders it creates are 0700 and files 0600, whatever the umask. Existing
 * folders are left as they are (the data directory may be a shared parent chosen by the operator).
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates the SQLite database file 0600 before SQLite opens it: SQLite gives its WAL and shared-memory
 * files the mode of the database file. Files left 0644 by an earlier version are tightened.
 */
export function makePrivateDatabaseFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, PRIVATE_FILE_MODE);
}
