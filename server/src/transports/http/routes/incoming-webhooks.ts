import {
  authenticateHook,
  createIncomingWebhook,
  HookRefusal,
  listIncomingWebhooks,
  postToHook,
  revokeIncomingWebhook,
} from '../../../operations/webhooks/incoming-webhooks.js';
import { findNul, readBody, sendText, tooDeep } from '../../kit/io.js';
import { enforceRateLimit } from '../../kit/rate-limit.js';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };
const slackText = (description: string) => ({
  description,
  content: { 'text/plain': { schema: { type: 'string' } } },
});

/** The JSON a request carries: a JSON body, or Slack's form post (`payload=<json>`). */
function decode(raw: Buffer, contentType: string | undefined): unknown {
  const text = raw.toString('utf8');
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  let json = text;
  if (type === 'application/x-www-form-urlencoded') {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) throw new HookRefusal(400, 'invalid_payload', 'A form post needs a payload field');
    json = payload;
  }
  let value: unknown;
  try {
    value = JSON.parse(json) as unknown;
  } catch {
    throw new HookRefusal(400, 'invalid_payload', 'The body is not JSON');
  }
  const deep = tooDeep(value);
  if (deep) throw new HookRefusal(400, 'invalid_payload', deep.message);
  if (json.includes('\\u0000') && findNul(value) !== null) {
    throw new HookRefusal(400, 'invalid_payload', 'The body contains the NUL character (U+0000)');
  }
  return value;
}

/**
 * Slack-compatible incoming webhooks (operations/webhooks/incoming-webhooks.ts): their management, and
 * the URL itself, which answers as Slack's do (text `ok`, or a text error code).
 */
export const incomingWebhookRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/incoming-webhooks',
    op: createIncomingWebhook,
    status: 201,
    tags: ['webhooks'],
  },
  { method: 'GET', path: '/api/incoming-webhooks', op: listIncomingWebhooks, tags: ['webhooks'] },
  { method: 'DELETE', path: '/api/incoming-webhooks/{id}', op: revokeIncomingWebhook, tags: ['webhooks'] },
  {
    method: 'POST',
    path: '/api/incoming-webhooks/{id}/{secret}',
    // The secret in the path is the credential (checked before the body is read).
    auth: 'none',
    tags: ['webhooks'],
    async handle(rc) {
      const { req, res, services } = rc;
      try {
        const auth = await authenticateHook(services, rc.params.id!, rc.params.secret!);
        rc.actor = auth.actor;
        await enforceRateLimit(services, auth.actor, res);
        const raw = await readBody(req, services.config.maxBodyBytes, services.config.http.bodyTimeoutMs);
        const body = decode(raw, req.headers['content-type']);
        await postToHook(services, auth, body, rc.requestId);
        sendText(res, 200, 'ok', 'text/plain; charset=utf-8');
      } catch (err) {
        if (!(err instanceof HookRefusal)) throw err;
        sendText(res, err.status, err.code, 'text/plain; charset=utf-8', {
          'x-workroom-error': err.detail.replace(/[^\x20-\x7e]/g, '?').slice(0, 300),
        });
      }
    },
    doc: {
      summary:
        "Post to a Slack-compatible incoming webhook: Slack's payload (text, blocks, attachments, username/icon_emoji where allowed), our own { content, content_html? }, or any JSON in template mode. The URL's secret is the credential. Answers text ok, or a text error code (invalid_payload, no_text, no_service, channel_not_found, action_prohibited); the header X-Workroom-Error says why.",
      security: [],
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
        { name: 'secret', in: 'path', required: true, schema: { type: 'string' } },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { type: 'object', additionalProperties: true } },
          'application/x-www-form-urlencoded': {
            schema: { type: 'object', properties: { payload: { type: 'string' } } },
          },
        },
      },
      responses: {
        200: slackText('Posted: the body is ok'),
        400: slackText('invalid_payload (not JSON, a field of the wrong type) or no_text (nothing to show)'),
        403: slackText('action_prohibited'),
        404: slackText('no_service (unknown or revoked URL) or channel_not_found'),
        413: errorRef,
        429: errorRef,
      },
    },
  },
];
