import { randomBytes } from 'node:crypto';

/**
 * New ids are UUIDv7 (RFC 9562): a millisecond timestamp then random bits. They sort by creation
 * time, so B-tree inserts land at the right edge of each index instead of a random page — fewer page
 * writes per insert on SQLite and PostgreSQL alike — and still carry 62 random bits.
 *
 * Within one process they are also strictly increasing (RFC 9562 §6.2, method 1: the 12 bits of
 * `rand_a` are a counter). Ids made in the same millisecond count up from a random start below 2^11,
 * so that rows stamped with the same time and listed by (time, id) keep the order they were made in;
 * a counter that runs out, or a clock that steps back, carries on from the last timestamp used.
 */
let pool = Buffer.alloc(0);
let offset = 0;
let lastMs = -1;
let counter = 0;
export function newId(): string {
  if (offset + 10 > pool.length) {
    pool = randomBytes(10 * 256);
    offset = 0;
  }
  const r = pool.subarray(offset, offset + 10);
  offset += 10;
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    counter = ((r[0]! << 8) | r[1]!) & 0x7ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = ((r[0]! << 8) | r[1]!) & 0x7ff;
  }
  const hex = lastMs.toString(16).padStart(12, '0');
  const rand = r.toString('hex'); // 20 hex digits; the first 4 gave the counter's start
  const variant = ((parseInt(rand.slice(4, 5), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${counter.toString(16).padStart(3, '0')}-${variant}${rand.slice(5, 8)}-${rand.slice(8, 20)}`;
}

/** Current time as an ISO-8601 UTC timestamp with milliseconds (fixed width, so it sorts as text). */
export const nowIso = (): string => new Date().toISOString();
