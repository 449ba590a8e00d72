/**
 * The socket transport: deliveries to a bot that holds a WebSocket open to this instance
 * (`GET /api/bots/socket`, docs/SOCKET.md) are sent over it instead of being POSTed. Everything else
 * about a delivery stays the same (a row per event and bot, attempts recorded in the delivery log,
 * retries, at least once, the same delivery id on every attempt), as for the in-process transport of
 * built-in bots (in-process.ts).
 *
 * An attempt ends when the bot acknowledges the delivery (`{"type":"ack","delivery_id"}`), when its
 * socket closes first, or when the lease (WORKROOM_SOCKET_LEASE) runs out: there is no short deadline.
 *
 * `delivery/` defines the interface; the socket hub (`transports/socket/`) implements it and `app.ts`
 * wires the two together (delivery must not import transports).
 */

/** What the bot receives: the envelope a webhook body carries, the delivery id and the attempt number. */
export interface SocketEnvelope {
  event_type: string;
  event_id: string;
  /** The event's time (ISO 8601). */
  timestamp: string;
  bot_id: string;
  data: unknown;
  /** The id every attempt of this delivery shares (the `webhook-id` of HTTP deliveries). */
  delivery_id: string;
  /** 1 for the first attempt. */
  attempt: number;
}

/** How a socket attempt ended. */
export type SocketOutcome =
  | { kind: 'acked'; response?: unknown }
  /** The bot answered `nack`: a failed attempt, retried on the usual schedule. */
  | { kind: 'nacked'; reason?: string }
  /** The socket closed (or no socket of the bot was open any more) before the ack. */
  | { kind: 'closed' }
  /** No ack within the lease. */
  | { kind: 'expired'; leaseMs: number }
  /** Shutdown: handed back, nothing recorded. */
  | { kind: 'cancelled' };

export interface SocketTransport {
  /** Whether the bot has a socket open to this instance. */
  connected(botId: string): boolean;
  /**
   * Whether the bot has a socket open to another instance on the same database (and none here): its
   * deliveries are left to that instance (PostgreSQL clusters; as of the last look, about a second old).
   */
  connectedElsewhere?(botId: string): boolean;
  /**
   * Sends one delivery over one of the bot's sockets and waits for its outcome (never rejects);
   * `sent` is called once the frame is written.
   */
  deliver(envelope: SocketEnvelope, signal: AbortSignal, sent?: () => void): Promise<SocketOutcome>;
}

/** The delivery log's words for socket attempts (docs/SOCKET.md). */
export const SOCKET_LOG = {
  acked: 'acked over the socket',
  closed: 'socket closed before the ack',
  expired: (leaseMs: number) => `lease expired: no ack within ${Math.round(leaseMs / 1000)} s`,
  nacked: (reason: string | undefined) => `nacked by the bot${reason ? `: ${reason}` : ''}`,
  /** Not an attempt: the row is left for the instance that holds the bot's socket. */
  elsewhere: 'left for the instance that holds the bot’s socket',
  /** Not an attempt: the row waits (last_error) until a socket connects or the wait runs out. */
  waiting: 'waiting for a socket: the bot has no webhook URL and no socket connected',
  gaveUp: (waitMs: number) =>
    `no socket connected within ${Math.round(waitMs / 1000)} s and no webhook URL; not sent`,
} as const;
