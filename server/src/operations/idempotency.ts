import { createHash } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { Stores } from '../storage/stores/index.js';
import type { Actor, Services } from './context.js';
import { withFields } from '../domain/objects.js';

/**
 * Idempotency keys (Stripe semantics), for any surface: a request retried with the same key and the
 * same input answers the first result and changes nothing again, also when the two race.
 *
 * - The record key is the caller (user or bot) plus the client's key, so keys of different callers
 *   never collide.
 * - A 'pending' row is inserted first; the primary key decides which of two racing requests runs.
 *   The loser waits up to `waitMs` for the winner's result and answers it, or answers 409
 *   idempotency_conflict if the first request is still running.
 * - The same key with a different input (or for another operation) answers 409 idempotency_conflict.
 * - Only successes are remembered: when the first request fails, its claim is released and a retry
 *   runs again (a failure changed nothing, as every operation runs in one transaction).
 * - The record is completed in the operation's own write transaction (`completeInWrite`, called by
 *   `write()`), so the change and the answer that replays it commit together: a process that dies after
 *   the commit leaves a completed record, never a pending claim that a retry would take over and run
 *   again. (An idempotent operation makes one write, whose value is its result.)
 * - Records expire after 24 hours; a claim still pending after `STALE_PENDING_MS` (its request died
 *   before its write committed, so nothing changed) is taken over.
 */

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const STALE_PENDING_MS = 60_000;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentResult {
  status: number;
  body: unknown;
}

export interface IdempotencyOptions {
  /** Operation name (or tool name) and its raw input: the request fingerprint. */
  operation: string;
  input: unknown;
  /** How long a duplicate waits for a running first request. */
  waitMs?: number;
  /** The status the answer will have for a result (REST: 201 for creations); default 200. */
  statusOf?: (result: unknown) => number;
}

/**
 * The claim that the write of the running idempotent operation completes. It travels explicitly, on
 * the operation's context (`OpContext.idempotency`) into `write()`: never through ambient state, so a
 * bus consumer or worker that writes can never complete (or trip over) a request's claim.
 */
export interface IdempotencyClaim {
  key: string;
  statusOf: (result: unknown) => number;
  /** The response stored by the write, once it has run. */
  stored?: string;
  /** The operation has ended: work it left behind (a timer, say) is not its write. */
  ended?: boolean;
  /**
   * Instead of completing an Idempotency-Key record: run in the write's transaction with its value
   * (an approved pending action marks itself executed, or throws to roll the write back when another
   * run already did: operations/approvals/pending-actions.ts).
   */
  inWrite?: (stores: Stores, value: unknown) => Promise<void>;
}

/**
 * Called by `write()` inside its transaction, with the value it returns: completes the idempotency
 * record of the operation running under a key, if any, in the same transaction.
 */
export async function completeInWrite(
  stores: Stores,
  value: unknown,
  p: IdempotencyClaim | undefined,
): Promise<void> {
  if (!p || p.ended) return;
  if (p.stored !== undefined) {
    throw new AppError('internal', 'An idempotent operation must make one write (it made a second)');
  }
  const response = JSON.stringify(value);
  if (p.inWrite) await p.inWrite(stores, value);
  else await stores.idempotency.complete(p.key, p.statusOf(value), response);
  p.stored = response;
}

/** Canonical JSON (object keys sorted), so that key order does not change the fingerprint. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function validateIdempotencyKey(key: string): void {
  if (!KEY_RE.test(key)) {
    throw new AppError(
      'invalid_input',
      'Idempotency-Key: must be 1 to 255 printable ASCII characters without spaces',
      { field: 'Idempotency-Key' },
    );
  }
}

const recordKey = (actor: Actor, key: string): string =>
  actor.kind === 'user' ? `user:${actor.userId}:${key}` : `bot:${actor.botId}:${key}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `fn` once per (caller, key). Without a key it simply runs `fn`. The answer says whether it was
 * replayed from an earlier request.
 */
export async function withIdempotency(
  services: Services,
  actor: Actor,
  key: string | undefined,
  opts: IdempotencyOptions,
  fn: (claim?: IdempotencyClaim) => Promise<IdempotentResult>,
): Promise<IdempotentResult & { replayed: boolean }> {
  if (key === undefined) return withFields(await fn(), { replayed: false });
  validateIdempotencyKey(key);
  const store = services.storage.stores.idempotency;
  const rk = recordKey(actor, key);
  const hash = createHash('sha256')
    .update(canonical({ operation: opts.operation, input: opts.input }))
    .digest('hex');
  const deadline = Date.now() + (opts.waitMs ?? 5000);

  for (;;) {
    const now = services.clock.nowIso(); // record times are business time (runtime/clock.ts)
    await store.deleteIfOlder(rk, new Date(Date.parse(now) - IDEMPOTENCY_TTL_MS).toISOString());
    if (await store.claim(rk, hash, now)) {
      const pending: IdempotencyClaim = { key: rk, statusOf: opts.statusOf ?? (() => 200) };
      let result: IdempotentResult;
      try {
        result = await fn(pending);
      } catch (err) {
        // Releases a pending claim only: if the write committed, its completed record stays.
        await store.release(rk, now).catch(() => undefined);
        throw err;
      } finally {
        pending.ended = true;
      }
      const response = JSON.stringify(result.body);
      if (pending.stored !== response) {
        // No write completed it (or the answer is not the write's value): record it now.
        await store.complete(rk, result.status, response);
      }
      return withFields(result, { replayed: false });
    }
    const row = await store.get(rk);
    if (!row) continue; // released or expired between our claim and read: try again
    if (row.request_hash !== hash) {
      throw new AppError(
        'idempotency_conflict',
        'This Idempotency-Key was already used with a different request; use a new key',
      );
    }
    if (row.state === 'done') {
      return { status: row.status_code ?? 200, body: JSON.parse(row.response ?? 'null'), replayed: true };
    }
    if (Date.parse(row.created_at) < services.clock.now() - STALE_PENDING_MS) {
      await store.release(rk, row.created_at);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new AppError(
        'idempotency_conflict',
        'A request with this Idempotency-Key is still being processed; retry later',
      );
    }
    await sleep(20);
  }
}

/** Deletes expired records once a minute (a lifecycle service started by app.ts). */
export class IdempotencyPurger {
  readonly name = 'idempotency purge';
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly services: Services) {}

  start(): void {
    this.#timer = setInterval(() => void this.purge(), 60_000);
    this.#timer.unref();
  }

  async purge(): Promise<void> {
    if (!this.services.leader.isLeader) return; // one instance does it (scheduler/leader.ts)
    const before = new Date(this.services.clock.now() - IDEMPOTENCY_TTL_MS).toISOString();
    try {
      await this.services.storage.stores.idempotency.purgeOlderThan(before);
    } catch (err) {
      this.services.log.warn({ err }, 'could not purge expired idempotency keys');
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
  }
}
