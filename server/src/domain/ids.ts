import { randomBytes } from 'node:crypto';

/**
 * New ids are UUIDv7 (RFC 9562): a millisecond timestamp then random bits. They sort by creation
 * time, so B-tree inserts land at the right edge of each index instead of a random page — fewer page
 * writes per insert on SQLite and PostgreSQL alike — and still carry 74 random bits.
 */
let pool = Buffer.alloc(0);
let offset = 0;
export function newId(): string {
  if (offset + 10 > pool.length) {
    pool = randomBytes(10 * 256);
    offset = 0;
  }
  const ms = Date.now();
  const hex = ms.toString(16).padStart(12, '0');
  const r = pool.subarray(offset, offset + 10);
  offset += 10;
  const rand = r.toString('hex'); // 20 hex digits
  const variant = ((parseInt(rand.slice(3, 4), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${rand.slice(0, 3)}-${variant}${rand.slice(4, 7)}-${rand.slice(7, 19)}`;
}

/** Current time as an ISO-8601 UTC timestamp with milliseconds (fixed width, so it sorts as text). */
export const nowIso = (): string => new Date().toISOString();
