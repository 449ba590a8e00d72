import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { AppError } from '../domain/errors.js';
import type { Clock } from '../runtime/clock.js';
import type { Service } from '../runtime/lifecycle.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';
import { DatabaseBlobStore, isDatabaseKey } from './blobs-database.js';
import type { Storage } from './storage.js';
import type { Stores } from './stores/index.js';

/** What a stored upload turned out to be. */
export interface StoredBlob {
  size: number;
  sha256: string;
  /** The first bytes, for content sniffing. */
  head: Buffer;
}

export type BlobStoreKind = 'disk' | 'database';

/**
 * Where file bytes live (docs/SCALING.md, "Files"). A blob is named by a key that the `files` row keeps
 * in `storage_path`; the key says which store holds it, so files written before a change of
 * WORKROOM_BLOB_STORE (or not yet moved by `workroom move-files`) are still served.
 */
export interface BlobStore {
  /** Where new uploads go. */
  readonly kind: BlobStoreKind;
  /** A new key for an upload of an organization. */
  pathFor(orgId: string, fileId: string, now: string): string;
  /**
   * Streams `source` in under `key`, never holding the whole file. Over `maxBytes` it stops and throws
   * payload_too_large; on that or any other failure (a client that aborts) nothing of it is left.
   */
  write(key: string, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob>;
  /**
   * Ties the written bytes to their `files` row, in the upload's transaction: from then on they are
   * deleted with that row (database store; a no-op on disk).
   */
  attach(stores: Stores, key: string, fileId: string): Promise<void>;
  /** The bytes, streamed: the stream emits 'open' once they are found, 'error' when they are not. */
  open(key: string): Readable;
  remove(key: string): Promise<void>;
}

export const HEAD_BYTES = 8192;

/** Size, SHA-256 and first bytes of a stream as it passes, with the size limit. */
export class BlobMeter {
  size = 0;
  readonly #hash = createHash('sha256');
  readonly #head: Buffer[] = [];
  #headSize = 0;

  constructor(private readonly maxBytes: number) {}

  /** Counts a chunk; throws payload_too_large once the stream passes the limit. */
  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      throw new AppError('payload_too_large', `The file exceeds the upload limit of ${this.maxBytes} bytes`);
    }
    this.#hash.update(chunk);
    if (this.#headSize < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.#headSize);
      this.#head.push(Buffer.from(part)); // a copy: the chunk itself may be reused by its source
      this.#headSize += part.length;
    }
  }

  result(): StoredBlob {
    return { size: this.size, sha256: this.#hash.digest('hex'), head: Buffer.concat(this.#head) };
  }
}

/**
 * File bytes on local disk under `<dataDir>/files/` (the default; one instance). Only relative paths
 * made by the server are ever stored in the database, and every path is checked to stay inside the
 * root.
 */
export class DiskBlobStore implements BlobStore {
  readonly kind = 'disk';
  readonly root: string;

  constructor(dataDir: string) {
    this.root = resolve(dataDir, 'files');
  }

  #abs(relPath: string): string {
    const abs = resolve(this.root, relPath);
    if (!abs.startsWith(this.root + sep)) throw new Error('blob path escapes the file root');
    return abs;
  }

  /** A new relative path for an upload of an organization, spread by month. */
  pathFor(orgId: string, fileId: string, now: string): string {
    return join(orgId, now.slice(0, 4), now.slice(5, 7), fileId);
  }

  async write(relPath: string, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob> {
    const abs = this.#abs(relPath);
    await mkdir(dirname(abs), { recursive: true, mode: PRIVATE_DIR_MODE });
    const out = createWriteStream(abs, { flags: 'wx', mode: PRIVATE_FILE_MODE });
    const meter = new BlobMeter(maxBytes);
    try {
      await once(out, 'open');
      for await (const chunk of source) {
        meter.add(chunk);
        if (!out.write(chunk)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'close');
    } catch (err) {
      out.destroy();
      await rm(abs, { force: true });
      throw err;
    }
    return meter.result();
  }

  async attach(): Promise<void> {}

  open(relPath: string): Readable {
    return createReadStream(this.#abs(relPath));
  }

  async remove(relPath: string): Promise<void> {
    await rm(this.#abs(relPath), { force: true });
  }
}

/** Unattached database blobs older than this are uploads a crash cut short (a day: longer than any upload). */
const UNATTACHED_MAX_AGE_MS = 24 * 3600_000;
/** How often the leader sweeps them (app.ts registers `sweep` with the leader lease). */
export const BLOB_SWEEP_EVERY_MS = 3600_000;

/**
 * The blob store of the server (Services.blobs): new uploads go to the configured store; a key is read
 * and removed in the store it names (`db:` keys in the database, other keys on disk). Its `sweep`
 * removes database blobs never attached to a file (run hourly by the leader instance, app.ts); stopping
 * waits for a sweep in progress.
 */
export class Blobs implements BlobStore, Service {
  readonly name = 'blobs';
  readonly kind: BlobStoreKind;
  readonly disk: DiskBlobStore;
  readonly database: DatabaseBlobStore;
  #sweeping: Promise<number> | undefined;

  constructor(
    kind: BlobStoreKind,
    dataDir: string,
    storage: Storage,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.kind = kind;
    this.disk = new DiskBlobStore(dataDir);
    this.database = new DatabaseBlobStore(storage, clock);
  }

  #of(key: string): BlobStore {
    return isDatabaseKey(key) ? this.database : this.disk;
  }

  pathFor(orgId: string, fileId: string, now: string): string {
    return (this.kind === 'database' ? this.database : this.disk).pathFor(orgId, fileId, now);
  }
  write(key: string, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob> {
    return this.#of(key).write(key, source, maxBytes);
  }
  attach(stores: Stores, key: string, fileId: string): Promise<void> {
    return this.#of(key).attach(stores, key, fileId);
  }
  open(key: string): Readable {
    return this.#of(key).open(key);
  }
  remove(key: string): Promise<void> {
    return this.#of(key).remove(key);
  }

  /** Deletes database blobs no file row took within a day (uploads a crash cut short); how many. */
  sweep(): Promise<number> {
    this.#sweeping ??= this.database
      .sweepUnattached(new Date(this.clock.now() - UNATTACHED_MAX_AGE_MS).toISOString())
      .then((n) => {
        if (n > 0) this.log.info({ blobs: n }, 'removed file bytes of uploads never finished');
        return n;
      })
      .finally(() => (this.#sweeping = undefined));
    return this.#sweeping;
  }

  async stop(): Promise<void> {
    await this.#sweeping?.catch(() => undefined);
  }
}
