import type { EventData, EventType } from '../domain/events.js';
import { newId, nowIso } from '../domain/ids.js';
import type { EventRow } from '../storage/schema.js';
import type { Stores } from '../storage/stores/index.js';
import type { PublishedEvent } from '../events/bus.js';
import type { OpContext, Services } from './context.js';
import { completeInWrite } from './idempotency.js';

export interface WriteTx {
  stores: Stores;
  /** Current time of the transaction, one value for every row it writes. */
  now: string;
  /** Records an event in the outbox, in this transaction; `data` is checked against the catalogue's type. */
  emit<T extends EventType>(type: T, orgId: string, data: EventData<T>): void;
}

/**
 * Runs a change in one transaction with its events written to the outbox in the same transaction
 * (so an event exists if and only if its change committed), then wakes local event consumers. Under an
 * Idempotency-Key (the operation context's claim), the key's record is completed in the same
 * transaction (see idempotency.ts).
 */
export async function write<T>(
  target: Services | Pick<OpContext, 'services' | 'idempotency'>,
  fn: (tx: WriteTx) => Promise<T>,
): Promise<T> {
  // An operation passes its context, which may carry an Idempotency-Key claim to complete; anything
  // else (a worker, a bus consumer) passes the services and so can never complete a request's claim.
  const { services, claim } =
    'services' in target
      ? { services: target.services, claim: target.idempotency }
      : { services: target, claim: undefined };
  const pending: Omit<EventRow, 'seq'>[] = [];
  const published: PublishedEvent[] = [];
  const result = await services.storage.transaction(async (stores) => {
    const now = nowIso();
    const value = await fn({
      stores,
      now,
      emit: (type, orgId, data) => {
        const id = newId();
        pending.push({ id, org_id: orgId, type, data: JSON.stringify(data), created_at: now });
        published.push({ id, type, orgId, data: data as Record<string, unknown>, createdAt: now });
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
