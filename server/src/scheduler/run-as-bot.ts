import type { z } from 'zod';
import { AppError } from '../domain/errors.js';
import type { BotType } from '../domain/roles.js';
import type { BotActor, Services } from '../operations/context.js';
import { withIdempotency } from '../operations/idempotency.js';
import { runOperation, type Operation } from '../operations/operation.js';
import type { ScheduledJob } from './job.js';

/**
 * Exactly-once effects for job handlers (docs/SCHEDULER.md "Exactly once"). A job runs at least once;
 * its handler makes each of its effects through this helper, which runs the operation as the job's bot
 * under the idempotency key `job:<job id>:<step>`: the same on every attempt of the job, whatever the
 * attempt number. The first run that commits records the result in the same transaction as the
 * operation's write (operations/idempotency.ts), so a re-run after a crash gets that result back
 * instead of acting again — e.g. the message is posted once.
 *
 * Rules for handlers:
 * - one step name per effect within a job ("post", "dm:<user id>", "task"…), stable across attempts;
 * - the input of a step must be the same on every attempt (derive it from the job's payload and
 *   run_at, never from the clock or random values): the same key with another input is refused
 *   (409 idempotency_conflict), and the attempt fails;
 * - results are kept 24 hours: WORKROOM_SCHEDULER_GRACE and the retry delays are bounded so that every
 *   re-run of a job falls within them.
 */

/** Steps are printable ASCII without spaces (the key is at most 255 characters). */
const STEP_RE = /^[\x21-\x7e]{1,200}$/;

/** The idempotency key of one step of a job: the same on every attempt. */
export function jobStepKey(jobId: string, step: string): string {
  if (!STEP_RE.test(step)) {
    throw new AppError('invalid_input', 'step: must be 1 to 200 printable ASCII characters without spaces', {
      field: 'step',
    });
  }
  return `job:${jobId}:${step}`;
}

/** The job's bot as the acting caller (all scopes: the bot's own code, not a key), in the job's org. */
export async function jobActor(
  services: Services,
  job: Pick<ScheduledJob, 'id' | 'bot_id' | 'org_id'>,
): Promise<BotActor> {
  const bot = await services.storage.stores.bots.get(job.bot_id);
  if (!bot) throw new AppError('not_found', 'Bot not found: it was deleted');
  if (bot.status !== 'active') throw new AppError('forbidden', 'The bot is disabled');
  return {
    kind: 'bot',
    botId: bot.id,
    orgId: job.org_id,
    botType: bot.type as BotType,
    // Not an API key: the rate-limit bucket of the job (REST limits do not apply in process anyway).
    keyId: `job:${job.id}`,
    scopes: null,
  };
}

/**
 * Runs `op` as the job's bot, once per (job, step): a later attempt of the same job answers the first
 * attempt's result without running the operation again. Errors are thrown as the operation threw them
 * (a failed operation changed nothing and is run again on the next attempt).
 */
export async function runJobOperation<S extends z.ZodType, O>(
  services: Services,
  job: Pick<ScheduledJob, 'id' | 'bot_id' | 'org_id'>,
  step: string,
  op: Operation<S, O>,
  input: z.input<S>,
): Promise<O> {
  const key = jobStepKey(job.id, step);
  const actor = await jobActor(services, job);
  const r = await withIdempotency(
    services,
    actor,
    key,
    { operation: op.name, input },
    async (idempotency) => {
      const result = await runOperation(
        op,
        { actor, services, requestId: `job:${job.id}:${step}`, idempotency },
        input,
      );
      return { status: 200, body: result };
    },
  );
  return r.body as O;
}
