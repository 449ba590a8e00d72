import { z } from 'zod';
import { EVENT_CATALOGUE, INTERNAL_EVENT_TYPES } from '../../domain/events.js';
import { toolOf } from '../../domain/grants.js';
import { HTTP_STATUS } from '../kit/errors.js';
import { camelToSnake } from '../kit/io.js';
import { isOpRoute, type Route } from './types.js';

type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  [k: string]: unknown;
};

const ErrorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(HTTP_STATUS) },
        message: { type: 'string' },
        field: { type: 'string' },
        scope: { type: 'string' },
        grant: { type: 'string' },
        paused_at: { type: 'string', description: 'key_paused: when the key was paused' },
        paused_reason: { type: 'string', description: 'key_paused: why' },
      },
    },
  },
};

const errorResponses = {
  400: { $ref: '#/components/responses/Error' },
  401: { $ref: '#/components/responses/Error' },
  403: { $ref: '#/components/responses/Error' },
  404: { $ref: '#/components/responses/Error' },
  429: { $ref: '#/components/responses/Error' },
};

function toSchema(s: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
  return out;
}

/**
 * The OpenAPI 3.1 document, generated from the routes and the same zod schemas that validate input:
 * path parameters from the path, the rest of the input as query (GET/DELETE) or JSON body.
 */
export function buildOpenApi(routes: Route[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    let op: Record<string, unknown>;
    if (isOpRoute(r)) {
      const input = toSchema(r.op.input, 'input');
      const props = { ...(input.properties ?? {}) };
      const required = new Set(input.required ?? []);
      const parameters: unknown[] = pathParams.map((p) => {
        const field = r.params?.[p] ?? camelToSnake(p);
        const schema = props[field] ?? { type: 'string' };
        delete props[field];
        required.delete(field);
        return { name: p, in: 'path', required: true, schema };
      });
      const hasBody = r.method === 'POST' || r.method === 'PUT' || r.method === 'PATCH';
      let requestBody: unknown;
      if (hasBody) {
        const schema: JsonSchema = { ...input, properties: props, required: [...required] };
        if (schema.required?.length === 0) delete schema.required;
        requestBody = { required: required.size > 0, content: { 'application/json': { schema } } };
      } else {
        for (const [name, schema] of Object.entries(props)) {
          parameters.push({ name, in: 'query', required: required.has(name), schema });
        }
      }
      if (r.idempotent) {
        parameters.push({
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'A retry with the same key and body answers the first result (Idempotent-Replayed: true) and changes nothing again; another body answers 409. Kept 24 hours.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        });
      }
      if (r.op.dryRun) {
        parameters.push({
          name: 'X-Dry-Run',
          in: 'header',
          required: false,
          description:
            'true: a dry run (docs/API.md, "Dry runs"). Validates and checks scope, grants, containers and write budget, then answers 200 `{ dry_run: true, operation, target, result, events, approval_required }` (result: what the call would answer) without writing, emitting or spending anything.',
          schema: { type: 'string', enum: ['true', 'false', '1', '0'] },
        });
      }
      const scope = r.op.scope;
      op = {
        operationId: `${r.method.toLowerCase()}:${r.path}`,
        summary: r.op.summary,
        tags: r.tags,
        'x-operation': r.op.name,
        'x-callers': r.op.actors,
        ...(scope ? { 'x-bot-scope': scope } : {}),
        security: [{ bearer: [] }],
        parameters,
        ...(requestBody ? { requestBody } : {}),
        responses: {
          [String(r.status ?? 200)]: {
            description: 'Success',
            content: { 'application/json': { schema: r.op.output ? toSchema(r.op.output, 'output') : {} } },
          },
          ...errorResponses,
          ...(r.idempotent ? { 409: { $ref: '#/components/responses/Error' } } : {}),
          // A bot key whose grants hold this tool for a human's approval gets 202 (docs/API.md, "Approval").
          // Described, not typed: the SDKs' return types stay the call's own result.
          ...(toolOf(r.op.name) && r.op.actors.includes('bot')
            ? {
                202: {
                  description:
                    'Held for approval (a bot key whose grant `approval` names the tool behind this call): `{ "status": "pending_approval", "pending_action": … }` (the pending action as GET /api/bots/me/pending-actions/{pendingActionId} answers it); nothing was done yet, it runs once an approver approves it (docs/API.md, "Approval")',
                },
              }
            : {}),
          ...(r.responses ?? {}),
        },
      };
    } else {
      op = {
        operationId: `${r.method.toLowerCase()}:${r.path}`,
        tags: r.tags,
        ...(r.auth === 'none' ? { security: [] } : { security: [{ bearer: [] }] }),
        parameters: pathParams.map((p) => ({
          name: p,
          in: 'path',
          required: true,
          schema: { type: 'string' },
        })),
        responses: { 200: { description: 'Success' }, ...errorResponses },
        ...(r.doc ?? {}),
      };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Workroom API',
      version: '0.1.0',
      description:
        'REST API of Workroom. Authenticate with `Authorization: Bearer <token>`: a user token from POST /api/auth/login, or a bot API key. Errors answer `{ "error": { "code", "message" } }`.',
    },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: ErrorBody },
      responses: {
        Error: {
          description: 'Error',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    },
    paths,
    webhooks: webhooksFromCatalogue(),
  };
}

/**
 * The `webhooks` section (OpenAPI 3.1): one entry per event type a bot can receive, from the event
 * catalogue. Each is the POST Workroom sends to the bot's webhook URL: the envelope with that event's
 * `data`, signed as docs/WEBHOOKS.md describes.
 */
function webhooksFromCatalogue(): Record<string, unknown> {
  const internal = new Set<string>(INTERNAL_EVENT_TYPES);
  const out: Record<string, unknown> = {};
  for (const [type, entry] of Object.entries(EVENT_CATALOGUE)) {
    if (internal.has(type)) continue;
    out[type] = {
      post: {
        operationId: `webhook:${type}`,
        summary: entry.description,
        description:
          'Sent to the webhook URL of each bot that receives this event. Verify the signature before parsing: the body `signature` (sha256= HMAC of the body without it), `X-Workroom-Signature` (sha256= HMAC of the raw body) and the Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature`. Answer 2xx within the time-out (5 s); anything else is retried.',
        parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-workroom-signature'].map(
          (name) => ({ name, in: 'header', required: true, schema: { type: 'string' } }),
        ),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['event_type', 'timestamp', 'bot_id', 'data', 'event_id', 'signature'],
                properties: {
                  event_type: { const: type },
                  timestamp: { type: 'string', description: 'When the event happened, ISO 8601' },
                  bot_id: { type: 'string', description: 'The receiving bot' },
                  data: z.toJSONSchema(entry.data, { io: 'input', unrepresentable: 'any' }),
                  event_id: {
                    type: 'string',
                    description: 'Unique id of the event (the same on every retry)',
                  },
                  signature: {
                    type: 'string',
                    description: 'sha256= and the hex HMAC-SHA256 of the body without this member',
                  },
                },
              },
            },
          },
        },
        responses: { 200: { description: 'Received (any 2xx)' } },
      },
    };
  }
  return out;
}
