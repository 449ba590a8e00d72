import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../storage/database.js';
import { CliError, EXIT } from './exit-codes.js';

/**
 * Which version of the schema a database has, against what this build knows: the migration names are
 * the schema's versions (server/src/storage/migrations/NNNN_name), the package version is this build's.
 */

/** This build's version (server/package.json; the same file from server/src/cli and server/dist/cli). */
export function serverVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? 'unknown';
}

/** The migrations this build has, in order (the files next to the compiled or the source code). */
export function knownMigrations(): string[] {
  return readdirSync(new URL('../storage/migrations/', import.meta.url))
    .filter((f) => /^\d{4}_[a-z0-9_]+\.(js|ts)$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => f.replace(/\.(js|ts)$/, ''))
    .sort();
}

/** The migrations applied to the database (none on an empty one). */
export async function appliedMigrations(handle: DatabaseHandle): Promise<string[]> {
  try {
    const r = await sql<{ name: string }>`select name from kysely_migration`.execute(handle.db);
    return r.rows.map((x) => x.name).sort();
  } catch {
    return []; // no migration table yet: an empty database
  }
}

export interface SchemaStatus {
  applied: string[];
  pending: string[];
  /** Applied migrations this build does not know: the database comes from a newer version. */
  unknown: string[];
}

export async function schemaStatus(handle: DatabaseHandle): Promise<SchemaStatus> {
  const known = knownMigrations();
  const applied = await appliedMigrations(handle);
  return {
    applied,
    pending: known.filter((m) => !applied.includes(m)),
    unknown: applied.filter((m) => !known.includes(m)),
  };
}

/** The refusal for a database a newer version migrated, naming both versions. */
export function newerDatabaseError(unknown: string[]): CliError {
  const known = knownMigrations();
  const newest = unknown[unknown.length - 1] ?? '?';
  return new CliError(
    `This database was migrated by a newer Workroom: it has schema version ${newest}` +
      (unknown.length > 1
        ? ` (${unknown.length} migrations this build does not know: ${unknown.join(', ')})`
        : '') +
      `, and this Workroom ${serverVersion()} knows schema versions up to ${known[known.length - 1] ?? '?'}.\n` +
      'Start the newer version again. Going back is not supported by the database: restore the backup taken ' +
      'before the upgrade (docs/OPERATIONS.md, "Upgrades").',
    EXIT.newerDatabase,
  );
}

/**
 * Kysely's own refusal of unknown migrations ("corrupted migrations: previously executed migration
 * 0011_x is missing") turned into the message above; any other error is returned as it is.
 */
export function explainMigrationError(err: unknown): unknown {
  const m = err instanceof Error ? /previously executed migration (\S+) is missing/.exec(err.message) : null;
  return m?.[1] ? newerDatabaseError([m[1]]) : err;
}

/** Refuses a database from a newer version, or one with pending migrations (`what` needs them applied). */
export function assertCurrent(status: SchemaStatus, what: string): void {
  if (status.unknown.length > 0) throw newerDatabaseError(status.unknown);
  if (status.pending.length > 0)
    throw new CliError(
      `${what} needs an up-to-date database: ${status.pending.length} migration(s) pending ` +
        `(${status.pending.join(', ')}). Run \`workroom migrate\` first.`,
      EXIT.pending,
    );
}
