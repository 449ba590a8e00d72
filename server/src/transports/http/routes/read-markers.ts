import { listUnread, markRead } from '../../../operations/read-markers/read-markers.js';
import type { Route } from '../types.js';

/** Server-side unread state: mark a container read up to a message; unread counts of everything followed. */
export const readMarkerRoutes: Route[] = [
  { method: 'POST', path: '/api/channels/{channelId}/read', op: markRead, tags: ['unread'] },
  { method: 'POST', path: '/api/topics/{topicId}/read', op: markRead, tags: ['unread'] },
  { method: 'POST', path: '/api/dm-rooms/{dmRoomId}/read', op: markRead, tags: ['unread'] },
  { method: 'GET', path: '/api/unread', op: listUnread, tags: ['unread'] },
];
