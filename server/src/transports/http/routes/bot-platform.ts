import { deleteBotData, getBotData, listBotData, putBotData } from '../../../operations/bots/data.js';
import { cancelJob, listJobs, scheduleJob, ScheduleJobOutput } from '../../../operations/bots/jobs.js';
import { z } from 'zod';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };

/**
 * What every bot's code stands on (docs/SCHEDULER.md): its scheduled jobs and its own data. A bot key
 * reaches only its own bot's: another {botId} answers 403 (404 when not visible), like custom commands.
 */
export const botPlatformRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/bots/{botId}/jobs',
    op: scheduleJob,
    status: 201,
    statusOf: (r) => ((r as { created: boolean }).created ? 201 : 200),
    idempotent: true,
    responses: {
      200: {
        description: 'A job with this dedupe_key existed already: it is answered, nothing is scheduled',
        content: { 'application/json': { schema: z.toJSONSchema(ScheduleJobOutput, { io: 'output' }) } },
      },
    },
    tags: ['bot jobs'],
  },
  { method: 'GET', path: '/api/bots/{botId}/jobs', op: listJobs, tags: ['bot jobs'] },
  {
    method: 'DELETE',
    path: '/api/bots/{botId}/jobs/{jobId}',
    op: cancelJob,
    responses: { 409: errorRef },
    tags: ['bot jobs'],
  },

  { method: 'GET', path: '/api/bots/{botId}/data', op: listBotData, tags: ['bot data'] },
  { method: 'GET', path: '/api/bots/{botId}/data/{key}', op: getBotData, tags: ['bot data'] },
  {
    method: 'PUT',
    path: '/api/bots/{botId}/data/{key}',
    op: putBotData,
    responses: { 409: errorRef },
    tags: ['bot data'],
  },
  {
    method: 'DELETE',
    path: '/api/bots/{botId}/data/{key}',
    op: deleteBotData,
    responses: { 409: errorRef },
    tags: ['bot data'],
  },
];
