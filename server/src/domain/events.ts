import { z } from 'zod';
import { MessageActions } from './actions.js';

/**
 * The event catalogue: one zod schema per event type, the single source of
 * - the TypeScript type of every event (`emit()` takes a `DomainEvent`, so a payload that does not
 *   match its type does not compile),
 * - the runtime check of payloads read back from the outbox (`parseEvent`: the outbox reader checks every row it
 *   reads and dead-letters those that fail, events/outbox-reader.ts),
 * - the `webhooks` section of the OpenAPI document and the SDKs' event types.
 * Payload keys are snake_case, like the REST API. Every event also carries, outside `data`, an
 * `event_id`, its type, its organization and its timestamp (see `WebhookEnvelope` in delivery/).
 */

const id = z.string().describe('UUID');
const ts = z.string().describe('ISO-8601 UTC timestamp');
const actorType = z.enum(['user', 'bot']);
/** Exactly one of the three is set: where the message or command lives. */
const container = {
  channel_id: id.nullable(),
  topic_id: id.nullable(),
  dm_room_id: id.nullable(),
};

export const ChannelSnapshot = z.object({
  id,
  org_id: id,
  name: z.string(),
  description: z.string(),
  is_private: z.boolean(),
  created_at: ts,
  updated_at: ts,
  archived_at: ts.nullable().optional().describe('Set once the channel is archived'),
  created_by: id.nullable().optional(),
});

export const ProjectSnapshot = z.object({
  id,
  org_id: id,
  name: z.string(),
  description: z.string(),
  created_at: ts,
  archived_at: ts.nullable().optional(),
  created_by: id.nullable().optional(),
});

export const TopicSnapshot = z.object({
  id,
  org_id: id,
  project_id: id,
  name: z.string(),
  created_at: ts,
  archived_at: ts.nullable().optional(),
  created_by: id.nullable().optional(),
});

export const TaskSnapshot = z.object({
  task_id: id,
  id,
  org_id: id,
  topic_id: id,
  title: z.string(),
  description: z.string(),
  priority: z.string(),
  status: z.string(),
  assignee_id: id.nullable(),
  due_date: z.string().nullable(),
  created_by_type: actorType,
  created_by_id: id,
  created_at: ts,
  updated_at: ts,
});

export const MessageEventData = z.object({
  message_id: id,
  content: z.string().describe('Markdown body'),
  content_html: z.string().nullable().describe('Sanitized HTML body, when the sender gave one'),
  ...container,
  sender_id: id,
  sender_type: actorType,
  bot_id: id.nullable().describe('Set when a bot sent the message'),
  actions: MessageActions,
  created_at: ts,
  edited_at: ts.nullable(),
  deleted_at: ts.nullable(),
});

const taskEvent = <T extends z.ZodRawShape>(extra: T) =>
  z.object({
    task_id: id,
    topic_id: id,
    task: TaskSnapshot,
    actor_type: actorType,
    actor_id: id,
    ...extra,
  });

const memberEvent = z.object({
  channel_id: id.optional().describe('Set for channel membership'),
  project_id: id.optional().describe('Set for project membership'),
  member_type: actorType,
  member_id: id,
  added_by: id.optional(),
  removed_by: id.optional(),
});

const channelEvent = z.object({ channel_id: id, channel: ChannelSnapshot, actor_id: id });
const projectEvent = z.object({
  project_id: id,
  project: ProjectSnapshot,
  actor_id: id,
  changes: z.array(z.string()).optional().describe('project.updated: the fields that changed'),
});
const topicEvent = z.object({
  topic_id: id,
  project_id: id,
  topic: TopicSnapshot,
  actor_id: id,
  changes: z.array(z.string()).optional().describe('topic.updated: the fields that changed'),
});
const reactionEvent = z.object({
  message_id: id,
  ...container,
  emoji: z.string(),
  reactor_type: actorType,
  reactor_id: id,
  count: z.number().int().describe('How many reacted with this emoji after the change'),
});

/** Every event type with its data schema and a one-line description. */
export const EVENT_CATALOGUE = {
  'message.created': {
    description: 'A message was posted in a channel, topic or DM room',
    data: MessageEventData,
  },
  'message.updated': {
    description: 'A message was edited',
    data: MessageEventData.extend({
      previous_content: z.string(),
      edited_by_type: actorType,
      edited_by_id: id,
    }),
  },
  'message.deleted': {
    description: 'A message was soft-deleted (its content is no longer given)',
    data: z.object({
      message_id: id,
      ...container,
      sender_id: id,
      sender_type: actorType,
      bot_id: id.nullable(),
      deleted_at: ts,
      deleted_by_type: actorType,
      deleted_by_id: id,
    }),
  },
  'task.created': { description: 'A task was created in a topic', data: taskEvent({}) },
  'task.status_changed': {
    description: 'A task moved to another status',
    data: taskEvent({ status: z.string(), previous_status: z.string() }),
  },
  'task.assigned': {
    description: 'A task got another assignee (or none)',
    data: taskEvent({ assignee_id: id.nullable(), previous_assignee_id: id.nullable() }),
  },
  'channel.updated': {
    description: 'A channel’s name, description or privacy changed',
    data: z.object({ channel_id: id, channel: ChannelSnapshot, changes: z.array(z.string()) }),
  },
  'channel.created': {
    description: 'A channel was created (its creator is its first member)',
    data: channelEvent,
  },
  'channel.archived': {
    description: 'A channel was archived: it leaves the listings and takes no new messages',
    data: channelEvent,
  },
  'project.created': { description: 'A project was created', data: projectEvent },
  'project.updated': { description: 'A project was renamed or described', data: projectEvent },
  'project.archived': {
    description: 'A project was archived: it and its topics leave the listings',
    data: projectEvent,
  },
  'topic.created': { description: 'A topic was created in a project', data: topicEvent },
  'topic.updated': { description: 'A topic was renamed', data: topicEvent },
  'topic.archived': {
    description: 'A topic was archived: it leaves the listings and takes no new messages',
    data: topicEvent,
  },
  'reaction.added': { description: 'A user or bot reacted to a message with an emoji', data: reactionEvent },
  'reaction.removed': { description: 'A user or bot took back an emoji reaction', data: reactionEvent },
  'member.joined': {
    description: 'A user or bot joined a channel or project (added by someone, or by itself)',
    data: memberEvent,
  },
  'member.left': {
    description: 'A user or bot left, or was removed from, a channel or project',
    data: memberEvent,
  },
  'command.invoked': {
    description: 'A user ran one of the bot’s slash commands (sent to that bot only)',
    data: z.object({
      invocation_id: id,
      command: z.string(),
      args: z.string(),
      text: z.string(),
      bot_id: id,
      command_id: id,
      user_id: id,
      ...container,
      invoked_at: ts,
      response_url: z
        .string()
        .describe(
          "POST the bot's answer here later (30 minutes, 5 uses; POST /api/commands/responses/{token}); only this bot learns it",
        ),
      response_url_expires_at: ts.describe('When response_url stops working'),
    }),
  },
  'job.due': {
    description:
      'A job the bot scheduled (POST /api/bots/{botId}/jobs) is due (sent to that bot only; docs/SCHEDULER.md)',
    data: z.object({
      job_id: id.describe('The job; a repeated delivery of this event carries the same one'),
      bot_id: id,
      kind: z.string(),
      payload: z.record(z.string(), z.unknown()),
      run_at: ts.describe('When the job was due'),
      dedupe_key: z.string().nullable(),
      attempt: z.number().int().describe('The scheduler attempt that fired it (1 unless retried)'),
    }),
  },
  'action.invoked': {
    description:
      'A user clicked a button or chose an option of a bot message (sent to the bot that sent the message only)',
    data: z.object({
      invocation_id: id.describe(
        'This click (also in the answer the user got); retried deliveries carry the same one',
      ),
      action_id: z.string(),
      action_type: z.enum(['button', 'select']),
      value: z.string().describe("The button's value, or the option the user chose"),
      user_id: id,
      user: z.object({ id, display_name: z.string() }),
      message_id: id,
      bot_id: id,
      ...container,
      invoked_at: ts,
    }),
  },
  'webhook.test': {
    description: 'A test event sent by a bot manager to check the webhook (sent to that bot only)',
    data: z.object({ bot_id: id, requested_by: id.optional(), message: z.string() }),
  },
  'notification.created': {
    description:
      "Internal, never delivered to webhooks: a notification for a user (a bot's webhook failed, was paused or turned off); the notifications bot relays it as a DM",
    data: z.object({
      notification_id: id,
      user_id: id,
      kind: z.string(),
      title: z.string(),
      body: z.string(),
      data: z.record(z.string(), z.unknown()),
    }),
  },
  'resources.changed': {
    description:
      'Internal, never delivered to webhooks: the MCP resources (channels, topics, DM rooms) of these bots changed',
    data: z.object({ bot_ids: z.array(id) }),
  },
  'mcp.session_ended': {
    description:
      'Internal, never delivered to webhooks: an MCP session (legacy protocol versions) ended on one instance (DELETE, or its key or organization at its cap); every instance answers its id 404 from then on',
    data: z.object({
      bot_id: id,
      session_hash: z.string().describe('SHA-256 of the Mcp-Session-Id, hex (the id itself is not stored)'),
      expires_at: ts.describe('When the id would have expired anyway: it need not be remembered after'),
    }),
  },
  'pending_action.created': {
    description:
      "Internal, never delivered to webhooks: a bot key's call now waits for a human's approval (its approvers got a card by DM)",
    data: z.object({
      pending_action_id: id,
      bot_id: id,
      tool: z.string(),
      approver_ids: z.array(id).describe('Who got the card'),
      expires_at: ts,
    }),
  },
  'pending_action.resolved': {
    description:
      'A call of the bot\'s that waited for approval was decided: executed (with its result), failed, rejected or expired (sent to that bot only; docs/API.md "Approval")',
    data: z.object({
      pending_action_id: id,
      bot_id: id,
      tool: z.string(),
      status: z.enum(['executed', 'failed', 'rejected', 'expired']),
      decided_by: id.nullable().describe('The user who approved or rejected it; null when it expired'),
      decided_at: ts.nullable(),
      result: z.unknown().describe('The result of the call once executed (e.g. the message), else null'),
      error: z.string().nullable().describe('Why it failed'),
    }),
  },
  'read_marker.updated': {
    description:
      "For one user only, never delivered to webhooks: the user marked a channel, topic or DM room read (pushed to that user's own live connections, so their other tabs and devices update its unread count)",
    data: z.object({
      user_id: id.describe('The user whose marker moved; the only one who receives the event'),
      container_type: z.enum(['channel', 'topic', 'dm_room']),
      container_id: id,
      last_read_at: ts.describe('created_at of the last message read'),
      last_read_message_id: id.nullable(),
      unread: z.number().int().describe('Unread messages after the marker (capped, as GET /api/unread)'),
    }),
  },
} as const;

type Catalogue = typeof EVENT_CATALOGUE;
export type EventType = keyof Catalogue;
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];
export type EventData<T extends EventType> = z.input<Catalogue[T]['data']>;

/** Event kinds of the spec that a bot may list in its `events` subscription. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'message.created',
  'message.updated',
  'message.deleted',
  'task.created',
  'task.status_changed',
  'channel.updated',
  'member.joined',
  'member.left',
  'channel.created',
  'channel.archived',
  'project.created',
  'project.updated',
  'project.archived',
  'topic.created',
  'topic.updated',
  'topic.archived',
  'reaction.added',
  'reaction.removed',
] as const satisfies readonly EventType[];
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];

/**
 * Delivered by webhook without a subscription: to the one bot they concern (`data.bot_id`).
 * `task.assigned` is in neither list: the spec names it among the main events but not among the
 * subscribable ones, so it reaches bots only through the event history (catch-up) and live updates.
 */
export const DIRECTED_EVENT_TYPES = [
  'command.invoked',
  'action.invoked',
  'job.due',
  'webhook.test',
  'pending_action.resolved',
] as const satisfies readonly EventType[];

/**
 * For one user only: pushed over the live stream to the connections of the user in `data.user_id`, and
 * to nobody else (realtime/visibility.ts); never delivered to webhooks.
 */
export const USER_EVENT_TYPES = ['read_marker.updated'] as const satisfies readonly EventType[];

/**
 * Never delivered to webhooks (and not in the OpenAPI document's `webhooks`): resources.changed and
 * mcp.session_ended (MCP sessions), notification.created (built-in bots) and the user events above
 * (that user's live stream).
 */
export const INTERNAL_EVENT_TYPES = [
  'resources.changed',
  'notification.created',
  'mcp.session_ended',
  'pending_action.created',
  ...USER_EVENT_TYPES,
] as const satisfies readonly EventType[];

/**
 * Directed events that their operation sends at once, never through the outbox fan-out: commands.execute
 * posts command.invoked to its bot and tells the user the outcome (a second delivery would run the
 * command twice); a webhook test is a delivery row of its own (POST /api/bots/{botId}/webhook/test),
 * never an outbox event.
 */
export const SENT_DIRECTLY_EVENT_TYPES = [
  'command.invoked',
  'webhook.test',
] as const satisfies readonly (typeof DIRECTED_EVENT_TYPES)[number][];

/** Directed events with no container: they reach their bot wherever it is a member (a due job is its own). */
export const CONTAINERLESS_EVENT_TYPES = [
  'job.due',
  'pending_action.resolved',
] as const satisfies readonly (typeof DIRECTED_EVENT_TYPES)[number][];

/**
 * Internal events that built-in bots may hear (their `orgEvents`, delivered in process by the fan-out
 * and the worker): the notifications bot relays notification.created as a DM. Never sent to a webhook.
 */
export const BUILTIN_ONLY_EVENT_TYPES = [
  'notification.created',
] as const satisfies readonly (typeof INTERNAL_EVENT_TYPES)[number][];

/**
 * How the webhook fan-out (delivery/fanout.ts) routes an outbox event, derived from the lists above:
 *  - `subscribers`: to the bots whose `events` (or a built-in bot's `orgEvents`) name the type, that
 *    reach its container;
 *  - `owning_bot`: to the bot in `data.bot_id` only, without a subscription, while it reaches the
 *    container (action.invoked: the bot that sent the message);
 *  - `bot`: to the bot in `data.bot_id` only, without a subscription or a container (job.due);
 *  - `none`: never a delivery (sent directly, or internal to the server / one user's live stream).
 */
export type FanoutRoute = 'subscribers' | 'owning_bot' | 'bot' | 'none';

const has = (list: readonly string[], t: string) => list.includes(t);
function routeOf(t: EventType): FanoutRoute {
  if (has(SENT_DIRECTLY_EVENT_TYPES, t)) return 'none';
  if (has(DIRECTED_EVENT_TYPES, t)) return has(CONTAINERLESS_EVENT_TYPES, t) ? 'bot' : 'owning_bot';
  if (has(INTERNAL_EVENT_TYPES, t) && !has(BUILTIN_ONLY_EVENT_TYPES, t)) return 'none';
  return 'subscribers';
}
export const FANOUT_ROUTES: Readonly<Record<EventType, FanoutRoute>> = Object.fromEntries(
  EVENT_TYPES.map((t) => [t, routeOf(t)]),
) as Record<EventType, FanoutRoute>;

/** Event types delivered to webhooks (the OpenAPI document's `webhooks`): all but the internal ones. */
export const WEBHOOK_EVENT_TYPES = EVENT_TYPES.filter((t) => !has(INTERNAL_EVENT_TYPES, t)) as Exclude<
  EventType,
  (typeof INTERNAL_EVENT_TYPES)[number]
>[];
export type WebhookEventType = Exclude<EventType, (typeof INTERNAL_EVENT_TYPES)[number]>;

/** An event as operations emit it (typed by its kind); the outbox adds id, sequence and timestamp. */
export type DomainEvent = {
  [T in EventType]: { type: T; orgId: string; data: EventData<T> };
}[EventType];

/** An event's data as read back and checked against its schema. */
export type EventPayload<T extends EventType> = z.output<Catalogue[T]['data']>;

/** A type with its checked data: the tagged union every consumer switches on (`type` narrows `data`). */
export type TypedEventData = {
  [T in EventType]: { type: T; data: EventPayload<T> };
}[EventType];

export const isEventType = (t: string): t is EventType => Object.hasOwn(EVENT_CATALOGUE, t);

export type ParsedEvent = { ok: true; event: TypedEventData } | { ok: false; error: string };

/**
 * Checks an event read back from storage (or received) against its type's schema. On success the
 * event is the data as given (validated, not copied: keys a newer server added are kept); on failure
 * `error` names the type or the paths that do not match and why — never the values, which may be
 * secrets (a command's response_url).
 */
export function parseEvent(type: string, data: unknown): ParsedEvent {
  if (!isEventType(type)) return { ok: false, error: `unknown event type "${type.slice(0, 64)}"` };
  const r = EVENT_CATALOGUE[type].data.safeParse(data);
  if (r.success) return { ok: true, event: { type, data } as TypedEventData };
  const error = r.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.map(String).join('.') || '(data)'}: ${i.message}`)
    .join('; ');
  return { ok: false, error: error.slice(0, 500) };
}
