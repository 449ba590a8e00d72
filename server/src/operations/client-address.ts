import type { IncomingMessage } from 'node:http';

/**
 * The client's address: the connection's peer, or behind a trusted reverse proxy
 * (WORKROOM_TRUST_PROXY) the last X-Forwarded-For entry, the one that proxy added. One implementation
 * for every edge (HTTP routes through transports/http/io.ts, the WebSocket hub in realtime/).
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = req.headers['x-forwarded-for'];
  if (trustProxy && typeof forwarded === 'string') {
    const last = forwarded.split(',').pop()?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
