import type { EventType } from '../domain/events.js';
import { newId, nowIso } from '../domain/ids.js';
import type { EventRow } from '../storage/schema.js';
import type { Stores } from '../storage/stores/index.js';
import type { Services } from './context.js';
import { completeInWrite } from './idempotency.js';

export interface WriteTx {
  stores: Stores;
  /** Current time of the transaction, one value for every row it writes. */
  now: string;
  /** Records an event in the outbox, in this transaction. */
  emit(type: EventType, orgId: string, data: Record<string, unknown>): void;
}

/**
 * Runs a change in one transaction with its events written to the outbox in the same transaction
 * (so an event exists if and only if its change committed), then wakes local event consumers. Under an
 * Idempotency-Key, the key's record is completed in the same transaction (see idempotency.ts).
 */
export async function write<T>(services: Services, fn: (tx: WriteTx) => Promise<T>): Promise<T> {
  const pending: Omit<EventRow, 'seq'>[] = [];
  const result = await services.storage.transaction(async (stores) => {
    const now = nowIso();
    const value = await fn({
      stores,
      now,
      emit: (type, orgId, data) =>
        pending.push({ id: newId(), org_id: orgId, type, data: JSON.stringify(data), created_at: now }),
    });
    await stores.events.append(pending);
    await completeInWrite(stores, value);
    return value;
  });
  if (pending.length > 0) {
    // seq is assigned by the database; consumers that need it read the outbox, the bus is only a wake-up.
    services.bus.publish(pending.map((e) => ({ ...e, seq: 0 })));
  }
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
