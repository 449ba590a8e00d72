import type { Services } from '../operations/context.js';
import { outsideRequest, write } from '../operations/write.js';
import type { JobHandler, ScheduledJob } from './job.js';

/**
 * The job handler app.ts gives the scheduler: a built-in bot's jobs go to the built-in bots' runtime
 * (in process), a custom bot's become a `job.due` event delivered to its webhook.
 */
export class BotJobHandler implements JobHandler {
  constructor(
    private readonly services: Services,
    /** The built-in bots' handler (bots/), when they exist in this build. */
    private readonly builtin?: JobHandler,
  ) {}

  async run(job: ScheduledJob, signal: AbortSignal): Promise<void> {
    const bot = await this.services.storage.stores.bots.get(job.bot_id);
    if (!bot) throw new Error('the bot was deleted');
    if (bot.builtin !== null) {
      if (!this.builtin) throw new Error(`no runtime for the built-in bot ${bot.builtin} handles jobs`);
      return this.builtin.run(job, signal);
    }
    await emitJobDue(this.services, job);
  }
}

/**
 * A custom bot's due job: the `job.due` event (outbox → fan-out → webhook delivery, retried there) is
 * written in the same transaction that marks the job done, so it exists once, whether or not the
 * process dies right after; a repeated delivery of it carries the same webhook-id. When the claim was
 * lost meanwhile (the job was taken over), nothing is written.
 */
export async function emitJobDue(services: Services, job: ScheduledJob): Promise<void> {
  await write(outsideRequest(services), async ({ stores, now, emit }) => {
    if (!(await stores.scheduledJobs.complete(job.id, job.attempts, now))) {
      throw new Error('the claim on the job was lost; not delivered');
    }
    emit('job.due', job.org_id, {
      job_id: job.id,
      bot_id: job.bot_id,
      kind: job.kind,
      payload: job.payload,
      run_at: job.run_at,
      dedupe_key: job.dedupe_key,
      attempt: job.attempts,
    });
  });
}
