import type { Route } from '../types.js';
import { sendJson } from '../../kit/io.js';

/**
 * Health (the OpenAPI document itself is served by index.ts). `/api/health` answers as it always has
 * (the database reachable); `/api/health/live` and `/api/health/ready` split it for orchestrators
 * (docs/METRICS.md, "Health"): liveness — restart me if this fails — asks nothing of the database;
 * readiness — send me traffic — asks the database, the migrations and the workers.
 */
const LIVE_SCHEMA = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', enum: ['ok'] } },
};
const READY_SCHEMA = {
  type: 'object',
  required: ['status', 'database', 'migrations', 'workers', 'dialect'],
  properties: {
    status: { type: 'string', enum: ['ok', 'unavailable'] },
    database: { type: 'string', enum: ['ok', 'unreachable', 'unknown'] },
    migrations: { type: 'string', enum: ['applied', 'differ', 'unknown'] },
    workers: { type: 'string', enum: ['starting', 'running', 'stopping'] },
    dialect: { type: 'string', enum: ['sqlite', 'postgres'] },
  },
};

export const systemRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/health',
    auth: 'none',
    tags: ['system'],
    doc: {
      summary: 'Whether the server and its database are up',
      responses: { 200: { description: 'ok' }, 503: { description: 'database unreachable' } },
    },
    async handle(rc) {
      const database = await rc.services.storage.ping();
      sendJson(rc.res, database ? 200 : 503, {
        status: database ? 'ok' : 'unavailable',
        database: database ? 'ok' : 'unreachable',
        dialect: rc.services.storage.dialect,
      });
    },
  },
  {
    method: 'GET',
    path: '/api/health/live',
    auth: 'none',
    tags: ['system'],
    doc: {
      summary: 'Liveness: the process answers requests (nothing else is checked)',
      responses: {
        200: {
          description: 'alive',
          content: { 'application/json': { schema: LIVE_SCHEMA } },
        },
      },
    },
    handle(rc) {
      sendJson(rc.res, 200, { status: 'ok' }, { 'cache-control': 'no-store' });
      return Promise.resolve();
    },
  },
  {
    method: 'GET',
    path: '/api/health/ready',
    auth: 'none',
    tags: ['system'],
    doc: {
      summary: "Readiness: the database answers, its migrations are this version's, and the workers run",
      responses: {
        200: { description: 'ready', content: { 'application/json': { schema: READY_SCHEMA } } },
        503: {
          description: 'not ready (database unreachable, migrations differ, starting or shutting down)',
          content: { 'application/json': { schema: READY_SCHEMA } },
        },
      },
    },
    async handle(rc) {
      const r = await rc.services.readiness?.check();
      const ready = r?.ready ?? false;
      sendJson(
        rc.res,
        ready ? 200 : 503,
        {
          status: ready ? 'ok' : 'unavailable',
          database: r?.database ?? 'unknown',
          migrations: r?.migrations ?? 'unknown',
          workers: r?.workers ?? 'unknown',
          dialect: rc.services.storage.dialect,
        },
        { 'cache-control': 'no-store' },
      );
    },
  },
];
