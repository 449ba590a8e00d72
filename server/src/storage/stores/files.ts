import type { FileRow } from '../schema.js';
import { sql } from 'kysely';
import type { Executor } from './executor.js';
import { containsInsensitive } from './sql-helpers.js';

const LIST_COLUMNS = [
  'id',
  'uploader_type',
  'uploader_id',
  'filename',
  'content_type',
  'kind',
  'size',
  'sha256',
  'created_at',
] as const;
export type FileListRow = Pick<FileRow, (typeof LIST_COLUMNS)[number]>;

export interface FileListFilter {
  channelId: string;
  query?: string | undefined;
  kind?: string | undefined;
  sort: 'created_at' | 'filename' | 'size';
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** Metadata of uploaded files; the bytes live in the blob directory (storage/blobs.ts). */
export class FileStore {
  constructor(private readonly db: Executor) {}

  async insert(row: FileRow): Promise<void> {
    await this.db.insertInto('files').values(row).execute();
  }

  /** A file that is not deleted. */
  get(id: string): Promise<FileRow | undefined> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  }

  /** A page of a channel's files: only the columns that differ between them and that answers show. */
  listInChannel(f: FileListFilter): Promise<FileListRow[]> {
    let q = this.db
      .selectFrom('files')
      .select(LIST_COLUMNS)
      .where('channel_id', '=', f.channelId)
      .where('deleted_at', 'is', null);
    if (f.query) q = q.where(containsInsensitive('filename', f.query));
    if (f.kind) q = q.where('kind', '=', f.kind);
    // File names sort case-insensitively, the same on both dialects.
    const sortKey = f.sort === 'filename' ? sql`lower(filename)` : sql.ref(f.sort);
    return q.orderBy(sortKey, f.order).orderBy('id', f.order).limit(f.limit).offset(f.offset).execute();
  }
}
