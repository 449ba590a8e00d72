import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Runs SQLite WAL checkpoints on a worker thread with its own connection, so that the request path
 * never pays for copying WAL pages back into the database file (and the fsync that goes with it).
 * The main connection has `wal_autocheckpoint = 0`; if the worker ever stops, it is switched back on.
 * When the WAL outgrows `walLimitBytes` (sustained writes), the worker asks the writer to checkpoint
 * between two commits (`onWalLarge`), so that the WAL starts over and stays bounded.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
const checkpoint = (mode) => { try { db.pragma('wal_checkpoint(' + mode + ')'); } catch (e) { /* busy: next time */ } };
const walSize = () => { try { return statSync(workerData.file + '-wal').size; } catch { return 0; } };
const timer = setInterval(() => {
  checkpoint('PASSIVE');
  // Under sustained writes a PASSIVE checkpoint never catches up with the writer, and the WAL only
  // starts over once one has: ask the writer to finish the job between two of its commits.
  if (walSize() > workerData.walLimitBytes) parentPort.postMessage('wal-large');
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'close') {
    clearInterval(timer);
    checkpoint('TRUNCATE');
    db.close();
    parentPort.postMessage('closed');
  }
});
`;

export interface Checkpointer {
  close(): Promise<void>;
}

export function startCheckpointer(
  file: string,
  opts: { intervalMs: number; walLimitBytes: number; onWalLarge: () => void },
  onFailure: (err: unknown) => void,
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const { intervalMs, walLimitBytes } = opts;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, driver, intervalMs, walLimitBytes },
  });
  worker.unref();
  worker.on('message', (m) => {
    if (m === 'wal-large') opts.onWalLarge();
  });
  let closing = false;
  worker.on('error', (err) => {
    if (!closing) onFailure(err);
  });
  worker.on('exit', (code) => {
    if (!closing) onFailure(new Error(`checkpoint worker exited with code ${code}`));
  });
  return {
    close() {
      closing = true;
      return new Promise<void>((resolve) => {
        const done = () => {
          void worker.terminate().then(() => resolve());
        };
        worker.once('message', done);
        worker.once('exit', () => resolve());
        worker.postMessage('close');
        setTimeout(done, 5000).unref();
      });
    },
  };
}
