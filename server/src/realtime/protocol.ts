import { z } from 'zod';

/** The wire protocol of `GET /api/realtime` (docs/REALTIME.md describes it for client authors). */

export const REALTIME_PATH = '/api/realtime';

/** Close codes: 1xxx are the WebSocket standard's, 44xx mirror the HTTP status of the same meaning. */
export const CLOSE = {
  goingAway: 1001,
  internalError: 1011,
  /** "Try again later": the client did not read fast enough. */
  tooSlow: 1013,
  badMessage: 4400,
  unauthenticated: 4401,
  forbidden: 4403,
  tooManyConnections: 4429,
} as const;

export interface RealtimeLimits {
  /** Bytes queued for one client before it is disconnected with 1013. */
  maxBufferedBytes: number;
  /** Events held for a client while its replay runs, before it is disconnected with 1013. */
  maxPendingEvents: number;
  /** Largest frame a client may send (ws `maxPayload`; larger frames close with 1009). */
  maxPayloadBytes: number;
  authTimeoutMs: number;
  heartbeatMs: number;
  maxConnectionsPerUser: number;
  /** Connections that have not authenticated yet, in all; more are refused with HTTP 503. */
  maxUnauthenticated: number;
  /** A resume point further back than this many positions answers `reset` instead of a replay. */
  maxReplaySpan: number;
}

export const DEFAULT_LIMITS: RealtimeLimits = {
  maxBufferedBytes: 1024 * 1024,
  maxPendingEvents: 10_000,
  maxPayloadBytes: 16 * 1024,
  authTimeoutMs: 10_000,
  heartbeatMs: 30_000,
  maxConnectionsPerUser: 10,
  maxUnauthenticated: 1000,
  maxReplaySpan: 100_000,
};

const AuthMessage = z.object({
  type: z.literal('auth'),
  token: z.string().min(1).max(1024),
  last_seq: z.number().int().min(0).optional(),
});
const PingMessage = z.object({ type: z.literal('ping') });
const ClientMessage = z.discriminatedUnion('type', [AuthMessage, PingMessage]);
export type ClientMessage = z.infer<typeof ClientMessage>;

/** Parses one client frame; a string is the reason it was refused. */
export function parseClientMessage(
  data: Buffer | ArrayBuffer | Buffer[],
  isBinary: boolean,
): ClientMessage | string {
  if (isBinary) return 'binary frames are not accepted; send JSON text';
  const text = Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.from(data as ArrayBuffer).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  const r = ClientMessage.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  return issue ? `${issue.path.join('.') || 'message'}: ${issue.message}` : 'bad message';
}

/** A close reason fits in 123 bytes (RFC 6455 §5.5). */
export function closeReason(text: string): string {
  const b = Buffer.from(text, 'utf8');
  return b.length <= 123
    ? text
    : b
        .subarray(0, 120)
        .toString('utf8')
        .replace(/\uFFFD$/, '') + '...';
}
