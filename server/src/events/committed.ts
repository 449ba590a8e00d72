import type { Service } from '../runtime/lifecycle.js';
import type { PublishedEvent } from './bus.js';
import type { OutboxEvent, OutboxReader } from './outbox-reader.js';

/** `positions`: the outbox position of each of `events`, when the source has positions. */
type Listener = (events: PublishedEvent[], positions?: number[]) => void;

/** Committed events, each once and in commit order; `subscribe` answers the unsubscribe function. */
export interface CommittedEvents {
  subscribe(listener: Listener): () => void;
  /**
   * Committed events after `position` (at most `limit`) and the position of each: a source with
   * positions (the outbox) has it, so a consumer that kept a position can catch up on any instance.
   */
  readAfter?(position: number, limit: number): Promise<{ events: PublishedEvent[]; positions: number[] }>;
}

/**
 * Every committed event of the database, from the shared outbox (events/outbox-reader.ts), as the
 * in-process bus would hand them over: what a consumer that must hear other instances' changes too
 * subscribes to (the MCP GET stream's and `subscriptions/listen`'s list_changed notifications). It
 * reads from the end of the outbox as it starts (a Service, started after the reader is created);
 * listeners may subscribe before. Listeners must not throw or block (a failing one is isolated).
 */
export class OutboxCommittedEvents implements CommittedEvents, Service {
  readonly name = 'committed events';
  readonly #listeners = new Set<Listener>();
  #reader: OutboxReader | undefined;
  #unsubscribe: (() => void) | undefined;

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The reader to follow (created after the consumers that subscribe here). */
  readFrom(reader: OutboxReader): this {
    this.#reader = reader;
    return this;
  }

  async start(): Promise<void> {
    const reader = this.#reader;
    if (!reader) throw new Error('OutboxCommittedEvents: readFrom(reader) before start');
    this.#unsubscribe = reader.subscribe('committed-events', await reader.head(), (rows) => {
      if (this.#listeners.size > 0 && rows.length > 0) {
        const events = rows.map(toPublished);
        const positions = rows.map((r) => r.position);
        for (const l of this.#listeners) {
          try {
            l(events, positions);
          } catch {
            // One consumer's bug must not keep the others from their events.
          }
        }
      }
      return Promise.resolve();
    });
  }

  async readAfter(
    position: number,
    limit: number,
  ): Promise<{ events: PublishedEvent[]; positions: number[] }> {
    const reader = this.#reader;
    if (!reader) throw new Error('OutboxCommittedEvents: readFrom(reader) first');
    const rows = await reader.readAfter(position, limit);
    return { events: rows.map(toPublished), positions: rows.map((r) => r.position) };
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
  }
}

function toPublished(r: OutboxEvent): PublishedEvent {
  // The pair (type, data) as checked by the reader; TypeScript cannot rebuild the union from it.
  return { type: r.type, data: r.data, id: r.id, orgId: r.org_id, createdAt: r.created_at } as PublishedEvent;
}
