import type { webhooks } from './generated/api.js';

/**
 * Event envelopes and payloads, from the `webhooks` section of docs/api/openapi.json (generated from
 * the server's event catalogue, server/src/domain/events.ts), so handlers get the server's real
 * shapes: `{ event_type, timestamp, bot_id, data, event_id, signature }`.
 */

export type EventType = keyof webhooks;
type Body<T extends EventType> =
  NonNullable<webhooks[T]['post']> extends { requestBody: { content: { 'application/json': infer B } } }
    ? B
    : never;
type GeneratedData = { [T in EventType]: Body<T> extends { data: infer D } ? D : never };

/** A user ran one of the bot's slash commands (`/name args`); sent to that bot only. */
export type CommandInvokedData = GeneratedData['command.invoked'] & {
  /**
   * For a reply after the receiver's answer (long work): `client.respondToCommand(cmd, …)`, or POST
   * `{ content, content_html?, ephemeral? }` here without credentials until `response_url_expires_at`
   * (at most 5 times).
   */
  response_url?: string;
  response_url_expires_at?: string;
};

export type EventDataMap = Omit<GeneratedData, 'command.invoked'> & { 'command.invoked': CommandInvokedData };

export type MessageEventData = EventDataMap['message.created'];
export type MessageUpdatedData = EventDataMap['message.updated'];
export type MessageDeletedData = EventDataMap['message.deleted'];
export type TaskEventData = EventDataMap['task.created'];
export type TaskStatusChangedData = EventDataMap['task.status_changed'];
export type TaskAssignedData = EventDataMap['task.assigned'];
export type ChannelUpdatedData = EventDataMap['channel.updated'];
export type MemberEventData = EventDataMap['member.joined'];
export type WebhookTestData = EventDataMap['webhook.test'];
/** A user clicked a button or chose an option of one of the bot's messages (docs/ACTIONS.md). */
export type ActionInvokedData = EventDataMap['action.invoked'];
/** A job the bot scheduled is due (docs/SCHEDULER.md); sent to that bot only. */
export type JobDueData = EventDataMap['job.due'];

/** The envelope of one event type, with its typed `data`. */
export type WebhookEvent<T extends EventType = EventType> = Omit<Body<T>, 'data'> & { data: EventDataMap[T] };

/** Any event, narrowed by `event_type`. */
export type AnyWebhookEvent = { [T in EventType]: WebhookEvent<T> }[EventType];
