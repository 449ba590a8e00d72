import { mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync, closeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

/**
 * One server (or one `workroom migrate`/`restore`) per SQLite data directory: `<dataDir>/workroom.lock`
 * holds the owner's pid, host and start time, created exclusively. A lock left by a process that is no
 * longer running (a crash, a kill -9, a container restarted with the same pid) is taken over; a live
 * owner is named in the refusal. PostgreSQL needs none: several servers may share one database.
 */

export const LOCK_FILE = 'workroom.lock';

interface Owner {
  pid: number;
  host: string;
  started: string;
  command: string;
}

export interface DataDirLock {
  readonly file: string;
  /** Took over a lock left by a process that is not running (its pid). */
  readonly tookOverFrom: number | undefined;
  release(): void;
}

/** A running process that could be a Workroom server (a pid reused by another program is not one). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: running, as another user
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true; // no /proc (not Linux) or not readable: running, as far as we can tell
  }
}

function readOwner(file: string): Owner | undefined {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as Partial<Owner>;
    return typeof o.pid === 'number' ? (o as Owner) : undefined;
  } catch {
    return undefined; // half-written or not ours: treated as stale
  }
}

/** Takes the data directory's lock for `command` (e.g. "workroom start"), or throws a CliError naming its owner. */
export function lockDataDir(dataDir: string, command: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(resolve(dataDir), LOCK_FILE);
  const me: Owner = { pid: process.pid, host: hostname(), started: new Date().toISOString(), command };
  let tookOverFrom: number | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me) + '\n');
      closeSync(fd);
      let released = false;
      return {
        file,
        tookOverFrom,
        release() {
          if (released) return;
          released = true;
          if (readOwner(file)?.pid === process.pid) rmSync(file, { force: true });
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const owner = readOwner(file);
    const stale = !owner || owner.pid === process.pid || (owner.host === me.host && !alive(owner.pid));
    if (!stale) {
      throw new CliError(
        `The data directory ${resolve(dataDir)} is in use by another Workroom process: pid ${owner.pid}` +
          ` on ${owner.host} (${owner.command}, since ${owner.started}).\n` +
          'Stop that one first, or give this one its own WORKROOM_DATA_DIR. If no such process runs ' +
          `(the directory was copied from another machine), delete ${file}.`,
        EXIT.locked,
      );
    }
    tookOverFrom = owner?.pid;
    // Moved aside, not deleted: of two processes taking over at once, only one finds the file to move.
    try {
      renameSync(file, `${file}.stale`);
    } catch {
      // the other one moved it; try again
    }
  }
  throw new CliError(`Could not take the lock ${file}; try again.`, EXIT.locked);
}
