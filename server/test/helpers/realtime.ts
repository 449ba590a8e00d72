import WebSocket from 'ws';

/** A WebSocket client of `GET /api/realtime` that records every message and how the socket closed. */
export class LiveClient {
  readonly messages: any[] = [];
  closed: { code: number; reason: string } | undefined;
  readonly ws: WebSocket;
  #waiters: (() => void)[] = [];

  /** `light`: event contents are dropped on arrival (a test that streams megabytes measures memory). */
  constructor(
    baseUrl: string,
    opts: { headers?: Record<string, string>; query?: string; light?: boolean } = {},
  ) {
    const url = `${baseUrl.replace(/^http/, 'ws')}/api/realtime${opts.query ?? ''}`;
    this.ws = new WebSocket(url, { headers: opts.headers });
    this.ws.on('message', (data, isBinary) => {
      const m = isBinary ? { binary: true } : JSON.parse(data.toString());
      if (opts.light && m.event?.data?.content) m.event.data.content = m.event.data.content.slice(0, 12); // short: a copy, not a slice of the original
      this.messages.push(m);
      this.#wake();
    });
    this.ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.#wake();
    });
    this.ws.on('error', () => undefined); // seen as 'close'
  }

  /** Connects and authenticates; resolves with the `ready` message. */
  static async connect(
    baseUrl: string,
    token: string,
    lastSeq?: number,
    opts: { light?: boolean; readyTimeoutMs?: number } = {},
  ): Promise<LiveClient> {
    const c = new LiveClient(baseUrl, opts);
    await c.opened();
    c.send({ type: 'auth', token, ...(lastSeq === undefined ? {} : { last_seq: lastSeq }) });
    await c.waitFor((m) => m.type === 'ready', opts.readyTimeoutMs);
    return c;
  }

  opened(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('close', () => reject(new Error('closed before it opened')));
    });
  }

  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  async #until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = check();
      if (v !== undefined) return v;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(0, 800)}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The first message (from the start) that matches. */
  waitFor(pred: (m: any) => boolean, timeoutMs = 5000): Promise<any> {
    return this.#until(() => this.messages.find(pred), timeoutMs, 'a matching message');
  }

  waitClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    return this.#until(() => this.closed, timeoutMs, 'the close');
  }

  /** The `event` messages received so far. */
  get events(): any[] {
    return this.messages.filter((m) => m.type === 'event');
  }

  /** The last seq of an event or ready message: the resume point. */
  get lastSeq(): number {
    let s = 0;
    for (const m of this.messages) if (m.type === 'event' || m.type === 'ready') s = m.seq;
    return s;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.ws.close();
    return this.waitClosed().then(() => undefined);
  }
}
