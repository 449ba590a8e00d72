import type { AnyWebhookEvent, EventType, WebhookEvent } from '../events.js';
import type { ActionHandler, CommandHandler, HandlerContext, Logger } from '../webhooks/receiver.js';
import { MiniWebSocket, UpgradeRefused } from './ws.js';

/**
 * The bot's socket (docs/SOCKET.md): the bot opens a WebSocket to the server with its API key and
 * receives its events over it — no public URL, no signature to check (the socket is authenticated),
 * the same handlers as `WebhookReceiver`.
 *
 * A handler's returned promise is the acknowledgement: once every handler of a delivery has resolved,
 * the delivery is acked; if one throws, it is nacked (the server retries it on its usual schedule).
 * There is no short deadline: an unacked delivery is sent again only after the server's lease (5 min
 * by default). Deliveries are deduplicated by their id (the same id on every attempt): a redelivery of
 * one already handled — its ack was lost with a dropped connection — is acked again without running
 * the handlers twice (within the last `dedupeSize` ids).
 *
 * The connection is kept: heartbeats (a WebSocket ping every `heartbeatMs`; a server that answers
 * nothing for two intervals is taken for dead), and reconnects with jittered, capped exponential
 * back-off. `start()` resolves once the first connection is ready; while the server cannot be reached
 * it tries again with the same back-off until `timeoutMs` (default 30 s, as the Python SDK's
 * `start(timeout=30)`), then rejects with the last error; it rejects at once if the server refuses the
 * key (401/403), which no retry would change.
 */

export interface SocketReceiverOptions {
  /** The server, e.g. `https://workroom.example.com`. */
  baseUrl: string;
  /** The bot's API key (`wrk_bot_…`); it needs the scope `messages:read` (or no scopes). */
  apiKey: string;
  /** How many recent delivery ids are remembered to drop repeats (default 10 000). */
  dedupeSize?: number;
  /** Time a command handler has to produce the reply, in ms (default 4 000; the server waits 5 s). */
  commandTimeoutMs?: number;
  /** Ping interval in ms (default 25 000: under the idle time-outs of common proxies). */
  heartbeatMs?: number;
  /** Reconnect back-off: first delay and cap in ms (default 250 and 30 000), jittered. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Where handler errors and reconnects go (default: console). The key is never logged. */
  logger?: Logger;
}

/** What a socket handler's context adds: the delivery id (the `webhookId` too) and the attempt. */
export interface SocketHandlerContext extends HandlerContext {
  deliveryId: string;
  attempt: number;
}

/** A socket handler: as a webhook handler (`Handler`), with the delivery's id and attempt in `ctx`. */
export type SocketHandler<E> = (event: E, ctx: SocketHandlerContext) => void | Promise<void>;

interface Frame {
  type?: string;
  delivery_id?: string;
  attempt?: number;
  event_type?: string;
  heartbeat_ms?: number;
  code?: string;
  message?: string;
  [k: string]: unknown;
}

type Reply = { content: string; ephemeral?: boolean } | null;
/** A delivery's handling: ok with the command's reply, or failed (handled again when it comes back). */
type Outcome = { ok: true; reply: Reply } | { ok: false; reason: string };
interface Seen {
  p: Promise<Outcome>;
  done?: Outcome;
}

const consoleLogger: Logger = {
  // eslint-disable-next-line no-console
  error: (m, err) => console.error(`[workroom] ${m}`, err ?? ''),
  // eslint-disable-next-line no-console
  warn: (m) => console.warn(`[workroom] ${m}`),
};

export class SocketReceiver {
  readonly #o: Required<Omit<SocketReceiverOptions, 'logger'>> & { logger: Logger };
  readonly #handlers = new Map<string, SocketHandler<AnyWebhookEvent>[]>();
  readonly #commands = new Map<string, CommandHandler>();
  readonly #actions = new Map<string, ActionHandler[]>();
  /** Delivery ids seen, with their handling (insertion-ordered, bounded). */
  readonly #seen = new Map<string, Seen>();
  readonly #running = new Set<Promise<unknown>>();
  #ws: MiniWebSocket | undefined;
  #stopped = true;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #lastHeard = 0;
  #connects = 0;

  constructor(options: SocketReceiverOptions) {
    if (!options?.baseUrl) throw new TypeError('SocketReceiver: baseUrl is required');
    if (!options.apiKey) throw new TypeError('SocketReceiver: apiKey is required');
    const commandTimeoutMs = options.commandTimeoutMs ?? 4000;
    if (commandTimeoutMs >= 5000)
      throw new RangeError('commandTimeoutMs must be under the server time-out of 5000 ms');
    this.#o = {
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      apiKey: options.apiKey,
      dedupeSize: options.dedupeSize ?? 10_000,
      commandTimeoutMs,
      heartbeatMs: options.heartbeatMs ?? 25_000,
      reconnectMinMs: options.reconnectMinMs ?? 250,
      reconnectMaxMs: options.reconnectMaxMs ?? 30_000,
      logger: options.logger ?? consoleLogger,
    };
  }

  /** Registers a handler for one event type, or `'*'` for every event; its promise is the ack. */
  on<T extends EventType>(eventType: T, handler: SocketHandler<WebhookEvent<T>>): this;
  on(eventType: '*', handler: SocketHandler<AnyWebhookEvent>): this;
  on(eventType: string, handler: SocketHandler<AnyWebhookEvent>): this;
  on(eventType: string, handler: SocketHandler<never>): this {
    const list = this.#handlers.get(eventType) ?? [];
    list.push(handler as SocketHandler<AnyWebhookEvent>);
    this.#handlers.set(eventType, list);
    return this;
  }

  /** Answers the slash command `/name`; the returned text or `{ content, ephemeral }` is the reply. */
  command(name: string, handler: CommandHandler): this {
    this.#commands.set(name.replace(/^\//, '').toLowerCase(), handler);
    return this;
  }

  /** Handles clicks on the bot's message actions with these ids (`'*'` or none: every action). */
  action(actionIds: string | readonly string[], handler: ActionHandler): this {
    const ids = typeof actionIds === 'string' ? [actionIds] : actionIds.length > 0 ? actionIds : ['*'];
    for (const id of ids) {
      const list = this.#actions.get(id) ?? [];
      list.push(handler);
      this.#actions.set(id, list);
    }
    return this;
  }

  /** Whether a connection is open and ready now. */
  get connected(): boolean {
    return this.#ws?.open ?? false;
  }

  /** Connections made so far (the first one included). */
  get connections(): number {
    return this.#connects;
  }

  /** Connects; resolves once the server said `ready`. Rejects if the server refuses the key. */
  async start(options: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.#stopped) throw new Error('SocketReceiver already started');
    this.#stopped = false;
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (let failures = 0; ; failures++) {
      try {
        await this.#connect();
        break;
      } catch (err) {
        const delay = this.#backoff(failures);
        if (keyRefused(err) || this.#stopped || Date.now() + delay > deadline) {
          this.#stopped = true;
          throw err;
        }
        this.#o.logger.warn?.(
          `connect failed (${err instanceof Error ? err.message : String(err)}); retrying in ${delay} ms`,
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
    this.#heartbeat = setInterval(() => this.#beat(), Math.max(100, this.#o.heartbeatMs / 2));
    this.#heartbeat.unref();
  }

  /** Closes the connection and stops reconnecting. Handlers still running may finish (see `idle`). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#heartbeat);
    const ws = this.#ws;
    this.#ws = undefined;
    if (!ws) return;
    await new Promise<void>((resolve) => {
      this.#onClosed = resolve;
      ws.close(1000, 'bot stopping');
    });
  }

  /** Drops the connection without a close handshake, as a dead network would (tests, chaos). */
  dropConnection(): void {
    this.#ws?.terminate();
  }

  /** Waits for the handlers started so far. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  #onClosed: (() => void) | undefined;

  #connect(): Promise<void> {
    const url = `${this.#o.baseUrl.replace(/^http/, 'ws')}/api/bots/socket`;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      let ws: MiniWebSocket | undefined;
      MiniWebSocket.connect(
        url,
        { authorization: `Bearer ${this.#o.apiKey}` },
        {
          message: (text, self) => {
            ws = self;
            this.#lastHeard = Date.now();
            let f: Frame;
            try {
              f = JSON.parse(text) as Frame;
            } catch {
              return;
            }
            if (f.type === 'ready' && !ready) {
              ready = true;
              this.#failures = 0;
              this.#connects++;
              this.#ws = ws;
              resolve();
              return;
            }
            if (ws) this.#onFrame(ws, f);
          },
          pong: () => (this.#lastHeard = Date.now()),
          close: (code, reason) => {
            if (this.#ws === ws) this.#ws = undefined;
            const closed = this.#onClosed;
            this.#onClosed = undefined;
            closed?.();
            if (!ready) {
              reject(new Error(`socket closed before ready: ${code} ${reason}`));
              return;
            }
            if (!this.#stopped) {
              this.#o.logger.warn?.(`socket closed (${code} ${reason}); reconnecting`);
              this.#reconnectLater();
            }
          },
        },
      ).then(
        (opened) => {
          ws = opened;
          this.#lastHeard = Date.now();
          if (this.#stopped) opened.close(1000, 'bot stopping');
        },
        (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))),
      );
    });
  }

  /** The wait before try `failures + 1`: exponential from reconnectMinMs, capped, jittered (50–100 %). */
  #backoff(failures: number): number {
    const cap = Math.min(this.#o.reconnectMaxMs, this.#o.reconnectMinMs * 2 ** Math.min(failures, 20));
    return Math.round(cap * (0.5 + Math.random() / 2));
  }

  #reconnectLater(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    const delay = this.#backoff(this.#failures);
    this.#failures++;
    this.#timer = setTimeout(() => {
      if (this.#stopped) return;
      this.#connect().catch((err: unknown) => {
        if (keyRefused(err)) {
          this.#o.logger.error('the server refuses the API key; not reconnecting', err);
          this.#stopped = true;
          return;
        }
        this.#o.logger.warn?.(`reconnect failed: ${err instanceof Error ? err.message : String(err)}`);
        this.#reconnectLater();
      });
    }, delay);
  }

  #beat(): void {
    const ws = this.#ws;
    if (!ws || !ws.open) return;
    if (Date.now() - this.#lastHeard > 2 * this.#o.heartbeatMs) {
      this.#o.logger.warn?.('the server answered nothing for two heartbeats; reconnecting');
      ws.terminate();
      return;
    }
    ws.ping();
  }

  #onFrame(ws: MiniWebSocket, f: Frame): void {
    if (f.type === 'error') {
      this.#o.logger.warn?.(`server: ${f.code ?? 'error'}: ${f.message ?? ''}`);
      return;
    }
    if (f.type !== 'event' || typeof f.delivery_id !== 'string' || typeof f.event_type !== 'string') return;
    const id = f.delivery_id;
    const { type: _t, delivery_id: _d, attempt, ...envelope } = f;
    const event = envelope as unknown as AnyWebhookEvent;
    const ctx: SocketHandlerContext = { webhookId: id, deliveryId: id, attempt: Number(attempt ?? 1) };
    // A repeat of a delivery in hand or handled (its ack was lost) is not handled again; one whose
    // handling failed is (the server retries it).
    const prev = this.#seen.get(id);
    let handling: Promise<Outcome>;
    if (prev && !(prev.done && !prev.done.ok)) handling = prev.p;
    else {
      handling = this.#handle(event, ctx);
      const entry: Seen = { p: handling };
      void handling.then((o) => (entry.done = o));
      this.#remember(id, entry);
    }
    const run = handling.then((out) => {
      // The answer goes on the connection open now (the one the delivery came on may have closed:
      // then the server sends it again and this answers from `#seen`).
      const now = this.#ws ?? ws;
      if (out.ok)
        now.send(JSON.stringify({ type: 'ack', delivery_id: id, ...(out.reply && { response: out.reply }) }));
      else now.send(JSON.stringify({ type: 'nack', delivery_id: id, reason: out.reason.slice(0, 300) }));
    });
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }

  #remember(id: string, entry: Seen): void {
    this.#seen.delete(id);
    this.#seen.set(id, entry);
    if (this.#seen.size > this.#o.dedupeSize) this.#seen.delete(this.#seen.keys().next().value!);
  }

  async #handle(event: AnyWebhookEvent, ctx: SocketHandlerContext): Promise<Outcome> {
    try {
      let reply: Reply = null;
      if (event.event_type === 'command.invoked') reply = await this.#runCommand(event, ctx);
      const handlers: (() => unknown)[] = [
        ...(this.#handlers.get(event.event_type) ?? []),
        ...(this.#handlers.get('*') ?? []),
      ].map((h) => () => h(event, ctx));
      if (event.event_type === 'action.invoked' && typeof event.data?.action_id === 'string') {
        const e = event;
        const chosen = new Set([
          ...(this.#actions.get(e.data.action_id) ?? []),
          ...(this.#actions.get('*') ?? []),
        ]);
        for (const a of chosen) handlers.push(() => a(e.data, e, ctx));
      }
      await Promise.all(handlers.map(async (h) => h()));
      return { ok: true, reply };
    } catch (err) {
      this.#o.logger.error(`handler for ${event.event_type} failed`, err);
      return { ok: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }

  async #runCommand(event: WebhookEvent<'command.invoked'>, ctx: SocketHandlerContext): Promise<Reply> {
    const data = event.data;
    const handler = this.#commands.get(String(data?.command ?? '').toLowerCase());
    if (!handler) return null;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.#o.commandTimeoutMs);
    });
    const work = (async () => handler(data, event, { ...ctx, signal: abort.signal }))();
    try {
      const out = await Promise.race([work, timeout]);
      if (out === 'timeout') {
        abort.abort(new Error('command time-out'));
        this.#o.logger.error(
          `command /${data.command} took longer than ${this.#o.commandTimeoutMs} ms; no reply`,
        );
        work.catch((err: unknown) => this.#o.logger.error(`command /${data.command} failed`, err));
        return null;
      }
      if (out === undefined || out === null) return null;
      if (typeof out === 'string') return { content: out };
      return { content: out.content, ...(out.ephemeral !== undefined ? { ephemeral: out.ephemeral } : {}) };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The server refused the key (401/403): no retry would change that. */
const keyRefused = (err: unknown): boolean =>
  err instanceof UpgradeRefused && (err.status === 401 || err.status === 403);
