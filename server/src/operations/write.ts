import type { EventData, EventType } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { EventRow } from '../storage/schema.js';
import type { Stores } from '../storage/stores/index.js';
import { publishedEvent, type PublishedEvent } from '../events/bus.js';
import { AppError } from '../domain/errors.js';
import type { DryRun, OpContext, Services } from './context.js';
import { completeInWrite } from './idempotency.js';

export interface WriteTx {
  stores: Stores;
  /** Current time of the transaction (`Services.clock`), one value for every row it writes. */
  now: string;
  /** Records an event in the outbox, in this transaction; `data` is checked against the catalogue's type. */
  emit<T extends EventType>(type: T, orgId: string, data: EventData<T>): void;
}

/**
 * Who writes. An operation passes its own context, whose Idempotency-Key claim (if any) completes in
 * the write; work outside any request (a worker, a bus consumer, the scheduler, start-up) passes
 * `outsideRequest(services)`, which carries none and so can never complete a request's claim. The
 * services alone are not accepted: an operation cannot lose its claim by passing `ctx.services`.
 */
export type WriteContext = Pick<OpContext, 'services' | 'idempotency'> &
  Partial<Pick<OpContext, 'actor' | 'dryRun' | 'inWrite'>>;

/** Thrown inside a dry run's transaction to roll it back (never escapes `write`). */
const ROLLBACK = Symbol('dry run rollback');

/** The context of a write made outside any request: no Idempotency-Key claim. */
export const outsideRequest = (services: Services): WriteContext => ({ services, idempotency: undefined });

/**
 * Runs a change in one transaction with its events written to the outbox in the same transaction
 * (so an event exists if and only if its change committed), then wakes local event consumers. Under an
 * Idempotency-Key (the operation context's claim), the key's record is completed in the same
 * transaction (see idempotency.ts).
 */
export async function write<T>(ctx: WriteContext, fn: (tx: WriteTx) => Promise<T>): Promise<T> {
  const { services, idempotency: claim, actor, dryRun } = ctx;
  // Backstop of the key grants' read_only (operation.ts refuses writing operations before they start).
  if (actor?.kind === 'bot' && actor.grants?.readOnly) throw readOnlyRefusal();
  if (dryRun) return rolledBack(ctx, dryRun, fn);
  const pending: Omit<EventRow, 'seq'>[] = [];
  const published: PublishedEvent[] = [];
  const result = await services.storage.transaction(async (stores) => {
    const now = services.clock.nowIso(); // business time (runtime/clock.ts)
    const value = await fn({
      stores,
      now,
      emit: (type, orgId, data) => {
        const id = newId();
        pending.push({ id, org_id: orgId, type, data: JSON.stringify(data), created_at: now });
        published.push(publishedEvent(id, type, orgId, data, now));
      },
    });
    // (Awaited only when there is something to wait for: each await is a turn of the microtask queue.)
    if (ctx.inWrite) await ctx.inWrite(stores, now);
    await stores.events.append(pending);
    if (claim) await completeInWrite(stores, value, claim);
    return value;
  });
  // The bus carries the parsed events (no sequence: consumers that need order read the outbox).
  if (published.length > 0) services.bus.publish(published);
  return result;
}

/**
 * Tells the bots among `members` that the resources they reach over MCP changed (a new DM room, a
 * project they joined, a topic in one of their projects): an internal event, not offered to webhooks.
 */
export function emitResourcesChanged(
  tx: WriteTx,
  orgId: string,
  members: readonly { type: string; id: string }[],
): void {
  const botIds = members.filter((m) => m.type === 'bot').map((m) => m.id);
  if (botIds.length > 0) tx.emit('resources.changed', orgId, { bot_ids: botIds });
}

export const readOnlyRefusal = (): AppError =>
  new AppError('grant_denied', 'This API key is read-only (grant read_only): it cannot write', {
    grant: 'read_only',
  });

/**
 * A dry run's write: the same statements in a transaction that is rolled back, so constraints and
 * the rows the operation reads back behave as in a real write; the events are only named in `dryRun`,
 * never appended or published, and no Idempotency-Key record is completed.
 */
async function rolledBack<T>(ctx: WriteContext, dryRun: DryRun, fn: (tx: WriteTx) => Promise<T>): Promise<T> {
  const types: string[] = [];
  let value: { v: T } | undefined;
  try {
    await ctx.services.storage.transaction(async (stores) => {
      const now = ctx.services.clock.nowIso();
      value = { v: await fn({ stores, now, emit: (type) => void types.push(type) }) };
      throw ROLLBACK;
    });
  } catch (err) {
    if (err !== ROLLBACK) throw err;
  }
  dryRun.events.push(...types);
  return value!.v;
}
