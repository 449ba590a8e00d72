import { z } from 'zod';
import { MessageActions } from './actions.js';

/**
 * The event catalogue: one zod schema per event type, the single source of
 * - the TypeScript type of every event (`emit()` takes a `DomainEvent`, so a payload that does not
 *   match its type does not compile),
 * - the runtime check of payloads read back from the outbox (`parseEventData`),
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
    data: z
      .object({
        invocation_id: id,
        command: z.string(),
        args: z.string(),
        text: z.string(),
        bot_id: id,
        command_id: id,
        user_id: id,
        ...container,
        invoked_at: ts,
      })
      .passthrough(),
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
    data: z.object({ bot_id: id, requested_by: id.optional(), message: z.string() }).passthrough(),
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
] as const satisfies readonly EventType[];

/**
 * For one user only: pushed over the live stream to the connections of the user in `data.user_id`, and
 * to nobody else (realtime/visibility.ts); never delivered to webhooks.
 */
export const USER_EVENT_TYPES = ['read_marker.updated'] as const satisfies readonly EventType[];

/**
 * Never delivered to webhooks (and not in the OpenAPI document's `webhooks`): resources.changed (MCP
 * sessions), notification.created (built-in bots) and the user events above (that user's live stream).
 */
export const INTERNAL_EVENT_TYPES = [
  'resources.changed',
  'notification.created',
  ...USER_EVENT_TYPES,
] as const satisfies readonly EventType[];

/** An event as operations emit it (typed by its kind); the outbox adds id, sequence and timestamp. */
export type DomainEvent = {
  [T in EventType]: { type: T; orgId: string; data: EventData<T> };
}[EventType];

export const isEventType = (t: string): t is EventType => Object.hasOwn(EVENT_CATALOGUE, t);

/** Checks a payload read back from storage against its type's schema; null when it does not match. */
export function parseEventData(type: string, data: unknown): Record<string, unknown> | null {
  if (!isEventType(type)) return null;
  const r = EVENT_CATALOGUE[type].data.safeParse(data);
  return r.success ? (r.data as Record<string, unknown>) : null;
}
