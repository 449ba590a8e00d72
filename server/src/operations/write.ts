import type { EventData, EventType } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { EventRow } from '../storage/schema.js';
import type { Stores } from '../storage/stores/index.js';
import { publishedEvent, type PublishedEvent } from '../events/bus.js';
import type { OpContext, Services } from './context.js';
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
export type WriteContext = Pick<OpContext, 'services' | 'idempotency'>;

/** The context of a write made outside any request: no Idempotency-Key claim. */
export const outsideRequest = (services: Services): WriteContext => ({ services, idempotency: undefined });

/**
 * Runs a change in one transaction with its events written to the outbox in the same transaction
 * (so an event exists if and only if its change committed), then wakes local event consumers. Under an
 * Idempotency-Key (the operation context's claim), the key's record is completed in the same
 * transaction (see idempotency.ts).
 */
export async function write<T>(ctx: WriteContext, fn: (tx: WriteTx) => Promise<T>): Promise<T> {
  const { services, idempotency: claim } = ctx;
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
    await stores.events.append(pending);
    await completeInWrite(stores, value, claim);
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
