import { sql } from 'kysely';
import type { Executor } from './executor.js';

/** A blob's row without its chunks. */
export interface BlobInfo {
  key: string;
  file_id: string | null;
  size: number;
  chunks: number;
  complete: number;
}

/** A file whose bytes are not in the database yet (`workroom move-files`). */
export interface FileOnDisk {
  id: string;
  storage_path: string;
  size: number;
  sha256: string;
}

/**
 * File bytes in the database (migration 0014; storage/blobs-database.ts): a `blobs` row per content
 * and its 256 KiB `blob_chunks`. Deleting a blob row deletes its chunks (cascade), and deleting the
 * files row it is attached to deletes the blob.
 */
export class BlobRowStore {
  constructor(private readonly db: Executor) {}

  async create(key: string, createdAt: string): Promise<void> {
    await this.db
      .insertInto('blobs')
      .values({ key, file_id: null, size: 0, chunks: 0, sha256: null, complete: 0, created_at: createdAt })
      .execute();
  }

  async putChunk(key: string, seq: number, data: Buffer): Promise<void> {
    await this.db.insertInto('blob_chunks').values({ blob_key: key, seq, data }).execute();
  }

  async complete(key: string, size: number, chunks: number, sha256: string): Promise<void> {
    await this.db
      .updateTable('blobs')
      .set({ size, chunks, sha256, complete: 1 })
      .where('key', '=', key)
      .execute();
  }

  /** Ties a complete blob to its file (in the upload's transaction): from then on it goes with the row. */
  async attach(key: string, fileId: string): Promise<boolean> {
    const r = await this.db
      .updateTable('blobs')
      .set({ file_id: fileId })
      .where('key', '=', key)
      .where('complete', '=', 1)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  info(key: string): Promise<BlobInfo | undefined> {
    return this.db
      .selectFrom('blobs')
      .select(['key', 'file_id', 'size', 'chunks', 'complete'])
      .where('key', '=', key)
      .executeTakeFirst()
      .then((r) => r && { ...r, size: Number(r.size), chunks: Number(r.chunks) });
  }

  async chunk(key: string, seq: number): Promise<Buffer | undefined> {
    const r = await this.db
      .selectFrom('blob_chunks')
      .select('data')
      .where('blob_key', '=', key)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return r?.data;
  }

  /** Deletes a blob and its chunks; true when there was one. */
  async delete(key: string): Promise<boolean> {
    const r = await this.db.deleteFrom('blobs').where('key', '=', key).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Blobs never attached to a file and created before `before` (uploads that a crash cut short). */
  async deleteUnattached(before: string, limit: number): Promise<number> {
    const keys = await this.db
      .selectFrom('blobs')
      .select('key')
      .where('file_id', 'is', null)
      .where('created_at', '<', before)
      .limit(limit)
      .execute();
    if (keys.length === 0) return 0;
    await this.db
      .deleteFrom('blobs')
      .where(
        'key',
        'in',
        keys.map((k) => k.key),
      )
      .where('file_id', 'is', null)
      .execute();
    return keys.length;
  }

  /** A page of files whose bytes are not in the database (storage path without `prefix`), by id. */
  filesNotIn(prefix: string, afterId: string, limit: number): Promise<FileOnDisk[]> {
    return this.db
      .selectFrom('files')
      .select(['id', 'storage_path', 'size', 'sha256'])
      .where('id', '>', afterId)
      .where(sql<boolean>`substr(storage_path, 1, ${prefix.length}) <> ${prefix}`)
      .orderBy('id')
      .limit(limit)
      .execute()
      .then((rows) => rows.map((r) => ({ ...r, size: Number(r.size) })));
  }

  /** Files and bytes not in the database yet (the move's total). */
  async countNotIn(prefix: string): Promise<{ files: number; bytes: number }> {
    const r = await this.db
      .selectFrom('files')
      .select((eb) => [eb.fn.countAll<number>().as('files'), eb.fn.sum<number>('size').as('bytes')])
      .where(sql<boolean>`substr(storage_path, 1, ${prefix.length}) <> ${prefix}`)
      .executeTakeFirstOrThrow();
    return { files: Number(r.files), bytes: Number(r.bytes ?? 0) };
  }

  /** Points a file at its new storage path, if it still has the old one; true when it did. */
  async repoint(fileId: string, from: string, to: string): Promise<boolean> {
    const r = await this.db
      .updateTable('files')
      .set({ storage_path: to })
      .where('id', '=', fileId)
      .where('storage_path', '=', from)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}
