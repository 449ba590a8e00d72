import { once } from 'node:events';
import type { Clock } from '../runtime/clock.js';
import { DiskBlobStore } from './blobs.js';
import { DatabaseBlobStore, DATABASE_KEY_PREFIX } from './blobs-database.js';
import type { Storage } from './storage.js';
import { BlobRowStore } from './stores/blobs.js';

export interface MoveReport {
  /** Files in the database store afterwards that were on disk. */
  moved: number;
  bytes: number;
  /** Files whose bytes are not under this data directory (on another instance's disk, or lost). */
  missing: number;
  /** Files whose bytes on disk do not match their row (size or SHA-256): left where they are. */
  mismatched: number;
  /** Files to move when the run began. */
  total: number;
}

export interface MoveOptions {
  /** Files a page (default 100). */
  batch?: number;
  /** Keep the files on disk after moving them (default: removed once the row points to the database). */
  keep?: boolean;
  /** Hears progress: after each page and every 2 seconds. */
  progress?: (r: MoveReport) => void;
}

/**
 * `workroom move-files`: every file whose bytes are on this data directory's disk is copied to the
 * database store (streamed, 256 KiB chunks) and its row pointed at it. One file at a time, each
 * committed on its own, so an interrupted run loses nothing and the next run resumes: files moved
 * already have `db:` keys and are not listed again; a copy cut short (a blob no row names) is replaced.
 * The server may run meanwhile: a file is served from disk until its row is repointed, from the
 * database after.
 */
export async function moveFilesToDatabase(
  storage: Storage,
  dataDir: string,
  clock: Clock,
  opts: MoveOptions = {},
): Promise<MoveReport> {
  const batch = opts.batch ?? 100;
  const disk = new DiskBlobStore(dataDir);
  const database = new DatabaseBlobStore(storage, clock);
  const rows = new BlobRowStore(storage.stores.db);
  const { files: total } = await rows.countNotIn(DATABASE_KEY_PREFIX);
  const report: MoveReport = { moved: 0, bytes: 0, missing: 0, mismatched: 0, total };
  let told = Date.now();
  let after = '';
  for (;;) {
    const page = await rows.filesNotIn(DATABASE_KEY_PREFIX, after, batch);
    if (page.length === 0) break;
    for (const f of page) {
      after = f.id;
      const key = database.pathFor('', f.id);
      // What an interrupted run left (never attached: a row names a blob only once it is complete).
      await rows.delete(key);
      const source = disk.open(f.storage_path);
      try {
        await once(source, 'open');
      } catch {
        report.missing++;
        continue;
      }
      const stored = await database.write(key, source, Number.MAX_SAFE_INTEGER);
      if (stored.size !== f.size || stored.sha256 !== f.sha256) {
        await rows.delete(key);
        report.mismatched++;
        continue;
      }
      const repointed = await storage.transaction(async (s) => {
        const r = new BlobRowStore(s.db);
        if (!(await r.repoint(f.id, f.storage_path, key))) return false;
        return r.attach(key, f.id);
      });
      if (!repointed) {
        await rows.delete(key); // the file was deleted or changed meanwhile
        continue;
      }
      if (!opts.keep) await disk.remove(f.storage_path);
      report.moved++;
      report.bytes += stored.size;
      if (Date.now() - told >= 2000) {
        told = Date.now();
        opts.progress?.(report);
      }
    }
    opts.progress?.(report);
  }
  return report;
}
