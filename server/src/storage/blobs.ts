import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { dirname, join, resolve, sep } from 'node:path';
import { AppError } from '../domain/errors.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';

/** What a stored upload turned out to be. */
export interface StoredBlob {
  size: number;
  sha256: string;
  /** The first bytes, for content sniffing. */
  head: Buffer;
}

const HEAD_BYTES = 8192;

/**
 * File bytes on local disk under `<dataDir>/files/`. Only relative paths made by the server are ever
 * stored in the database, and every path is checked to stay inside the root.
 */
export class BlobStore {
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

  /**
   * Streams `source` to `relPath`. Over `maxBytes` it stops, removes the partial file and throws
   * payload_too_large; any other failure also removes the partial file.
   */
  async write(relPath: string, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob> {
    const abs = this.#abs(relPath);
    await mkdir(dirname(abs), { recursive: true, mode: PRIVATE_DIR_MODE });
    const out = createWriteStream(abs, { flags: 'wx', mode: PRIVATE_FILE_MODE });
    const hash = createHash('sha256');
    const headParts: Buffer[] = [];
    let headSize = 0;
    let size = 0;
    try {
      await once(out, 'open');
      for await (const chunk of source) {
        size += chunk.length;
        if (size > maxBytes) {
          throw new AppError('payload_too_large', `The file exceeds the upload limit of ${maxBytes} bytes`);
        }
        hash.update(chunk);
        if (headSize < HEAD_BYTES) {
          headParts.push(chunk.subarray(0, HEAD_BYTES - headSize));
          headSize += Math.min(chunk.length, HEAD_BYTES - headSize);
        }
        if (!out.write(chunk)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'close');
    } catch (err) {
      out.destroy();
      await rm(abs, { force: true });
      throw err;
    }
    return { size, sha256: hash.digest('hex'), head: Buffer.concat(headParts) };
  }

  open(relPath: string): ReadStream {
    return createReadStream(this.#abs(relPath));
  }

  async remove(relPath: string): Promise<void> {
    await rm(this.#abs(relPath), { force: true });
  }
}
