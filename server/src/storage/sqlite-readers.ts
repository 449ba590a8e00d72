import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Reads that can take long (search) run here, on read-only SQLite connections in worker threads, never
 * on the event loop's thread: SQLite calls are synchronous, so a 2-second query on the main connection
 * is a 2-second pause of every request. WAL lets these readers run while the writer writes, and each
 * statement sees the last commit (a write whose HTTP answer was sent has committed: group commit
 * answers only after COMMIT), so a search made after a write sees it.
 *
 * Every read has a time budget. When it runs out the read is abandoned: its promise rejects with
 * `ReadTimeout` at once, and its worker is terminated and replaced. (A worker inside one SQLite call
 * stops when that call returns; the request is answered meanwhile, and other reads use the other
 * workers and the replacement.) The pool belongs to the storage object and is stopped on close. Its
 * workers start with the first reads that need them, not on open: a worker costs ~130 ms of CPU to
 * start (a Node thread, the driver, a connection), which a server that is never searched (a test
 * server, a short-lived command) would pay for nothing; the first search pays it once instead.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Below the event loop's thread (READER_NICE). Only on Linux, where niceness is per thread: elsewhere
// it would lower the whole process.
if (process.platform === 'linux') try { require('node:os').setPriority(workerData.nice); } catch {}
const Database = require(workerData.driver);
const db = new Database(workerData.file, { readonly: true });
db.pragma('busy_timeout = 5000');
db.pragma('mmap_size = 268435456');
const statements = new Map();
parentPort.on('message', (job) => {
  try {
    const key = (job.raw ? 'raw:' : 'obj:') + job.sql;
    let stmt = statements.get(key);
    if (!stmt) {
      if (statements.size >= 200) statements.clear();
      stmt = db.prepare(job.sql);
      if (job.raw) stmt.raw(true);
      statements.set(key, stmt);
    }
    parentPort.postMessage({ rows: stmt.all(job.params) });
  } catch (e) {
    parentPort.postMessage({ error: { message: String((e && e.message) || e), code: e && e.code } });
  }
});
`;

/**
 * On Linux the readers' threads run at this niceness (there it is per thread), below the event loop's
 * thread: on a busy machine, waking a reader for a search no longer hands it the CPU the requests'
 * thread was using, and searches take the CPU left over by requests rather than the other way round.
 * (Measured on the shared 2-core machine, load ~14, 1M messages: POST p99 next to a missing-word
 * search loop 26–28 ms at niceness 10 against 36–63 ms at 0; search latencies alike.)
 */
const READER_NICE = 10;

/** The read ran out of its time budget and was abandoned. */
export class ReadTimeout extends Error {
  constructor(readonly budgetMs: number) {
    super(`read abandoned after its time budget of ${budgetMs} ms`);
    this.name = 'ReadTimeout';
  }
}

/** Where reads that can take long run, each within a time budget (SQLite: worker threads; PostgreSQL: pg-readers.ts). */
export interface Readers {
  /**
   * Runs one read-only statement; rejects with `ReadTimeout` once `budgetMs` have passed (waiting
   * for a reader included). `raw`: each row an array of its columns in select order (cheaper to
   * hand over from a worker than an object). `statementTimeoutMs` (PostgreSQL): the statement_timeout
   * to run it with, the whole budget rather than what is left of it (default `budgetMs`): a stable
   * value, as a change costs a round trip to set.
   */
  all<R>(
    sql: string,
    params: readonly unknown[],
    budgetMs: number,
    opts?: { raw?: boolean; statementTimeoutMs?: number },
  ): Promise<R[]>;
  /** Reads abandoned so far (for tests and diagnostics). */
  readonly abandoned: number;
  close(): Promise<void>;
}

interface Job {
  sql: string;
  params: readonly unknown[];
  raw: boolean;
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
  done: boolean;
}

interface Slot {
  worker: Worker | undefined;
  job: Job | undefined;
}

export class SqliteReaders implements Readers {
  readonly #driver = createRequire(import.meta.url).resolve('better-sqlite3');
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  #closed = false;
  /** Reads abandoned so far (for tests and diagnostics). */
  abandoned = 0;

  constructor(
    private readonly file: string,
    size: number,
  ) {
    // Each slot's worker starts when a read is first dispatched to it (#dispatch).
    for (let i = 0; i < size; i++) this.#slots.push({ worker: undefined, job: undefined });
  }

  /** Runs one read-only statement on a reader; rejects with `ReadTimeout` after `budgetMs`. */
  all<R>(sql: string, params: readonly unknown[], budgetMs: number, opts?: { raw?: boolean }): Promise<R[]> {
    if (this.#closed) return Promise.reject(new Error('the storage is closed'));
    return new Promise<R[]>((resolve, reject) => {
      const job: Job = {
        sql,
        params,
        raw: opts?.raw === true,
        resolve: resolve as (rows: unknown[]) => void,
        reject,
        done: false,
        timer: setTimeout(() => this.#expire(job, budgetMs), budgetMs),
      };
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) this.#finish(job, new Error('the storage is closed'));
    await Promise.all(
      this.#slots.map(async (slot) => {
        if (slot.job) this.#finish(slot.job, new Error('the storage is closed'));
        const w = slot.worker;
        slot.worker = undefined;
        await w?.terminate();
      }),
    );
  }

  #spawn(slot: Slot): void {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: this.file, driver: this.#driver, nice: READER_NICE },
    });
    worker.unref();
    slot.worker = worker;
    worker.on('message', (m: { rows?: unknown[]; error?: { message: string; code?: string } }) => {
      const job = slot.job;
      slot.job = undefined;
      if (job) {
        if (m.error) this.#finish(job, Object.assign(new Error(m.error.message), { code: m.error.code }));
        else this.#finish(job, undefined, m.rows ?? []);
      }
      this.#dispatch();
    });
    const gone = (err: Error) => {
      if (slot.worker !== worker) return; // replaced already (terminated on purpose)
      slot.worker = undefined;
      const job = slot.job;
      slot.job = undefined;
      if (job) this.#finish(job, err);
      // Replaced on the next read, not now: a worker that cannot open the file must not spin.
      this.#dispatch();
    };
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`reader worker exited with code ${code}`)));
  }

  #dispatch(): void {
    if (this.#closed) return;
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      if (slot.job) continue;
      if (!slot.worker) this.#spawn(slot);
      const job = this.#queue.shift()!;
      slot.job = job;
      slot.worker!.postMessage({ sql: job.sql, params: job.params, raw: job.raw });
    }
  }

  /** Out of time: drop it from the queue, or stop the worker running it and start another. */
  #expire(job: Job, budgetMs: number): void {
    if (job.done) return;
    this.abandoned++;
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) this.#queue.splice(queued, 1);
    const slot = this.#slots.find((s) => s.job === job);
    if (slot) {
      const w = slot.worker;
      slot.job = undefined;
      slot.worker = undefined;
      void w?.terminate();
      if (!this.#closed) this.#spawn(slot);
    }
    this.#finish(job, new ReadTimeout(budgetMs));
    this.#dispatch();
  }

  #finish(job: Job, err: unknown, rows?: unknown[]): void {
    if (job.done) return;
    job.done = true;
    clearTimeout(job.timer);
    if (err) job.reject(err);
    else job.resolve(rows!);
  }
}
