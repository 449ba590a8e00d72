import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { EVENT_CATALOGUE, INTERNAL_EVENT_TYPES } from '../../../server/src/domain/events.js';
import type { EventDataMap } from '../src/index.js';

/**
 * The SDK's event payload types (src/events.ts, from the OpenAPI document's `webhooks` section) against
 * the server's event catalogue. The comparison is done by the type checker (`npm run typecheck` covers
 * this file): a field added, removed or retyped on either side makes `Same<…>` false and this file
 * fails to compile.
 */
type Delivered = Exclude<keyof typeof EVENT_CATALOGUE, (typeof INTERNAL_EVENT_TYPES)[number]>;
type ServerData<T extends Delivered> = z.output<(typeof EVENT_CATALOGUE)[T]['data']>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

const sameShape: { [T in Delivered]: Same<EventDataMap[T], ServerData<T>> } = {
  'message.created': true,
  'message.updated': true,
  'message.deleted': true,
  'task.created': true,
  'task.status_changed': true,
  'task.assigned': true,
  'channel.updated': true,
  'member.joined': true,
  'member.left': true,
  'channel.created': true,
  'channel.archived': true,
  'project.created': true,
  'project.updated': true,
  'project.archived': true,
  'topic.created': true,
  'topic.updated': true,
  'topic.archived': true,
  'reaction.added': true,
  'reaction.removed': true,
  'command.invoked': true,
  'action.invoked': true,
  'job.due': true,
  'webhook.test': true,
  'pending_action.resolved': true,
};
// Both directions: no event type of the SDK is unknown to the server.
const noExtra: Same<keyof EventDataMap, Delivered> = true;

describe('event payload types', () => {
  it('name every event type the server delivers', () => {
    const delivered = Object.keys(EVENT_CATALOGUE).filter(
      (t) => !(INTERNAL_EVENT_TYPES as readonly string[]).includes(t),
    );
    expect(Object.keys(sameShape).sort()).toEqual(delivered.sort());
    expect(noExtra).toBe(true);
  });
});
