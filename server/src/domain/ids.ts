import { randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

/** Current time as an ISO-8601 UTC timestamp with milliseconds (fixed width, so it sorts as text). */
export const nowIso = (): string => new Date().toISOString();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);
