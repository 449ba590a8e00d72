import { z } from 'zod';
import { AppError, conflict, invalid, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { ScheduledJobRow } from '../../storage/schema.js';
import type { JobState } from '../../storage/stores/scheduled-jobs.js';
import { defineOperation } from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { write } from '../write.js';
import { loadOwnBot } from './own-bot.js';

/**
 * A bot's scheduled jobs (docs/SCHEDULER.md): the bot schedules, lists and cancels its own jobs only.
 * When a job is due, the scheduler runs it: a built-in bot's handler in process, or, for a custom bot,
 * a `job.due` event delivered to its webhook.
 */

export const JOB_LIMITS = {
  kind: 64,
  dedupeKey: 200,
  payloadBytes: 16 * 1024,
  /** How far ahead a job may be scheduled. */
  horizonMs: 366 * 86_400_000,
  /** How far in the past run_at may be (clock skew): it then runs at once. */
  pastMs: 60_000,
  /** Jobs of one bot that are pending or running at once. */
  openPerBot: 10_000,
  list: { default: 50, max: 100 },
} as const;

export const JOB_KIND_RE = /^[a-z0-9_.:-]{1,64}$/;
const JOB_STATES = ['pending', 'running', 'done', 'failed', 'cancelled'] as const;

export const JobView = z.object({
  id: z.string(),
  bot_id: z.string(),
  kind: z.string(),
  dedupe_key: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()),
  run_at: z.string().describe('When the job is (or was last) due; a retry moves it later'),
  state: z.enum(JOB_STATES),
  attempts: z.number().int().describe('Attempts started so far'),
  last_error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  done_at: z.string().nullable(),
});
export type JobViewT = z.infer<typeof JobView>;

export const jobView = (j: ScheduledJobRow): JobViewT => ({
  id: j.id,
  bot_id: j.bot_id,
  kind: j.kind,
  dedupe_key: j.dedupe_key,
  payload: JSON.parse(j.payload) as Record<string, unknown>,
  run_at: j.run_at,
  state: j.state,
  attempts: j.attempts,
  last_error: j.last_error,
  created_at: j.created_at,
  updated_at: j.updated_at,
  done_at: j.done_at,
});

/** A JSON object of at most `maxBytes` as JSON text. */
export const jsonObject = (maxBytes: number) =>
  z
    .record(z.string(), z.unknown(), { message: 'must be a JSON object' })
    .refine(
      (v) => Buffer.byteLength(JSON.stringify(v), 'utf8') <= maxBytes,
      `must be at most ${maxBytes / 1024} KB as JSON`,
    );

const kind = z
  .string({ message: 'must be a string' })
  .regex(JOB_KIND_RE, 'must be 1 to 64 characters of a-z, 0-9, "_", ".", ":" and "-"');

const dedupeKey = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(JOB_LIMITS.dedupeKey, `must be at most ${JOB_LIMITS.dedupeKey} characters`)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

/**
 * run_at: ISO 8601 with a time zone offset, stored in UTC. From a minute ago up to a year ahead:
 * checked by `checkRunAt` against the server's clock (`Services.clock`), which a schema cannot see.
 */
const runAt = z
  .string({ message: 'must be an ISO 8601 timestamp' })
  .pipe(
    z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp with a time zone (Z or ±hh:mm)' }),
  )
  .transform((s) => new Date(Date.parse(s)).toISOString());

/** run_at (UTC ISO) must lie between a minute ago and a year ahead of `now` (epoch ms). */
function checkRunAt(runAtIso: string, now: number): void {
  const ms = Date.parse(runAtIso);
  if (ms < now - JOB_LIMITS.pastMs) {
    throw new AppError('invalid_input', 'run_at: is in the past', { field: 'run_at' });
  }
  if (ms > now + JOB_LIMITS.horizonMs) {
    throw new AppError('invalid_input', 'run_at: must be at most one year ahead', { field: 'run_at' });
  }
}

export const ScheduleJobInput = z.strictObject({
  bot_id: uuid('bot'),
  kind: kind.describe('What the job does, for the bot: 1-64 of a-z 0-9 _ . : -'),
  payload: jsonObject(JOB_LIMITS.payloadBytes)
    .optional()
    .describe('A JSON object of at most 16 KB, handed back when the job runs'),
  run_at: runAt.describe('When to run: ISO 8601 with an offset, at most a year ahead'),
  dedupe_key: dedupeKey
    .optional()
    .describe('At most one job per bot and dedupe_key: scheduling it again answers the existing job'),
});

export const ScheduleJobOutput = JobView.extend({
  created: z.boolean().describe('false when a job with this dedupe_key existed already (it is answered)'),
});

export const scheduleJob = defineOperation({
  name: 'jobs.schedule',
  summary:
    'Schedule a job of the calling bot (bot key of that bot, any scope). At run_at a custom bot receives a job.due event; dedupe_key makes scheduling idempotent (200 with the existing job).',
  input: ScheduleJobInput,
  output: ScheduleJobOutput,
  actors: ['bot'],
  scope: 'any',
  mutates: true,
  async run(ctx, input) {
    checkRunAt(input.run_at, ctx.services.clock.now());
    const result = await write(ctx, async ({ stores, now }) => {
      const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'jobs');
      await stores.scheduledJobs.lockBot(bot.id);
      if (input.dedupe_key !== undefined) {
        const existing = await stores.scheduledJobs.byDedupeKey(bot.id, input.dedupe_key);
        if (existing) return { ...jobView(existing), created: false };
      }
      if ((await stores.scheduledJobs.countOpen(bot.id)) >= JOB_LIMITS.openPerBot) {
        throw new AppError(
          'invalid_input',
          `The bot has ${JOB_LIMITS.openPerBot} pending jobs, the most it may have; cancel some or wait for them to run`,
          { field: 'run_at' },
        );
      }
      const row: ScheduledJobRow = {
        id: newId(),
        org_id: ctx.actor.orgId,
        bot_id: bot.id,
        kind: input.kind,
        dedupe_key: input.dedupe_key ?? null,
        payload: JSON.stringify(input.payload ?? {}),
        run_at: input.run_at,
        state: 'pending',
        attempts: 0,
        lease_until: null,
        last_error: null,
        created_at: now,
        updated_at: now,
        done_at: null,
      };
      if (!(await stores.scheduledJobs.insert(row))) {
        // Only a concurrent insert of the same dedupe_key gets here (the bot row is locked on PostgreSQL).
        const existing = await stores.scheduledJobs.byDedupeKey(bot.id, input.dedupe_key ?? '');
        if (!existing) throw conflict('The job could not be stored; retry');
        return { ...jobView(existing), created: false };
      }
      return { ...jobView(row), created: true };
    });
    if (result.created) ctx.services.jobs?.scheduled(result.run_at);
    return result;
  },
});

export const cancelJob = defineOperation({
  name: 'jobs.cancel',
  summary:
    'Cancel a pending job of the calling bot (bot key of that bot, any scope); a job already cancelled is answered as it is, a running or finished one is 409',
  input: z.strictObject({ bot_id: uuid('bot'), job_id: uuid('job') }),
  output: JobView,
  actors: ['bot'],
  scope: 'any',
  mutates: true,
  async run(ctx, input) {
    return write(ctx, async ({ stores, now }) => {
      const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'jobs');
      const job = await stores.scheduledJobs.cancel(bot.id, input.job_id, now);
      if (!job) throw notFound('Job');
      if (job.state !== 'cancelled') {
        throw conflict(`The job is ${job.state}; only a pending job can be cancelled`);
      }
      return jobView(job);
    });
  },
});

const encodeCursor = (j: { run_at: string; id: string }) =>
  Buffer.from(`${j.run_at}|${j.id}`, 'utf8').toString('base64url');
function decodeCursor(cursor: string): { run_at: string; id: string } {
  const [run_at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!run_at || !id || Number.isNaN(Date.parse(run_at)))
    throw invalid('cursor', 'not a cursor this API returned');
  return { run_at, id };
}

export const listJobs = defineOperation({
  name: 'jobs.list',
  summary:
    'Jobs of the calling bot in run_at order, optionally of one state (bot key of that bot, any scope). Finished jobs are kept 30 days.',
  input: z.strictObject({
    bot_id: uuid('bot'),
    state: z.enum(JOB_STATES, { message: `must be one of ${JOB_STATES.join(', ')}` }).optional(),
    limit: limit(JOB_LIMITS.list.default, JOB_LIMITS.list.max),
    cursor: z.string().max(300).optional().describe('next_cursor of the previous page'),
  }),
  output: z.object({ items: z.array(JobView), next_cursor: z.string().nullable() }),
  actors: ['bot'],
  scope: 'any',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const bot = await loadOwnBot(stores, ctx.actor, input.bot_id, 'jobs');
    const rows = await stores.scheduledJobs.listForBot(bot.id, {
      state: input.state as JobState | undefined,
      after: input.cursor ? decodeCursor(input.cursor) : undefined,
      limit: input.limit,
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map(jobView),
      next_cursor: last && rows.length === input.limit ? encodeCursor(last) : null,
    };
  },
});
