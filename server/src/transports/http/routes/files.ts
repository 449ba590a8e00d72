import { z } from 'zod';
import { FileView, listChannelFiles } from '../../../operations/files/files.js';
import type { Route } from '../types.js';
import { handleDownload, handleUpload } from '../upload.js';

const fileViewSchema = z.toJSONSchema(FileView, { io: 'output' });
const errorRef = { $ref: '#/components/responses/Error' };

/** A channel's files: list, upload (multipart, streamed), download. */
export const fileRoutes: Route[] = [
  { method: 'GET', path: '/api/channels/{channelId}/files', op: listChannelFiles, tags: ['files'] },
  {
    method: 'POST',
    path: '/api/channels/{channelId}/files',
    auth: 'any',
    tags: ['files'],
    handle: (rc) => handleUpload(rc, rc.params.channelId!),
    doc: {
      summary:
        'Upload a file to a channel (multipart/form-data, one file part; users: channel members; bots: scope files:write). The content type is sniffed from the bytes.',
      'x-bot-scope': 'files:write',
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: { file: { type: 'string', format: 'binary' } },
            },
          },
        },
      },
      responses: {
        201: { description: 'Stored', content: { 'application/json': { schema: fileViewSchema } } },
        400: errorRef,
        401: errorRef,
        403: errorRef,
        404: errorRef,
        413: errorRef,
        415: errorRef,
        429: errorRef,
      },
    },
  },
  {
    method: 'GET',
    path: '/api/files/{fileId}',
    auth: 'any',
    tags: ['files'],
    handle: (rc) => handleDownload(rc, rc.params.fileId!),
    doc: {
      summary:
        'Download a file (scope files:read): always Content-Disposition: attachment with X-Content-Type-Options: nosniff',
      'x-bot-scope': 'files:read',
      responses: {
        200: {
          description: 'The bytes, with the sniffed Content-Type',
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        },
        401: errorRef,
        403: errorRef,
        404: errorRef,
        429: errorRef,
      },
    },
  },
];
