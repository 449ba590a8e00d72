import { z } from 'zod';
import { LIMITS } from '../domain/limits.js';
import { ROLES, TASK_PRIORITIES, TASK_STATUSES } from '../domain/roles.js';

/** Input pieces shared by many operations. */

export const uuid = (what: string) => z.uuid({ message: `must be a ${what} UUID` });

export const content = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(LIMITS.messageContent, `must be at most ${LIMITS.messageContent} characters`);

export const contentHtml = z
  .string({ message: 'must be a string' })
  .max(LIMITS.messageContentHtml, `must be at most ${LIMITS.messageContentHtml} characters`);

export const name = z.string().trim().min(1, 'must not be empty').max(LIMITS.name);
export const description = z.string().max(LIMITS.description);
export const role = z.enum(ROLES);
export const taskStatus = z.enum(TASK_STATUSES);
export const taskPriority = z.enum(TASK_PRIORITIES);

/** YYYY-MM-DD that is a real calendar date (2026-02-30 is refused). */
export const isoDate = z.string().refine((s) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === s;
}, 'must be a real date in the form YYYY-MM-DD');

/**
 * A count from a query string or JSON: accepts 5 and "5"; rejects 0, negatives, fractions and values
 * over the maximum with a message naming the limit.
 */
export const limit = (def: number, max: number) =>
  z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(max, `must be at most ${max}`)
    .default(def);

/** The `q` of a type-ahead lookup (mentions, hashtags): required, may be empty, at most 100 characters. */
export const lookupQuery = z.string({ message: 'is required' }).max(100, 'must be at most 100 characters');

export const offset = z.coerce.number().int('must be a whole number').min(0, 'must be 0 or more').default(0);

/** Exactly one of channel_id, topic_id, dm_room_id. */
export const containerFields = {
  channel_id: uuid('channel').optional(),
  topic_id: uuid('topic').optional(),
  dm_room_id: uuid('DM room').optional(),
};

export function exactlyOneContainer(v: {
  channel_id?: string | undefined;
  topic_id?: string | undefined;
  dm_room_id?: string | undefined;
}): boolean {
  return [v.channel_id, v.topic_id, v.dm_room_id].filter((x) => x !== undefined).length === 1;
}
export const EXACTLY_ONE_CONTAINER = {
  message: 'exactly one of channel_id, topic_id, dm_room_id must be given',
  path: ['channel_id'],
};
