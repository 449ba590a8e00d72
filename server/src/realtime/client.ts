import type { WebSocket } from 'ws';
import type { UserActor } from '../operations/context.js';
import type { FeedEvent } from './feed.js';
import { CLOSE, closeReason, type RealtimeLimits } from './protocol.js';
import type { VisibilityCache } from './visibility.js';

/** Counters of the hub (tests and metrics read them). */
export interface RealtimeStats {
  /** Largest amount queued for one client, in bytes: never more than the bound plus one message. */
  peakBufferedBytes: number;
  /** Clients disconnected for not reading fast enough. */
  slowDisconnects: number;
  /** Events sent by replays (resumes), in all. */
  replayedEvents: number;
}

export type ClientState = 'auth' | 'authenticating' | 'replaying' | 'live' | 'closed';

/** How long a closed client may take to answer the close frame before its socket is destroyed. */
const CLOSE_GRACE_MS = 2000;

/**
 * One WebSocket connection. Everything the server sends goes through `send`, which refuses to queue
 * more than `maxBufferedBytes` for a client that does not read: such a client is disconnected (1013)
 * instead of growing the server's memory.
 */
export class RealtimeClient {
  state: ClientState = 'auth';
  actor: UserActor | undefined;
  token: string | undefined;
  visibility: VisibilityCache | undefined;
  /** The last position the live dispatcher considered for this client. */
  livePos = 0;
  /** Live events that arrived while the replay ran; sent (if visible) right after it. */
  pending: FeedEvent[] = [];
  /** A pong (or any frame) arrived since the last ping. */
  alive = true;
  authTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly ws: WebSocket,
    private readonly limits: RealtimeLimits,
    private readonly stats: RealtimeStats,
    /** The client's address as the pre-auth pool counts it (fairness.ts `addressKey`). */
    readonly address: string,
  ) {}

  get open(): boolean {
    return this.state !== 'closed' && this.ws.readyState === this.ws.OPEN;
  }

  /** Sends one JSON message; false when the client is gone or was just cut off for being too slow. */
  send(message: Record<string, unknown>): boolean {
    if (!this.open) return false;
    const text = JSON.stringify(message);
    const queued = this.ws.bufferedAmount;
    if (queued + Buffer.byteLength(text) > this.limits.maxBufferedBytes) {
      this.stats.slowDisconnects++;
      this.close(CLOSE.tooSlow, `too slow: more than ${this.limits.maxBufferedBytes} bytes not read`);
      return false;
    }
    this.ws.send(text);
    this.stats.peakBufferedBytes = Math.max(this.stats.peakBufferedBytes, this.ws.bufferedAmount);
    return true;
  }

  sendEvent(ev: FeedEvent): boolean {
    return this.send({
      type: 'event',
      seq: ev.seq,
      event: { event_id: ev.id, event_type: ev.type, timestamp: ev.createdAt, data: ev.data },
    });
  }

  /** Holds a live event during the replay; false (and disconnected) when too many wait. */
  hold(ev: FeedEvent): boolean {
    if (this.pending.length >= this.limits.maxPendingEvents) {
      this.close(CLOSE.tooSlow, 'too many events arrived during the replay; reconnect');
      return false;
    }
    this.pending.push(ev);
    return true;
  }

  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.pending = [];
    clearTimeout(this.authTimer);
    try {
      this.ws.close(code, closeReason(reason));
    } catch {
      this.ws.terminate();
      return;
    }
    // A client that does not read never answers the close frame queued behind its data.
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }
}
