import type { TypedEventData } from '../domain/events.js';
import type { OutboxEvent, OutboxReader } from '../events/outbox-reader.js';

/**
 * An outbox event as the WebSocket hub sees it: one of the event catalogue's types (`type` narrows
 * `data`, checked against its schema by the outbox reader); `seq` is its position in the one commit
 * order.
 */
export type FeedEvent = TypedEventData & {
  seq: number;
  id: string;
  orgId: string;
  createdAt: string;
};

/**
 * What the hub needs from the outbox: every event once, in position order, with no gap, and a way to
 * read a past range again for a client that resumes. The hub depends on nothing else, so that the
 * source can be swapped (this interim reader, or the shared outbox reader of events/) in one place.
 */
export interface EventFeed {
  /** Position of the last event handed to the listener; 0 when there was none. */
  readonly position: number;
  /** Starts at the current end of the outbox; `listener` gets each later event once, in order. */
  start(listener: (events: FeedEvent[]) => Promise<void>): Promise<void>;
  stop(): void;
  /** Retained events of one organization with `after < seq <= upTo`, in order, at most `limit`. */
  readRange(orgId: string, after: number, upTo: number, limit: number): Promise<FeedEvent[]>;
  /** The lowest position a client may resume from: every event after it is still retained. */
  oldestResumable(): Promise<number>;
}

/**
 * The feed over the shared outbox reader (events/outbox-reader.ts): its positions increase in commit
 * order on both databases, so a client resuming from position p can never miss an event that committed
 * late. The position is what clients see as `seq`.
 */
export class ReaderFeed implements EventFeed {
  #position = 0;
  #unsubscribe: (() => void) | undefined;

  constructor(private readonly reader: OutboxReader) {}

  get position(): number {
    return this.#position;
  }

  async start(listener: (events: FeedEvent[]) => Promise<void>): Promise<void> {
    this.#position = await this.reader.head();
    this.#unsubscribe = this.reader.subscribe('realtime', this.#position, async (rows) => {
      await listener(rows.map(toFeedEvent));
      this.#position = rows[rows.length - 1]!.position;
    });
  }

  stop(): void {
    this.#unsubscribe?.();
  }

  async readRange(orgId: string, after: number, upTo: number, limit: number): Promise<FeedEvent[]> {
    return (await this.reader.readRange(orgId, after, upTo, limit)).map(toFeedEvent);
  }

  async oldestResumable(): Promise<number> {
    const [first] = await this.reader.readAfter(0, 1);
    return first ? Number(first.position) - 1 : this.#position;
  }
}

function toFeedEvent(r: OutboxEvent): FeedEvent {
  // The pair (type, data) as checked; TypeScript cannot rebuild the union from its two members.
  return {
    type: r.type,
    data: r.data,
    seq: r.position,
    id: r.id,
    orgId: r.org_id,
    createdAt: r.created_at,
  } as FeedEvent;
}
