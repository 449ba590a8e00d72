import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * Issue 18, point 2: file bytes in the database, so that every instance on one PostgreSQL serves every
 * file (storage/blobs-database.ts, WORKROOM_BLOB_STORE=database).
 *
 * `blobs`: one row per stored file content, keyed by the `files.storage_path` that names it
 * (`db:<file id>`). It is written before its `files` row exists (the bytes stream first), then
 * attached to that row (`file_id`) in the upload's transaction. Deleting the file row (directly or by
 * the cascade of its organization, channel, topic or DM room) deletes the blob and its chunks with it.
 * A blob never attached (a crash mid-upload) is swept by age (`blobs_unattached`).
 *
 * `blob_chunks`: the bytes, 256 KiB a row, numbered from 0. On PostgreSQL the column is stored
 * EXTERNAL: out of line without compression (uploads are mostly compressed already: PDF, images,
 * archives; compressing them again costs CPU on every write for nothing).
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('blobs')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('file_id', 'text', (c) => c.references('files.id').onDelete('cascade'))
    .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('chunks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sha256', 'text')
    .addColumn('complete', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // The cascade from files (PostgreSQL scans the referencing column) and the sweep of unattached blobs.
  await db.schema.createIndex('blobs_unattached').on('blobs').columns(['file_id', 'created_at']).execute();

  await db.schema
    .createTable('blob_chunks')
    .addColumn('blob_key', 'text', (c) => c.notNull().references('blobs.key').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
    .addPrimaryKeyConstraint('blob_chunks_pk', ['blob_key', 'seq'])
    .execute();
  if (dialect === 'postgres')
    await sql`alter table blob_chunks alter column data set storage external`.execute(db);
}
