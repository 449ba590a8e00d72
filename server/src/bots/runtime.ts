import type { z } from 'zod';
import { AppError, isAppError, type ErrorCode } from '../domain/errors.js';
import { parseEvent } from '../domain/events.js';
import type { Role } from '../domain/roles.js';
import type { InProcessEnvelope, InProcessResult } from '../delivery/in-process.js';
import {
  builtinUserActor,
  installBuiltinsEverywhere,
  loadBuiltinBot,
  type BuiltinBotRow as BotRow,
} from '../operations/bots/builtins.js';
import type { BuiltinCommand, InProcessCommandHandler } from '../operations/commands/dispatch.js';
import type { JobHandler, ScheduledJob } from '../scheduler/job.js';
import type { Actor, BotActor, OpContext, Services, UserActor } from '../operations/context.js';
import { withIdempotency } from '../operations/idempotency.js';
import { runOperation, type Operation } from '../operations/operation.js';
import type { ActionInvocation, BotContext, BotJob, BotReply, BuiltinBot, CallOptions } from './types.js';

/**
 * The built-in bot runtime (docs/BUILTIN-BOTS.md): one per server, registered with the lifecycle by
 * app.ts. At start it installs every built-in bot in every organization (operations/bots/builtins.ts);
 * then it runs their handlers: commands (handed over by the command dispatcher, in process), events
 * and action clicks (handed over by the delivery worker through `BuiltinReceiver`), scheduled jobs.
 *
 * Each call is for one organization's instance (the bot row named by the command or the delivery), and
 * everything the handler does goes through operations as that bot, or as a user under the rule of
 * `callAsUser`: a built-in bot never reaches another organization, nor more than a bot key with its
 * scopes, nor more than the user it acts for.
 */

/**
 * Operations a built-in bot may run as a user who did not ask for anything (not the invoker of the
 * command or action being handled): reads only, which show what that user may see and change nothing.
 */
export const READ_ONLY_OPERATIONS: ReadonlySet<string> = new Set([
  'search',
  'messages.list',
  'tasks.get',
  'tasks.list',
  'users.get',
  'users.list',
  'channels.get',
  'channels.list',
  'channels.members.list',
  'projects.get',
  'projects.list',
  'topics.list',
  'containers.list',
  'dm_rooms.list',
  'mentions.users',
  'hashtags.search',
  'files.list',
  'bookmarks.list',
]);

/** Errors of a command handler that are the user's to read (bad input, not allowed, not found). */
const USER_FACING: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'invalid_input',
  'forbidden',
  'not_found',
  'conflict',
  'insufficient_scope',
  'idempotency_conflict',
]);

export class BuiltinBotRuntime implements InProcessCommandHandler {
  readonly name = 'built-in bots';
  readonly #bots = new Map<string, BuiltinBot>();

  constructor(
    private readonly services: Services,
    bots: readonly BuiltinBot[],
  ) {
    for (const b of bots) this.#bots.set(b.key, b);
  }

  /** Installs every built-in bot in every organization (idempotent; new organizations install theirs). */
  async start(): Promise<void> {
    const created = await installBuiltinsEverywhere(this.services);
    if (created > 0) this.services.log.info({ created }, 'built-in bots installed');
  }

  async stop(): Promise<void> {}

  definition(key: string): BuiltinBot | undefined {
    return this.#bots.get(key);
  }

  /**
   * Whether the bot `key` receives this event from anywhere in its organization: one of its orgEvents
   * that its `wantsOrgEvent` (if any) accepts. Runs in the fan-out, for every such event: cheap.
   */
  receivesFromOrganization(key: string, type: string, data: Record<string, unknown>): boolean {
    if (!this.services.builtins.orgEventsOf(key).has(type)) return false;
    const want = this.#bots.get(key)?.wantsOrgEvent;
    try {
      return want ? want(type, data) : true;
    } catch (err) {
      this.services.log.error({ err, builtin: key, type }, 'built-in bot: wantsOrgEvent failed');
      return false;
    }
  }

  // --- commands (operations/commands/dispatch.ts) ---

  async run(builtin: string, cmd: BuiltinCommand): Promise<BotReply | null> {
    const def = this.#bots.get(builtin);
    const row = await this.#row(cmd.bot_id, builtin);
    if (!def || !row) throw new AppError('not_found', `Built-in bot ${builtin} not found`);
    if (row.status !== 'active') {
      throw new AppError('forbidden', `The built-in bot ${row.name} is disabled by the system administrator`);
    }
    if (!def.onCommand) return null;
    const ctx = this.context(row, def, cmd.user_id, `command:${cmd.invocation_id}`);
    try {
      return await def.onCommand(ctx, {
        invocationId: cmd.invocation_id,
        command: cmd.command,
        args: cmd.args,
        text: cmd.text,
        userId: cmd.user_id,
        channelId: cmd.channel_id,
        topicId: cmd.topic_id,
        dmRoomId: cmd.dm_room_id,
        invokedAt: cmd.invoked_at,
      });
    } catch (err) {
      // What the user did wrong (or may not do) is told to them, as the bot's answer.
      if (isAppError(err) && USER_FACING.has(err.code))
        return { content: `⚠️ ${err.message}`, ephemeral: true };
      throw err;
    }
  }

  // --- deliveries (delivery worker → BuiltinReceiver) ---

  async deliver(builtin: string, envelope: InProcessEnvelope): Promise<InProcessResult> {
    const def = this.#bots.get(builtin);
    if (!def) return { ok: false, detail: `no built-in bot ${builtin} in this server` };
    const row = await this.#row(envelope.bot_id, builtin);
    if (!row) return { ok: false, detail: 'the bot is deleted' };
    if (row.status !== 'active') return { ok: false, detail: 'the bot is disabled; not handled' };
    // Checked against the catalogue before the bot's code sees it (a failure is recorded, and retried,
    // like any failed attempt: it names the paths that do not match, never their values).
    const parsed = parseEvent(envelope.event_type, envelope.data);
    if (!parsed.ok) return { ok: false, detail: `the event does not match its schema: ${parsed.error}` };
    const { event } = parsed;
    if (event.type === 'action.invoked') {
      if (!def.onAction) return { ok: true, detail: 'ignored: the bot takes no actions' };
      const action: ActionInvocation = event.data;
      await def.onAction(this.context(row, def, action.user_id, `action:${action.invocation_id}`), action);
      return { ok: true, detail: 'handled' };
    }
    if (!def.onEvent) return { ok: true, detail: 'ignored: the bot handles no events' };
    await def.onEvent(this.context(row, def, null, `delivery:${envelope.delivery_id}`), {
      ...event,
      id: envelope.event_id,
      timestamp: envelope.timestamp,
      deliveryId: envelope.delivery_id,
    });
    return { ok: true, detail: 'handled' };
  }

  // --- scheduled jobs (scheduler/bot-jobs.ts hands the built-in bots' jobs over) ---

  /** The scheduler's handler for the jobs of built-in bots. */
  readonly jobs: JobHandler = { run: (job) => this.#runJob(job) };

  /**
   * Runs a due job of a built-in bot. A disabled bot's job is skipped (it ends as done, and a bot that
   * schedules its next occurrence from the job does not: disabling stops its schedules); a job of a
   * bot whose code has no onJob fails.
   */
  async #runJob(job: ScheduledJob): Promise<void> {
    const row = await loadBuiltinBot(this.services, job.bot_id);
    const def = row?.builtin ? this.#bots.get(row.builtin) : undefined;
    if (!row || !def) throw new Error('not a built-in bot of this server');
    if (row.org_id !== job.org_id) throw new Error("the job is not of the bot's organization");
    if (row.status !== 'active') {
      this.services.log.info(
        { builtin: def.key, job: job.id, kind: job.kind },
        'built-in bot disabled: job skipped',
      );
      return;
    }
    if (!def.onJob) throw new Error(`the built-in bot ${def.key} handles no jobs`);
    const botJob: BotJob = {
      id: job.id,
      kind: job.kind,
      payload: job.payload,
      runAt: job.run_at,
      attempt: job.attempts,
    };
    await def.onJob(this.context(row, def, null, `job:${job.id}`), botJob);
  }

  async #row(botId: string, builtin: string): Promise<BotRow | undefined> {
    const row = await loadBuiltinBot(this.services, botId);
    return row?.builtin === builtin ? row : undefined;
  }

  /** The handler's context for one organization's instance of the bot. */
  context(row: BotRow, def: BuiltinBot, invoker: string | null, requestId: string): BotContext {
    const services = this.services;
    const botActor: BotActor = {
      kind: 'bot',
      botId: row.id,
      orgId: row.org_id,
      botType: row.type,
      // Not an API key: marks the actor as the built-in runtime (key usage is recorded only when a
      // real key authenticates, so nothing looks this id up).
      keyId: `builtin:${def.key}`,
      scopes: [...def.scopes],
    };
    const log = services.log.child({ builtin: def.key, bot: row.id, org: row.org_id });
    const run = async <S extends z.ZodType, O>(
      actor: Actor,
      op: Operation<S, O>,
      input: z.input<S>,
      opts?: CallOptions,
    ): Promise<O> => {
      const ctx: OpContext = { actor, services, requestId: `builtin:${def.key}:${requestId}` };
      if (!opts?.idempotencyKey) return runOperation(op, ctx, input);
      const r = await withIdempotency(
        services,
        actor,
        opts.idempotencyKey,
        { operation: op.name, input },
        async (claim) => ({
          status: 200,
          body: await runOperation(op, { ...ctx, idempotency: claim }, input),
        }),
      );
      return r.body as O;
    };
    const publicUrl = services.config.publicUrl;
    return {
      bot: { id: row.id, orgId: row.org_id, key: def.key, name: row.name, type: def.type },
      invoker,
      call: (op, input, opts) => run(botActor, op, input, opts),
      async callAsUser(userId, op, input, opts) {
        if (userId !== invoker && !READ_ONLY_OPERATIONS.has(op.name)) {
          throw new AppError(
            'forbidden',
            `A built-in bot runs ${op.name} as a user only for the user whose command or action it handles`,
          );
        }
        const u = await run(botActor, builtinUserActor, { user_id: userId });
        const actor: UserActor = {
          kind: 'user',
          userId: u.user_id,
          orgId: u.org_id,
          role: u.role as Role,
          departmentId: u.department_id,
          tokenId: `builtin:${def.key}`,
        };
        return run(actor, op, input, opts);
      },
      link(place) {
        if (place.channel_id) return `${publicUrl}/#/channel/${place.channel_id}`;
        if (place.topic_id) return `${publicUrl}/#/topic/${place.topic_id}`;
        if (place.dm_room_id) return `${publicUrl}/#/dm/${place.dm_room_id}`;
        return `${publicUrl}/`;
      },
      onlineAmong: (userIds) => services.commands.onlineAmong(userIds),
      log,
      now: () => new Date(services.clock.now()), // business time (runtime/clock.ts)
    };
  }
}
