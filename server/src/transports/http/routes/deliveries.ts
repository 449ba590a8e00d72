import {
  getWebhookStatus,
  listBotEvents,
  listDeliveries,
  pauseWebhook,
  redeliver,
  resumeWebhook,
  setWebhookRateLimit,
  sendTestEvent,
} from '../../../operations/webhooks/deliveries.js';
import type { Route } from '../types.js';

/** The webhook delivery log and recovery (a bot's managers; catch-up also the bot's key). */
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
  {
    method: 'PUT',
    path: '/api/bots/{botId}/webhook/rate-limit',
    op: setWebhookRateLimit,
    tags: ['webhooks'],
  },
  { method: 'GET', path: '/api/bots/{botId}/events', op: listBotEvents, tags: ['webhooks'] },
];
