/**
 * What a job handler receives and implements (docs/SCHEDULER.md). The scheduler runs each due job by
 * calling `JobHandler.run`; app.ts wires the handler (built-in bots' runtime, custom bots' job.due).
 */

/** A claimed job, as handed to its handler. */
export interface ScheduledJob {
  id: string;
  bot_id: string;
  /** The organization the job was scheduled in: the one the bot acts in when it runs. */
  org_id: string;
  kind: string;
  payload: Record<string, unknown>;
  /** When it was due (ISO 8601 UTC); a retry's is later than the first. */
  run_at: string;
  /**
   * This attempt's number, 1 for the first. A run after a crash or a failure is a later attempt of
   * the same job (same `id`): effects must not depend on it (see `runJobOperation`).
   */
  attempts: number;
  /** The job's dedupe key, if it was scheduled with one. */
  dedupe_key: string | null;
}

/**
 * Runs due jobs. Resolving marks the job done; throwing (or running past WORKROOM_SCHEDULER_JOB_TIMEOUT)
 * fails this attempt, and the job is retried after the next delay of WORKROOM_SCHEDULER_RETRY_DELAYS
 * until its attempts are used up, then `failed` with the error.
 *
 * At least once: a job may run again although its effects happened, when the process died after them
 * but before the job was marked done (its lease runs out and another claim takes it). So every effect
 * must be idempotent: run operations through `runJobOperation(services, job, step, op, input)`, which
 * gives each (job, step) one idempotency key, so that a re-run replays the first result instead of
 * acting twice.
 */
export interface JobHandler {
  /** `signal` aborts when the attempt timed out or the server stops: stop work that has not started. */
  run(job: ScheduledJob, signal: AbortSignal): Promise<void>;
}
