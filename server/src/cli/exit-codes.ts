/**
 * Exit codes of the `workroom` command and of the server process (docs/OPERATIONS.md, "Exit codes"):
 * a supervisor or a deploy pipeline can tell a configuration mistake from a crash without reading logs.
 */
export const EXIT = {
  ok: 0,
  /** Anything unexpected (a bug, the database unreachable, a failed backup). */
  failed: 1,
  /** The configuration (environment) is invalid. */
  config: 2,
  /** Another server uses this SQLite data directory (its lock file names the pid). */
  locked: 3,
  /** The database was migrated by a newer Workroom. */
  newerDatabase: 4,
  /** The port is taken by another program. */
  portInUse: 5,
  /** `migrate --check`: migrations are pending (or a command needs them applied first). */
  pending: 6,
  /** Wrong arguments (EX_USAGE). */
  usage: 64,
} as const;

/** An expected failure: its message is printed as it is (no stack trace) and the process exits with `code`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}
