import type { ServerResponse } from 'node:http';
import type { Server } from 'node:net';

/** Server-Sent Events framing for MCP: one JSON-RPC message per `message` event. */

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

export function sseEvent(data: string, id?: string): string {
  return id === undefined
    ? `event: message\ndata: ${data}\n\n`
    : `id: ${id}\nevent: message\ndata: ${data}\n\n`;
}

const KEEPALIVE_TICKS = 25;

/**
 * A long-lived stream (the GET stream of a session): a keep-alive comment every 25 s, and the stream
 * ends as soon as the server stops listening, so that a graceful shutdown does not wait for it.
 */
export class SseStream {
  readonly #timer: NodeJS.Timeout;
  #ticks = 0;
  closed = false;

  /**
   * `farewell`: a last message written when the server ends the stream (shutdown, a cap) rather than
   * the client — the result of a `subscriptions/listen` request, its graceful close.
   */
  constructor(
    readonly res: ServerResponse,
    socket: { server?: Server },
    onClose: () => void,
    private readonly farewell?: string,
  ) {
    this.#timer = setInterval(() => {
      if (socket.server && !socket.server.listening) return this.end();
      if (++this.#ticks % KEEPALIVE_TICKS === 0) this.res.write(': keep-alive\n\n');
    }, 1000);
    this.#timer.unref();
    res.on('close', () => {
      this.closed = true;
      clearInterval(this.#timer);
      onClose();
    });
  }

  send(data: string, id?: string): void {
    if (!this.closed) this.res.write(sseEvent(data, id));
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.#timer);
    if (this.farewell !== undefined) this.res.write(sseEvent(this.farewell));
    this.res.end();
  }
}
