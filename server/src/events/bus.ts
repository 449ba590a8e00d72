import { AsyncResource } from 'node:async_hooks';
import type { DomainEvent, EventData, EventType } from '../domain/events.js';

/**
 * An event just committed, as its operation emitted it (one of the catalogue's types: `type` narrows
 * `data`). It has no sequence yet: consumers that need the order (webhook fan-out, live updates) read
 * the outbox; the bus only wakes them up without delay.
 */
export type PublishedEvent = DomainEvent & { id: string; createdAt: string };

/** A published event from an emit of type `T` (TypeScript cannot pair a generic type with its data). */
export function publishedEvent<T extends EventType>(
  id: string,
  type: T,
  orgId: string,
  data: EventData<T>,
  createdAt: string,
): PublishedEvent {
  return { id, type, orgId, data, createdAt } as PublishedEvent;
}
type Listener = (events: PublishedEvent[]) => void;

/**
 * In-process fan-out of events after their transaction committed. The outbox table is the durable
 * record; this bus only wakes local consumers (SSE streams, the webhook worker) without polling delay.
 * Listeners must not throw or block; a failing listener is isolated from the others. They run in the
 * bus's own async context, not the publishing request's: what a consumer starts (a delivery, a write)
 * carries no request-scoped state along, such as the idempotency record the request is completing.
 */
export class EventBus {
  readonly #listeners = new Set<Listener>();
  readonly #scope = new AsyncResource('EventBus');

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  publish(events: PublishedEvent[]): void {
    if (events.length === 0 || this.#listeners.size === 0) return;
    this.#scope.runInAsyncScope(() => {
      for (const l of this.#listeners) {
        try {
          l(events);
        } catch {
          // A consumer's bug must not break the request that committed the change.
        }
      }
    });
  }
}
