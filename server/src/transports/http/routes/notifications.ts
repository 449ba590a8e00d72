import { listNotifications, markNotificationsRead } from '../../../operations/notifications/notifications.js';
import type { Route } from '../types.js';

/** A person's notifications. */
export const notificationRoutes: Route[] = [
  { method: 'GET', path: '/api/notifications', op: listNotifications, tags: ['notifications'] },
  { method: 'POST', path: '/api/notifications/read', op: markNotificationsRead, tags: ['notifications'] },
];
