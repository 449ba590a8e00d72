import WebSocket from 'ws';

/** A frame the server sent on a bot socket (docs/SOCKET.md). */
export interface SocketFrame {
  type: string;
  delivery_id?: string;
  attempt?: number;
  event_type?: string;
  event_id?: string;
  timestamp?: string;
  bot_id?: string;
  data?: any;
  [k: string]: unknown;
}

/**
 * A bot's socket for tests, over the `ws` library (not the SDK): records every frame, acks on demand
 * (or at once with `autoAck`), and can be dropped without a close handshake.
 */
export class TestBotSocket {
  readonly frames: SocketFrame[] = [];
  closed = false;
  autoAck = false;
  readonly #waiters = new Set<() => void>();

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const f = JSON.parse(raw.toString()) as SocketFrame;
      this.frames.push(f);
      if (this.autoAck && f.type === 'event') this.ack(f.delivery_id!);
      for (const w of this.#waiters) w();
    });
    ws.on('close', () => {
      this.closed = true;
      for (const w of this.#waiters) w();
    });
    ws.on('error', () => undefined);
  }

  /** Connects and waits for `ready`; rejects with the HTTP status of a refusal (`status`, `body`). */
  static connect(
    baseUrl: string,
    key: string | undefined,
    opts: { path?: string; autoAck?: boolean } = {},
  ): Promise<TestBotSocket> {
    const url = baseUrl.replace(/^http/, 'ws') + (opts.path ?? '/api/bots/socket');
    const ws = new WebSocket(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    const s = new TestBotSocket(ws);
    s.autoAck = opts.autoAck ?? false;
    return new Promise((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, body })),
        );
      });
      ws.once('error', reject);
      const check = () => {
        if (s.frames.some((f) => f.type === 'ready')) resolve(s);
      };
      s.#waiters.add(check);
    });
  }

  get events(): SocketFrame[] {
    return this.frames.filter((f) => f.type === 'event');
  }

  ack(deliveryId: string, response?: unknown): void {
    this.send({ type: 'ack', delivery_id: deliveryId, ...(response !== undefined && { response }) });
  }

  nack(deliveryId: string, reason?: string): void {
    this.send({ type: 'nack', delivery_id: deliveryId, ...(reason && { reason }) });
  }

  send(frame: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  /** Waits until `pred` holds over the frames (generous time-out: CI is a loaded 2-core machine). */
  async until<T>(pred: (s: TestBotSocket) => T | undefined | false, timeoutMs = 15_000): Promise<T> {
    const now = pred(this);
    if (now) return now;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `timed out; frames: ${JSON.stringify(this.frames.map((f) => [f.type, f.delivery_id, f.attempt, f.data?.content]))}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const v = pred(this);
        if (!v) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(v);
      };
      this.#waiters.add(check);
    });
  }

  /** The first event frame whose message content is `content`. */
  eventWith(content: string): Promise<SocketFrame> {
    return this.until((s) => s.events.find((f) => f.data?.content === content));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const done = new Promise<void>((r) => this.ws.once('close', () => r()));
    this.ws.close();
    await done;
  }

  /** Drops the connection without a close handshake (as a crash or a dead network would). */
  async drop(): Promise<void> {
    if (this.closed) return;
    const done = new Promise<void>((r) => this.ws.once('close', () => r()));
    this.ws.terminate();
    await done;
  }
}
