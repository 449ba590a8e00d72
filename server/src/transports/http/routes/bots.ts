import { createBot, deleteBot, getBot, listBots, updateBot } from '../../../operations/bots/bots.js';
import { listBuiltinBots, updateBuiltinBot } from '../../../operations/bots/builtins.js';
import {
  botAuth,
  createWebhookSecret,
  issueApiKey,
  listApiKeys,
  revokeApiKey,
  updateApiKey,
} from '../../../operations/bots/keys.js';
import { listBotMemberships } from '../../../operations/bots/memberships.js';
import type { Route } from '../types.js';

/** Bot management (user token) and bot authentication (bot key). */
export const botRoutes: Route[] = [
  { method: 'POST', path: '/api/bots/auth', op: botAuth, tags: ['bots'] },
  { method: 'POST', path: '/api/bots', op: createBot, status: 201, tags: ['bots'] },
  { method: 'GET', path: '/api/bots', op: listBots, tags: ['bots'] },
  { method: 'GET', path: '/api/bots/{botId}', op: getBot, tags: ['bots'] },
  { method: 'PATCH', path: '/api/bots/{botId}', op: updateBot, tags: ['bots'] },
  { method: 'DELETE', path: '/api/bots/{botId}', op: deleteBot, tags: ['bots'] },
  { method: 'POST', path: '/api/bots/{botId}/api-keys', op: issueApiKey, status: 201, tags: ['bot keys'] },
  { method: 'GET', path: '/api/bots/{botId}/api-keys', op: listApiKeys, tags: ['bot keys'] },
  { method: 'PATCH', path: '/api/bots/{botId}/api-keys/{keyId}', op: updateApiKey, tags: ['bot keys'] },
  { method: 'DELETE', path: '/api/bots/{botId}/api-keys/{keyId}', op: revokeApiKey, tags: ['bot keys'] },
  { method: 'GET', path: '/api/bots/{botId}/memberships', op: listBotMemberships, tags: ['bot keys'] },
  // Built-in (system and platform) bots across every organization: system_admin (docs/BUILTIN-BOTS.md).
  { method: 'GET', path: '/api/builtin-bots', op: listBuiltinBots, tags: ['bots'] },
  { method: 'PATCH', path: '/api/builtin-bots/{key}', op: updateBuiltinBot, tags: ['bots'] },
  {
    method: 'POST',
    path: '/api/bots/{botId}/webhook-secret',
    op: createWebhookSecret,
    status: 201,
    tags: ['bot keys'],
  },
];
