import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Runs SQLite WAL checkpoints on a worker thread with its own connection, so that the request path
 * never pays for copying WAL pages back into the database file (and the fsync that goes with it).
 * The main connection has `wal_autocheckpoint = 0`; if the worker ever stops, it is switched back on.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
const checkpoint = (mode) => { try { db.pragma('wal_checkpoint(' + mode + ')'); } catch (e) { /* busy: next time */ } };
const timer = setInterval(() => checkpoint('PASSIVE'), workerData.intervalMs);
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
  intervalMs: number,
  onFailure: (err: unknown) => void,
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, intervalMs } });
  worker.unref();
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
