import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { AppError } from '../../domain/errors.js';
import { getFileForDownload, uploadFile, type FileView } from '../../operations/files/files.js';
import { runOperation } from '../../operations/operation.js';
import { sendJson } from '../kit/io.js';
import type { RequestContext } from './types.js';

/** Answers, then closes the connection instead of reading the rest of the request. */
function closeAfterResponse(rc: RequestContext): void {
  rc.res.setHeader('connection', 'close');
  rc.res.once('finish', () => rc.req.socket.destroy());
}

/**
 * Multipart upload: the first file part is streamed straight to disk by the upload operation (it
 * checks access before writing a byte). After an error the rest of the request is read and dropped,
 * so that the client receives the answer instead of a reset connection — up to a cap (twice the
 * upload limit, at least the limit plus 8 MiB); beyond it the server answers 413 and closes.
 */
export async function handleUpload(rc: RequestContext, channelId: string): Promise<void> {
  const type = rc.req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\b/i.test(type)) {
    rc.req.resume();
    throw new AppError('unsupported_media_type', 'Content-Type must be multipart/form-data with a file part');
  }
  const max = rc.services.config.maxUploadBytes;
  const cap = Math.max(2 * max, max + 8 * 1_048_576);
  const tooLarge = () =>
    new AppError('payload_too_large', `The file exceeds the upload limit of ${max} bytes`);
  const declared = Number(rc.req.headers['content-length']);
  if (Number.isFinite(declared) && declared > cap) {
    closeAfterResponse(rc);
    throw tooLarge();
  }
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: rc.req.headers,
      limits: { files: 1, fileSize: max + 1, fields: 20, fieldSize: 10_000, parts: 40 },
      defParamCharset: 'utf8',
    });
  } catch {
    rc.req.resume();
    throw new AppError('invalid_input', 'file: the multipart body has no boundary', { field: 'file' });
  }
  let upload: Promise<FileView> | undefined;
  let part: Readable | undefined;
  bb.on('file', (_field: string, stream: Readable, info: busboy.FileInfo) => {
    if (upload) {
      stream.resume();
      return;
    }
    part = stream;
    // Errors of the part also reach the reader; this listener only keeps them from being uncaught.
    stream.on('error', () => undefined);
    upload = runOperation(
      uploadFile,
      { actor: rc.actor!, services: rc.services, requestId: rc.requestId },
      // A reader that stops early (over the limit) must not destroy the part: busboy would stall.
      { channel_id: channelId, filename: info.filename, file: stream.iterator({ destroyOnReturn: false }) },
    );
    // After a failure, keep draining the part so that the request can be read to its end.
    upload.catch(() => stream.resume());
  });
  let received = 0;
  const parsed = new Promise<void>((resolve, reject) => {
    rc.req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > cap) reject(tooLarge());
    });
    bb.on('close', resolve);
    // A client that goes away mid-body: the part never ends, so the writer is stopped here (it removes
    // what it wrote) instead of waiting for bytes that will not come.
    rc.req.on('close', () => {
      if (rc.req.complete) return;
      const gone = new AppError('invalid_input', 'file: the client closed the connection mid-upload', {
        field: 'file',
      });
      part?.destroy(gone);
      reject(gone);
    });
    bb.on('error', (err: Error) =>
      reject(
        new AppError('invalid_input', `file: malformed multipart body (${err.message})`, { field: 'file' }),
      ),
    );
  });
  rc.req.pipe(bb);
  try {
    await parsed;
  } catch (err) {
    rc.req.unpipe(bb);
    if (received > cap) {
      // Stop the writer (it removes its partial file) and do not read any further.
      part?.destroy(tooLarge());
      closeAfterResponse(rc);
    } else rc.req.resume();
    if (upload) await upload.catch(() => undefined);
    throw err;
  }
  if (!upload) throw new AppError('invalid_input', 'file: a file part is required', { field: 'file' });
  sendJson(rc.res, 201, await upload);
}

/** RFC 6266 Content-Disposition: always an attachment, with an ASCII fallback name. */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** Streams a file as an attachment that a browser never renders inline. */
export async function handleDownload(rc: RequestContext, fileId: string): Promise<void> {
  const { file, open } = await runOperation(
    getFileForDownload,
    { actor: rc.actor!, services: rc.services, requestId: rc.requestId },
    { file_id: fileId },
  );
  const stream = open();
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', () => reject(new AppError('not_found', 'File content not found')));
  });
  rc.res.writeHead(200, {
    'content-type': file.content_type,
    'content-length': file.size,
    'content-disposition': attachmentDisposition(file.filename),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, no-store',
    etag: `"${file.sha256}"`,
  });
  stream.pipe(rc.res);
  await new Promise<void>((resolve) => rc.res.on('close', () => resolve()));
  stream.destroy();
}
