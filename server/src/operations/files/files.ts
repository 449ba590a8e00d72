import type { Readable } from 'node:stream';
import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import { newId, nowIso } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import type { FileRow } from '../../storage/schema.js';
import { containerOf } from '../../storage/stores/messages.js';
import { actorRef } from '../context.js';
import { loadChannel, loadContainer } from '../access.js';
import { defineOperation } from '../operation.js';
import { limit, offset, uuid } from '../schemas.js';
import { chargeUpload, quotaExceeded, uploadRoom } from '../quotas.js';
import { write } from '../write.js';
import { sniffContentType } from './sniff.js';

/**
 * Files of channels: uploaded as a stream to the blob store (storage/blobs.ts: disk or database), typed
 * from their bytes (never from what the client says), listed with the spec's query, downloaded always as
 * an attachment.
 */

export const FileView = z.object({
  id: z.string(),
  org_id: z.string(),
  channel_id: z.string().nullable(),
  topic_id: z.string().nullable(),
  dm_room_id: z.string().nullable(),
  filename: z.string(),
  content_type: z.string().describe('Sniffed from the bytes'),
  kind: z.enum(['image', 'document', 'media', 'archive', 'other']),
  size: z.number(),
  sha256: z.string(),
  uploader_type: z.enum(['user', 'bot']),
  uploader_id: z.string(),
  created_at: z.string(),
  download_url: z.string(),
});
export type FileView = z.infer<typeof FileView>;
export const fileView = (f: Omit<FileRow, 'storage_path' | 'deleted_at'>): FileView => ({
  id: f.id,
  org_id: f.org_id,
  channel_id: f.channel_id,
  topic_id: f.topic_id,
  dm_room_id: f.dm_room_id,
  filename: f.filename,
  content_type: f.content_type,
  kind: f.kind as FileView['kind'],
  size: Number(f.size),
  sha256: f.sha256,
  uploader_type: f.uploader_type,
  uploader_id: f.uploader_id,
  created_at: f.created_at,
  download_url: `/api/files/${f.id}`,
});

/** A display name that is safe anywhere: no path, no control characters, at most 255 characters. */
export function cleanFilename(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  const cleaned = [...base]
    .filter((ch) => ch !== '"' && ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) !== 0x7f)
    .join('')
    .trim()
    .slice(0, 255);
  return cleaned === '' || cleaned === '.' || cleaned === '..' ? 'file' : cleaned;
}

export const uploadFile = defineOperation({
  name: 'files.upload',
  summary: 'Upload a file to a channel (multipart/form-data, one file part)',
  input: z.strictObject({
    channel_id: uuid('channel'),
    filename: z.string().max(10_000).optional(),
    file: z.custom<Readable>(
      (v) => v !== null && typeof v === 'object' && Symbol.asyncIterator in v,
      'must be a file',
    ),
  }),
  output: FileView,
  actors: ['user', 'bot'],
  scope: 'files:write',
  async run(ctx, input) {
    const { services, actor } = ctx;
    const ch = await loadChannel(services.storage.stores, actor, input.channel_id, 'write');
    const id = newId();
    const blobs = services.blobs;
    const relPath = blobs.pathFor(ch.org_id, id, nowIso());
    const filename = cleanFilename(input.filename);
    const uploader = actorRef(actor);
    // Refused before a byte is read when at a quota; the bytes stream only up to what is left of it.
    const room = await uploadRoom(services.storage.stores, services.config, ch.org_id, uploader);
    const maxBytes = Math.min(services.config.maxUploadBytes, room.bytes);
    let stored;
    try {
      stored = await blobs.write(relPath, input.file, maxBytes);
    } catch (e) {
      if (
        e instanceof AppError &&
        e.code === 'payload_too_large' &&
        maxBytes < services.config.maxUploadBytes
      ) {
        // Over what is left of a quota: say which (recounted, as others may have uploaded meanwhile).
        await uploadRoom(services.storage.stores, services.config, ch.org_id, uploader);
        throw quotaExceeded(
          services.config,
          room.quota,
          `this file is larger than the ${maxBytes} bytes left of it`,
        );
      }
      throw e;
    }
    const sniffed = sniffContentType(stored.head, filename);
    try {
      return await write(ctx, async ({ stores, now }) => {
        // Membership may have changed while the bytes were streaming.
        await loadChannel(stores, actor, ch.id, 'write');
        const row: FileRow = {
          id,
          org_id: ch.org_id,
          channel_id: ch.id,
          topic_id: null,
          dm_room_id: null,
          uploader_type: uploader.type,
          uploader_id: uploader.id,
          filename,
          content_type: sniffed.contentType,
          kind: sniffed.kind,
          size: stored.size,
          sha256: stored.sha256,
          storage_path: relPath,
          created_at: now,
          deleted_at: null,
        };
        await chargeUpload(stores, services.config, ch.org_id, uploader, stored.size);
        await stores.files.insert(row);
        // The database store ties the bytes to the row: deleted with it (a no-op on disk).
        await blobs.attach(stores, relPath, id);
        return fileView(row);
      });
    } catch (e) {
      await blobs.remove(relPath);
      throw e;
    }
  },
});

export const listChannelFiles = defineOperation({
  name: 'files.list',
  summary: 'Files of a channel you can see, with file-name search, type filter, sort and paging',
  input: z.strictObject({
    channel_id: uuid('channel'),
    q: z
      .string({ message: 'must be a string' })
      .max(LIMITS.fileQuery, `must be at most ${LIMITS.fileQuery} characters`)
      .optional(),
    type: z
      .enum(['image', 'document', 'media', 'archive'], {
        message: 'must be image, document, media or archive',
      })
      .optional(),
    sort: z
      .enum(['created_at', 'filename', 'size'], { message: 'must be created_at, filename or size' })
      .default('created_at'),
    order: z.enum(['asc', 'desc'], { message: 'must be asc or desc' }).default('desc'),
    limit: limit(LIMITS.channelFiles.default, LIMITS.channelFiles.max),
    offset: offset.refine((n) => n <= 1_000_000, 'must be at most 1000000'),
  }),
  output: z.object({
    items: z.array(FileView),
    limit: z.number(),
    offset: z.number(),
    has_more: z.boolean(),
  }),
  actors: ['user', 'bot'],
  scope: 'files:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const ch = await loadChannel(stores, ctx.actor, input.channel_id, 'read');
    const rows = await stores.files.listInChannel({
      channelId: ch.id,
      query: input.q,
      kind: input.type,
      sort: input.sort,
      order: input.order,
      limit: input.limit + 1,
      offset: input.offset,
    });
    return {
      items: rows
        .slice(0, input.limit)
        .map((r) =>
          fileView({ ...r, org_id: ch.org_id, channel_id: ch.id, topic_id: null, dm_room_id: null }),
        ),
      limit: input.limit,
      offset: input.offset,
      has_more: rows.length > input.limit,
    };
  },
});

/** A file the caller may read, with a way to open its bytes (for the download transport). */
export const getFileForDownload = defineOperation({
  name: 'files.download',
  summary: 'Download a file (always as an attachment)',
  input: z.strictObject({ file_id: uuid('file') }),
  actors: ['user', 'bot'],
  scope: 'files:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const f = await stores.files.get(input.file_id);
    if (!f) throw notFound('File');
    try {
      await loadContainer(stores, ctx.actor, containerOf(f), 'read');
    } catch (e) {
      if (e instanceof AppError && e.code === 'not_found') throw notFound('File');
      throw e;
    }
    const blobs = ctx.services.blobs;
    return { file: fileView(f), open: () => blobs.open(f.storage_path) };
  },
});
