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

/** An upgrade refused before it became a WebSocket: the plain HTTP answer, JSON like every error. */
export function refusal(
  status: 400 | 503,
  code: string,
  message: string,
  retryAfterSeconds?: number,
): string {
  const body = JSON.stringify({ error: { code, message } });
  const reason = status === 400 ? 'Bad Request' : 'Service Unavailable';
  const retry = retryAfterSeconds === undefined ? '' : `Retry-After: ${retryAfterSeconds}\r\n`;
  return (
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n${retry}` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

export interface RealtimeLimits {
  /** Bytes queued for one client before it is disconnected with 1013. */
  maxBufferedBytes: number;
  /** Events held for a client while its replay runs, before it is disconnected with 1013. */
  maxPendingEvents: number;
  /** Largest frame a client may send (ws `maxPayload`; larger frames close with 1009). */
  maxPayloadBytes: number;
  /** The authentication window: a connection without its auth message by then is closed with 4401. */
  authTimeoutMs: number;
  heartbeatMs: number;
  maxConnectionsPerUser: number;
  /**
   * Connections not authenticated yet, in all. When the pool is full, a newcomer from an address that
   * holds fewer of them than the biggest holder takes the place of that holder's oldest one (closed with
   * 1013); otherwise the upgrade answers HTTP 503.
   */
  maxUnauthenticated: number;
  /** Connections not authenticated yet from one client address (an IPv6 /64); more answer HTTP 503. */
  maxUnauthenticatedPerAddress: number;
  /** A resume point further back than this many positions answers `reset` instead of a replay. */
  maxReplaySpan: number;
  /** Replays running at once for one user, for one organization, in all; more wait their turn. */
  maxResumesPerUser: number;
  maxResumesPerOrg: number;
  maxResumes: number;
  /** Events read from the outbox per replay query, and the positions one query may scan at most. */
  replayPage: number;
  replayScanWindow: number;
  /**
   * Milliseconds of replay work per turn of the event loop, shared by every replay: between two turns
   * of replay the server serves everything else that is ready.
   */
  replaySliceMs: number;
  /** While other work runs, the share of the time replays may take at most (between 0 and 1). */
  replayShare: number;
}

export const DEFAULT_LIMITS: RealtimeLimits = {
  maxBufferedBytes: 1024 * 1024,
  maxPendingEvents: 10_000,
  maxPayloadBytes: 16 * 1024,
  authTimeoutMs: 5_000,
  heartbeatMs: 30_000,
  maxConnectionsPerUser: 10,
  maxUnauthenticated: 2_000,
  maxUnauthenticatedPerAddress: 50,
  maxReplaySpan: 10_000,
  maxResumesPerUser: 2,
  maxResumesPerOrg: 4,
  maxResumes: 16,
  replayPage: 50,
  replayScanWindow: 2_000,
  replaySliceMs: 1,
  replayShare: 0.25,
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
