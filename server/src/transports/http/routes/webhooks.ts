import { z } from 'zod';
import { SendMessageInput } from '../../../operations/messages/messages.js';
import { MessageView } from '../../../operations/views.js';
import {
  createIncomingToken,
  getIncomingToken,
  revokeIncomingToken,
} from '../../../operations/webhooks/incoming-token.js';
import { authenticateIncoming, receiveIncoming } from '../../../operations/webhooks/incoming.js';
import { headerValue, parseJsonObject, readBody, sendJson } from '../../kit/io.js';
import { enforceRateLimit } from '../../kit/rate-limit.js';
import type { Route } from '../types.js';
import { incomingWebhookRoutes } from './incoming-webhooks.js';
import {
  createSigningKey,
  deleteSigningKey,
  getSigningKey,
} from '../../../operations/webhooks/signing-key.js';
import { withFields } from '../../../domain/objects.js';

const errorRef = { $ref: '#/components/responses/Error' };

const EMPTY = Buffer.alloc(0);

/** The incoming webhook and the management of its token. */
export const webhookRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/webhooks/incoming/{botId}',
    // Authenticated by the handler: a bot key, the incoming token or a signature (see incoming.ts).
    auth: 'none',
    tags: ['webhooks'],
    async handle(rc) {
      const { req, services } = rc;
      const credentials = {
        botId: rc.params.botId!,
        authorization: req.headers.authorization,
        token: rc.url.searchParams.get('token') ?? undefined,
        headers: {
          'x-workroom-signature': headerValue(req.headers, 'x-workroom-signature'),
          'webhook-id': headerValue(req.headers, 'webhook-id'),
          'webhook-timestamp': headerValue(req.headers, 'webhook-timestamp'),
          'webhook-signature': headerValue(req.headers, 'webhook-signature'),
        },
      };
      // A key or a token does not depend on the body: it is checked before the body is read. Only a
      // signed request's body must be read first (the signature covers its exact bytes), under the
      // budget of bodies read for callers not yet known (body-budget.ts).
      const signed = credentials.authorization === undefined && credentials.token === undefined;
      const early = signed
        ? undefined
        : await authenticateIncoming(services, withFields(credentials, { rawBody: EMPTY }));
      const { maxBodyBytes, http } = services.config;
      const rawBody = await readBody(
        req,
        maxBodyBytes,
        http.bodyTimeoutMs,
        early ? undefined : rc.unauthenticatedBody,
      );
      const auth = early ?? (await authenticateIncoming(services, withFields(credentials, { rawBody })));
      rc.actor = auth.actor;
      await enforceRateLimit(services, auth.actor, rc.res);
      const input = parseJsonObject(rawBody, req.headers['content-type']);
      const key = headerValue(req.headers, 'idempotency-key');
      const r = await receiveIncoming(services, auth, input, key, rc.requestId);
      sendJson(rc.res, r.status, r.body, r.replayed ? { 'idempotent-replayed': 'true' } : {});
    },
    doc: {
      summary:
        "Incoming webhook: post a message as the bot into a channel, topic or DM room it belongs to. Authenticate with the bot's API key (scope messages:write), its incoming token (?token=), or a signature of the body with its webhook secret (docs/WEBHOOKS.md).",
      'x-bot-scope': 'messages:write',
      security: [{ bearer: [] }, {}],
      parameters: [
        { name: 'botId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
        {
          name: 'token',
          in: 'query',
          required: false,
          description: 'The incoming token (POST /api/bots/{botId}/incoming-token), instead of a bot key',
          schema: { type: 'string' },
        },
        ...['X-Workroom-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
          name,
          in: 'header',
          required: false,
          schema: { type: 'string' },
        })),
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'A retry with the same key and body answers the first result and posts nothing again.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: z.toJSONSchema(SendMessageInput, { io: 'input' }) } },
      },
      responses: {
        201: {
          description: 'Posted',
          content: { 'application/json': { schema: z.toJSONSchema(MessageView, { io: 'output' }) } },
        },
        400: errorRef,
        401: errorRef,
        403: errorRef,
        404: errorRef,
        409: errorRef,
        413: errorRef,
        415: errorRef,
        429: errorRef,
      },
    },
  },
  {
    method: 'POST',
    path: '/api/bots/{botId}/incoming-token',
    op: createIncomingToken,
    status: 201,
    tags: ['bot keys'],
  },
  { method: 'GET', path: '/api/bots/{botId}/incoming-token', op: getIncomingToken, tags: ['bot keys'] },
  { method: 'DELETE', path: '/api/bots/{botId}/incoming-token', op: revokeIncomingToken, tags: ['bot keys'] },
  // ed25519 (Standard Webhooks v1a) signatures of outgoing deliveries, an option per bot.
  {
    method: 'POST',
    path: '/api/bots/{botId}/webhook-signing-key',
    op: createSigningKey,
    status: 201,
    tags: ['bot keys'],
  },
  { method: 'GET', path: '/api/bots/{botId}/webhook-signing-key', op: getSigningKey, tags: ['bot keys'] },
  {
    method: 'DELETE',
    path: '/api/bots/{botId}/webhook-signing-key',
    op: deleteSigningKey,
    tags: ['bot keys'],
  },
  // Slack-compatible incoming webhooks: a URL per webhook, carrying its container and its secret.
  ...incomingWebhookRoutes,
];
