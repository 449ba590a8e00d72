import {
  getWebhookStatus,
  listBotEvents,
  listDeliveries,
  pauseWebhook,
  redeliver,
  resumeWebhook,
  sendTestEvent,
} from '../../../operations/webhooks/deliveries.js';
import { listNotifications, markNotificationsRead } from '../../../operations/notifications/notifications.js';
import type { Route } from '../types.js';

/** The webhook delivery log and recovery (a bot's managers; catch-up also the bot's key), notifications. */
export const deliveryRoutes: Route[] = [
  { method: 'GET', path: '/api/bots/{botId}/deliveries', op: listDeliveries, tags: ['webhooks'] },
  {
    method: 'POST',
    path: '/api/bots/{botId}/deliveries/{deliveryId}/redeliver',
    op: redeliver,
    status: 202,
    tags: ['webhooks'],
  },
  {
    method: 'POST',
    path: '/api/bots/{botId}/webhook/test',
    op: sendTestEvent,
    status: 202,
    tags: ['webhooks'],
  },
  { method: 'GET', path: '/api/bots/{botId}/webhook', op: getWebhookStatus, tags: ['webhooks'] },
  { method: 'POST', path: '/api/bots/{botId}/webhook/pause', op: pauseWebhook, tags: ['webhooks'] },
  { method: 'POST', path: '/api/bots/{botId}/webhook/resume', op: resumeWebhook, tags: ['webhooks'] },
  { method: 'GET', path: '/api/bots/{botId}/events', op: listBotEvents, tags: ['webhooks'] },
  { method: 'GET', path: '/api/notifications', op: listNotifications, tags: ['notifications'] },
  { method: 'POST', path: '/api/notifications/read', op: markNotificationsRead, tags: ['notifications'] },
];
