import { hashtagPreview, searchHashtags } from '../../../operations/hashtags/hashtags.js';
import { searchMentions } from '../../../operations/mentions/mentions.js';
import type { Route } from '../types.js';

/** The composer's look-ups: @mentions and #hashtags (search and preview card). */
export const mentionRoutes: Route[] = [
  { method: 'GET', path: '/api/mentions/users', op: searchMentions, tags: ['mentions'] },
  { method: 'GET', path: '/api/hashtags/search', op: searchHashtags, tags: ['hashtags'] },
  { method: 'GET', path: '/api/hashtags/preview/{type}/{id}', op: hashtagPreview, tags: ['hashtags'] },
];
