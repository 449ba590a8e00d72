import { createBookmark, deleteBookmark, listBookmarks } from '../../../operations/bookmarks/bookmarks.js';
import type { Route } from '../types.js';

const conflictResponse = { 409: { $ref: '#/components/responses/Error' } };

/** A channel's bookmarks. */
export const bookmarkRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/channels/{channelId}/bookmarks',
    op: createBookmark,
    status: 201,
    responses: conflictResponse,
    tags: ['bookmarks'],
  },
  { method: 'GET', path: '/api/channels/{channelId}/bookmarks', op: listBookmarks, tags: ['bookmarks'] },
  {
    method: 'DELETE',
    path: '/api/channels/{channelId}/bookmarks/{messageId}',
    op: deleteBookmark,
    tags: ['bookmarks'],
  },
];
