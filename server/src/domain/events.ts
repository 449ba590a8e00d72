/** Event kinds of the spec. `task.assigned` is emitted but is not in the subscribable list. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'message.created',
  'message.updated',
  'message.deleted',
  'task.created',
  'task.status_changed',
  'channel.updated',
  'member.joined',
  'member.left',
] as const;
/**
 * command.invoked: a user ran a bot's slash command; delivered to that bot only.
 * resources.changed: internal, never offered to webhooks: the bots (`bot_ids`) whose MCP resources
 * (channels, topics, DM rooms they reach) changed otherwise than by a channel's member.joined/left, so
 * that their MCP sessions send notifications/resources/list_changed.
 */
export const EVENT_TYPES = [
  ...SUBSCRIBABLE_EVENT_TYPES,
  'task.assigned',
  'command.invoked',
  'resources.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];

/** An event as operations emit it; the outbox adds id, sequence and timestamp. */
export interface DomainEvent {
  type: EventType;
  orgId: string;
  data: Record<string, unknown>;
}
