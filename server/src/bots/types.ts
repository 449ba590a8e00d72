import type { Logger } from 'pino';
import type { z } from 'zod';
import type { BuiltinBotSpec } from '../operations/bots/builtins.js';
import type { Operation } from '../operations/operation.js';
import type { EventPayload, EventType } from '../domain/events.js';

/**
 * The definition of a built-in bot (docs/BUILTIN-BOTS.md). A bot author writes one `bots/<name>.ts`
 * exporting a `BuiltinBot` and adds it to the list in `bots/registry.ts`; the runtime installs it in
 * every organization, registers its commands, and calls its handlers with a `BotContext` for the
 * organization's instance. A handler acts only through operations (`ctx.call`), like any bot.
 */
export interface BuiltinBot extends BuiltinBotSpec {
  /**
   * An event the bot subscribed to (`events` where it is a member, `orgEvents` anywhere in its
   * organization), delivered at least once: the same `event.id` may come again after a crash, so
   * writes should pass an idempotency key derived from it. Throwing fails the delivery (retried).
   */
  onEvent?(ctx: BotContext, event: BotEvent): Promise<void>;
  /**
   * An optional, cheap and synchronous filter of `orgEvents`, run by the fan-out before a delivery is
   * created: false means the event is not delivered at all (e.g. the notifications bot skips messages
   * without an "@"), which spares a delivery row per event of the organization.
   */
  wantsOrgEvent?(type: string, data: Record<string, unknown>): boolean;
  /**
   * One of the bot's slash commands. The reply is handled exactly like a webhook's answer: posted as
   * the bot in the command's container (the bot must be a member there), or shown only to the invoking
   * user when `ephemeral` (or when the command ran outside any container). null: no reply.
   * An AppError thrown here becomes an ephemeral reply with its message.
   */
  onCommand?(ctx: BotContext, command: CommandInvocation): Promise<BotReply | null>;
  /** A click on a button or select of one of the bot's messages (`action.invoked`). */
  onAction?(ctx: BotContext, action: ActionInvocation): Promise<void>;
  /** A job of the durable scheduler that the bot scheduled, due now. */
  onJob?(ctx: BotContext, job: BotJob): Promise<void>;
}

/** What a handler gets: the organization's instance of the bot, and the means to act. */
export interface BotContext {
  readonly bot: {
    /** The bot's row (one per organization). */
    id: string;
    orgId: string;
    key: string;
    name: string;
    type: 'system' | 'platform';
  };
  /** The user whose command or click is being handled (callAsUser may do anything as them). */
  readonly invoker: string | null;
  /**
   * Runs an operation as the bot: a bot actor of the bot's organization with its declared scopes, so
   * exactly what a bot key with those scopes may do (a channel the bot is not in is not found, …).
   * With `idempotencyKey`, a second call with the same key and input answers the first result and
   * changes nothing (keys are per bot; use the event or invocation id in it).
   */
  call<S extends z.ZodType, O>(op: Operation<S, O>, input: z.input<S>, opts?: CallOptions): Promise<O>;
  /**
   * Runs an operation as a user of the bot's organization (their role, department, memberships), so
   * that it never shows or changes more than that user could. The rule: any operation as the
   * invoking user of the command or action being handled (they asked for it); otherwise only
   * read-only operations (READ_ONLY_OPERATIONS in bots/runtime.ts), e.g. to search on behalf of the
   * author of a DM.
   */
  callAsUser<S extends z.ZodType, O>(
    userId: string,
    op: Operation<S, O>,
    input: z.input<S>,
    opts?: CallOptions,
  ): Promise<O>;
  /** A link to a channel, topic or DM room in the web app. */
  link(place: { channel_id?: string | null; topic_id?: string | null; dm_room_id?: string | null }): string;
  /** Which of the users have a live connection, to this instance or another on the database (@here). */
  onlineAmong(userIds: readonly string[]): Promise<Set<string>>;
  readonly log: Logger;
  now(): Date;
}

export interface CallOptions {
  idempotencyKey?: string;
}

/**
 * An event as delivered (the webhook envelope without a signature): one of the event catalogue's types,
 * its data checked against that type's schema before the bot sees it (`type` narrows `data`).
 */
export type BotEvent = {
  [T in EventType]: {
    type: T;
    /** The event's id: the same on every delivery attempt. */
    id: string;
    timestamp: string;
    /** The delivery's id (one per event and bot). */
    deliveryId: string;
    data: EventPayload<T>;
  };
}[EventType];

/** A slash command of the bot, typed by `userId`. */
export interface CommandInvocation {
  invocationId: string;
  command: string;
  /** What follows the command word, trimmed. */
  args: string;
  text: string;
  userId: string;
  channelId: string | null;
  topicId: string | null;
  dmRoomId: string | null;
  invokedAt: string;
}

export interface BotReply {
  content: string;
  content_html?: string;
  /** Shown only to the invoking user, stored nowhere. */
  ephemeral?: boolean;
}

/** The `action.invoked` event's data (docs/ACTIONS.md). */
export interface ActionInvocation {
  invocation_id: string;
  action_id: string;
  action_type: 'button' | 'select';
  value: string;
  user_id: string;
  message_id: string;
  bot_id: string;
  channel_id: string | null;
  topic_id: string | null;
  dm_room_id: string | null;
  invoked_at: string;
  [k: string]: unknown;
}

/** A job of the durable scheduler (scheduler/), as the bot scheduled it. */
export interface BotJob {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
  runAt: string;
  attempt: number;
}
