import type { EventType, Scope } from '../api/types';

/**
 * The spec's lists of subscribable events and key scopes, as values for the forms. The types come
 * from the OpenAPI document; `Exhaustive` fails to compile when the server adds or drops a value
 * that these arrays do not follow.
 */
type Exhaustive<T, A extends readonly T[]> = [T] extends [A[number]] ? A : never;

const events = [
  'message.created',
  'message.updated',
  'message.deleted',
  'task.created',
  'task.status_changed',
  'channel.updated',
  'member.joined',
  'member.left',
] as const satisfies readonly EventType[];
export const EVENT_TYPES: Exhaustive<EventType, typeof events> = events;

const scopes = [
  'messages:read',
  'messages:write',
  'channels:read',
  'tasks:read',
  'tasks:write',
  'users:read',
  'files:read',
  'files:write',
  'webhooks:write',
  'bots:commands:read',
  'bots:commands:write',
] as const satisfies readonly Scope[];
export const SCOPES: Exhaustive<Scope, typeof scopes> = scopes;
