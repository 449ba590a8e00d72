import { Readable } from 'node:stream';
import type { Clock } from '../runtime/clock.js';
import { BlobMeter, type BlobStore, type StoredBlob } from './blobs.js';
import type { Storage } from './storage.js';
import { BlobRowStore } from './stores/blobs.js';
import type { Stores } from './stores/index.js';

/** Keys of blobs in the database: `db:<file id>` (any other key is a path on disk). */
export const DATABASE_KEY_PREFIX = 'db:';
export const isDatabaseKey = (key: string): boolean => key.startsWith(DATABASE_KEY_PREFIX);

/**
 * 256 KiB a row: big enough that a 20 MB file is 80 round trips each way, small enough that a write or
 * a read holds little memory (one chunk and the piece that overflowed it) and that PostgreSQL keeps
 * each row's TOAST work short.
 */
export const CHUNK_BYTES = 256 * 1024;

/**
 * File bytes in the database (WORKROOM_BLOB_STORE=database; migration 0014), for several instances on
 * one PostgreSQL: every instance reads what any of them wrote.
 *
 * Streamed in and out: a write inserts each 256 KiB chunk as it fills (the next bytes are read only once
 * it is stored, so a fast client waits for the database, never fills memory); a read fetches the next
 * chunk when the consumer wants more. Nothing half-written is left: a write that fails (over the size
 * limit, a client that aborts, a database error) deletes its blob row, and its chunks with it. A crash
 * in the middle leaves a blob that no file row names; the service sweeps those (blobs.ts).
 *
 * Chunks are not written in one transaction: an upload may take minutes, and a transaction that long
 * would hold a pooled connection (PostgreSQL) or the one writer (SQLite) all that time. The blob becomes
 * visible only through its file row, inserted after the last chunk.
 */
export class DatabaseBlobStore implements BlobStore {
  readonly kind = 'database';

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
  ) {}

  get #rows(): BlobRowStore {
    return new BlobRowStore(this.storage.stores.db);
  }

  pathFor(_orgId: string, fileId: string): string {
    return `${DATABASE_KEY_PREFIX}${fileId}`;
  }

  async write(key: string, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob> {
    const rows = this.#rows;
    const meter = new BlobMeter(maxBytes);
    await rows.create(key, this.clock.nowIso());
    let seq = 0;
    // One chunk's insert in flight while the next one fills (the client is not stalled for each round
    // trip); at most two chunks in memory.
    let inFlight: Promise<void> | undefined;
    const put = async (data: Buffer) => {
      await inFlight;
      inFlight = rows.putChunk(key, seq++, data);
      inFlight.catch(() => undefined); // awaited by the next put, or below
    };
    try {
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const piece of source) {
        meter.add(piece);
        pending.push(piece);
        pendingBytes += piece.length;
        if (pendingBytes < CHUNK_BYTES) continue;
        const all = Buffer.concat(pending, pendingBytes);
        let off = 0;
        for (; all.length - off >= CHUNK_BYTES; off += CHUNK_BYTES)
          await put(all.subarray(off, off + CHUNK_BYTES));
        pending = off < all.length ? [Buffer.from(all.subarray(off))] : [];
        pendingBytes = all.length - off;
      }
      if (pendingBytes > 0) await put(Buffer.concat(pending, pendingBytes));
      await inFlight;
      const stored = meter.result();
      await rows.complete(key, stored.size, seq, stored.sha256);
      return stored;
    } catch (err) {
      await inFlight?.catch(() => undefined);
      await rows.delete(key).catch(() => undefined); // the original error says more
      throw err;
    }
  }

  async attach(stores: Stores, key: string, fileId: string): Promise<void> {
    if (!(await new BlobRowStore(stores.db).attach(key, fileId)))
      throw new Error(`blob ${key} is not stored (complete) in the database`);
  }

  /**
   * A stream of the blob's chunks, one fetched at a time as the consumer reads. It emits 'open' once the
   * blob is found complete, 'error' when it is not (missing, or deleted while being read).
   */
  open(key: string): Readable {
    const read = (seq: number) => this.#chunk(key, seq);
    const info = () => this.#rows.info(key);
    let seq = 0;
    let chunks = 0;
    // The next chunk is fetched while the current one is sent: memory per download is about three chunks.
    let ahead: Promise<Buffer | undefined> | undefined;
    const fetch = (i: number) => {
      const p = read(i);
      p.catch(() => undefined); // handled where it is awaited
      return p;
    };
    const stream: Readable = new Readable({
      highWaterMark: CHUNK_BYTES,
      construct(callback) {
        info().then(
          (b) => {
            if (!b || b.complete !== 1) return callback(new Error(`blob ${key} not found`));
            chunks = b.chunks;
            callback();
            stream.emit('open');
          },
          (err: Error) => callback(err),
        );
      },
      read() {
        if (seq >= chunks) {
          this.push(null);
          return;
        }
        const i = seq++;
        const current = ahead ?? fetch(i);
        ahead = seq < chunks ? fetch(seq) : undefined;
        current.then(
          (data) => {
            if (!data) this.destroy(new Error(`blob ${key} lost chunk ${i} while being read`));
            else this.push(data);
          },
          (err: Error) => this.destroy(err),
        );
      },
    });
    return stream;
  }

  /**
   * A chunk as committed. On SQLite, inside a transaction: a read outside one would go through the
   * committed-read cache (sqlite-engine.ts), where 256 KiB rows would push out the small hot results
   * it is for. On PostgreSQL a plain read (a transaction would cost two more round trips).
   */
  #chunk(key: string, seq: number): Promise<Buffer | undefined> {
    if (this.storage.dialect === 'sqlite')
      return this.storage.transaction((s) => new BlobRowStore(s.db).chunk(key, seq));
    return this.#rows.chunk(key, seq);
  }

  async remove(key: string): Promise<void> {
    await this.#rows.delete(key);
  }

  /** Deletes blobs never attached to a file and created before `before`, in batches; how many. */
  async sweepUnattached(before: string): Promise<number> {
    let n = 0;
    for (;;) {
      const done = await this.#rows.deleteUnattached(before, 100);
      n += done;
      if (done < 100) return n;
    }
  }
}
