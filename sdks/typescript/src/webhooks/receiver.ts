import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  ActionInvokedData,
  AnyWebhookEvent,
  CommandInvokedData,
  EventType,
  WebhookEvent,
} from '../events.js';
import { DEFAULT_TOLERANCE_SECONDS, verifySignature } from './verify.js';

/**
 * The bot's webhook endpoint. Per delivery: read the raw bytes (bounded), verify them (verify.ts)
 * before parsing, drop a repeated `webhook-id`, answer 200 at once, then run the handlers — so a slow
 * handler never makes the server time out (5 s) and retry. The exception is `command.invoked`: the
 * server posts the JSON `{ content, ephemeral? }` of the answer as the bot's reply, so that answer waits
 * for the command handler, bounded by `commandTimeoutMs` (below the server's 5 s). A click on one of
 * the bot's message actions (`action.invoked`) is an ordinary event: its handlers (`action(...)`) run
 * after the 200, and the bot answers by editing its message (`client.updateMessage`).
 */

export interface Logger {
  error(message: string, err?: unknown): void;
  warn?(message: string): void;
}

export interface WebhookReceiverOptions {
  /** Listening port (default 8000; 0 picks a free one, see `port` after start()). */
  port?: number;
  /** Interface to listen on (default: all). */
  host?: string;
  /** The bot's webhook secret (`whsec_…`). Required unless `publicKey` is given. */
  secret?: string;
  /**
   * The bot's ed25519 public key (`whpk_…`): deliveries must carry a valid Standard Webhooks `v1a`
   * signature. Enough on its own (nothing secret on the receiving side); with `secret` too, both are checked.
   */
  publicKey?: string;
  /** Listening path (default `/webhook`). */
  path?: string;
  /** Largest accepted distance of `webhook-timestamp` from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** true (default): Standard Webhooks signature + every other one present; false: any one valid signature. */
  requireAll?: boolean;
  /** How many recent webhook-ids are remembered to drop repeats (default 10 000). */
  dedupeSize?: number;
  /** Largest accepted body in bytes (default 1 MiB; a message may hold 2 × 50,000 characters). */
  maxBodyBytes?: number;
  /** Time a command handler has to produce the reply, in ms (default 4 000; the server waits 5 s). */
  commandTimeoutMs?: number;
  /** Where handler errors and refusals go (default: console). Secrets and bodies are never logged. */
  logger?: Logger;
}

export interface HandlerContext {
  /** `webhook-id`: stable across the server's retries of one event. */
  webhookId: string | undefined;
}

export type Handler<E> = (event: E, ctx: HandlerContext) => void | Promise<void>;

/** What a command handler returns: the reply text, or the reply object; nothing means no reply. */
export type CommandReply = string | { content: string; ephemeral?: boolean } | void | undefined | null;
export type CommandHandler = (
  cmd: CommandInvokedData,
  event: WebhookEvent<'command.invoked'>,
  ctx: HandlerContext & { signal: AbortSignal },
) => CommandReply | Promise<CommandReply>;

/** Handles a click on one of the bot's message actions (a button, or an option of a select). */
export type ActionHandler = (
  action: ActionInvokedData,
  event: WebhookEvent<'action.invoked'>,
  ctx: HandlerContext,
) => void | Promise<void>;

const consoleLogger: Logger = {
  // eslint-disable-next-line no-console
  error: (m, err) => console.error(`[workroom] ${m}`, err ?? ''),
  // eslint-disable-next-line no-console
  warn: (m) => console.warn(`[workroom] ${m}`),
};

/** Insertion-ordered set with a size bound: the oldest id goes first. */
class RecentIds<V> {
  readonly #map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(id: string): V | undefined {
    return this.#map.get(id);
  }
  has(id: string): boolean {
    return this.#map.has(id);
  }
  add(id: string, v: V): void {
    this.#map.set(id, v);
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value!);
  }
}

type AnyHandler = Handler<AnyWebhookEvent>;
type Reply = { content: string; ephemeral?: boolean } | null;

export class WebhookReceiver {
  readonly #o: Required<Omit<WebhookReceiverOptions, 'host' | 'publicKey'>> & {
    host: string | undefined;
    publicKey: string | undefined;
  };
  readonly #handlers = new Map<string, AnyHandler[]>();
  readonly #commands = new Map<string, CommandHandler>();
  /** Action handlers by action id ('*': every action). */
  readonly #actions = new Map<string, ActionHandler[]>();
  /** Seen webhook-ids; for commands, the reply they produced (a repeat answers the same reply). */
  readonly #seen: RecentIds<Promise<Reply> | null>;
  #server: Server | undefined;
  readonly #running = new Set<Promise<void>>();

  constructor(options: WebhookReceiverOptions) {
    if (!options?.secret && !options?.publicKey) {
      throw new TypeError('WebhookReceiver: secret (or publicKey) is required');
    }
    if (options.publicKey && Buffer.from(options.publicKey.replace(/^whpk_/, ''), 'base64').length !== 32) {
      throw new TypeError('WebhookReceiver: publicKey is an ed25519 key of 32 bytes, whpk_<base64>');
    }
    const commandTimeoutMs = options.commandTimeoutMs ?? 4000;
    if (commandTimeoutMs >= 5000)
      throw new RangeError('commandTimeoutMs must be under the server time-out of 5000 ms');
    this.#o = {
      port: options.port ?? 8000,
      host: options.host,
      secret: options.secret ?? '',
      publicKey: options.publicKey,
      path: options.path ?? '/webhook',
      toleranceSeconds: options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
      requireAll: options.requireAll ?? true,
      dedupeSize: options.dedupeSize ?? 10_000,
      maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
      commandTimeoutMs,
      logger: options.logger ?? consoleLogger,
    };
    this.#seen = new RecentIds(this.#o.dedupeSize);
  }

  /** Registers a handler for one event type, or `'*'` for every event. Handlers run after the 200. */
  on<T extends EventType>(eventType: T, handler: Handler<WebhookEvent<T>>): this;
  on(eventType: '*', handler: Handler<AnyWebhookEvent>): this;
  on(eventType: string, handler: Handler<AnyWebhookEvent>): this;
  on(eventType: string, handler: Handler<never>): this {
    const list = this.#handlers.get(eventType) ?? [];
    list.push(handler as AnyHandler);
    this.#handlers.set(eventType, list);
    return this;
  }

  /**
   * Answers the slash command `/name` (without the slash). The returned text or `{ content, ephemeral }`
   * is the bot's reply; it must come within `commandTimeoutMs`, else the reply is dropped (logged).
   */
  command(name: string, handler: CommandHandler): this {
    this.#commands.set(name.replace(/^\//, '').toLowerCase(), handler);
    return this;
  }

  /**
   * Handles clicks on the bot's message actions with these ids (`'*'` or no ids: every action), after
   * the 200 like `on()` handlers: `receiver.action('approve', (a) => client.updateMessage(a.message_id,
   * { content: `Approved by ${a.user.display_name}`, actions: null }))`. Same as
   * `on('action.invoked', …)` filtered by `data.action_id`.
   */
  action(actionIds: string | readonly string[], handler: ActionHandler): this {
    const ids = typeof actionIds === 'string' ? [actionIds] : actionIds.length > 0 ? actionIds : ['*'];
    for (const id of ids) {
      const list = this.#actions.get(id) ?? [];
      list.push(handler);
      this.#actions.set(id, list);
    }
    return this;
  }

  /** The port listened on (useful with port 0), once started. */
  get port(): number | undefined {
    return (this.#server?.address() as AddressInfo | null)?.port;
  }

  /** Resolves once listening. */
  async start(): Promise<void> {
    if (this.#server) throw new Error('WebhookReceiver already started');
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        this.#o.logger.error('webhook request failed', err);
        if (!res.headersSent) this.#json(res, 500, { error: 'internal', message: 'A handler failed' });
      });
    });
    this.#server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.#o.port, this.#o.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.#server = undefined; // e.g. EADDRINUSE: start() may be called again
      throw err;
    }
  }

  /** Resolves once the port is closed (open connections are ended). Handlers still running may finish. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Waits for the handlers started so far (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async #readBody(req: IncomingMessage): Promise<Buffer | undefined> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.#o.maxBodyBytes) return undefined;
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== this.#o.path)
      return this.#json(res, 404, { error: 'not_found', message: 'No webhook here' });
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return this.#json(res, 405, { error: 'method_not_allowed', message: 'Use POST' });
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    const raw = declared > this.#o.maxBodyBytes ? undefined : await this.#readBody(req);
    if (!raw) {
      res.setHeader('connection', 'close');
      return this.#json(res, 413, {
        error: 'payload_too_large',
        message: `The body is larger than ${this.#o.maxBodyBytes} bytes`,
      });
    }
    const v = verifySignature(raw, req.headers, this.#o.secret, {
      publicKey: this.#o.publicKey,
      toleranceSeconds: this.#o.toleranceSeconds,
      requireAll: this.#o.requireAll,
    });
    if (!v.ok) {
      this.#o.logger.warn?.(`webhook refused: ${v.reason}`);
      return this.#json(res, 401, { error: 'invalid_signature', message: v.reason });
    }
    let event: AnyWebhookEvent;
    try {
      event = JSON.parse(raw.toString('utf8')) as AnyWebhookEvent;
    } catch {
      return this.#json(res, 400, { error: 'invalid_json', message: 'The body is not JSON' });
    }
    if (typeof event !== 'object' || event === null || typeof event.event_type !== 'string') {
      return this.#json(res, 400, {
        error: 'invalid_envelope',
        message: 'The body is not a Workroom event envelope',
      });
    }
    // Without Standard Webhooks headers (relaxed mode) the event id plays the webhook-id's part.
    const id = v.webhookId ?? (typeof event.event_id === 'string' ? event.event_id : undefined);
    const ctx: HandlerContext = { webhookId: id };
    // A slash command runs once per invocation, whichever delivery brings it: its invocation_id is a
    // second key besides the webhook-id.
    const invocation =
      event.event_type === 'command.invoked' && typeof event.data?.invocation_id === 'string'
        ? `invocation:${event.data.invocation_id}`
        : undefined;
    const keys = [id, invocation].filter((k): k is string => k !== undefined);
    const seenKey = keys.find((k) => this.#seen.has(k));
    if (seenKey !== undefined) {
      const earlier = this.#seen.get(seenKey);
      const reply = earlier ? await earlier : null;
      for (const k of keys) if (!this.#seen.has(k)) this.#seen.add(k, earlier ?? null);
      return this.#json(res, 200, reply ?? { ok: true, duplicate: true });
    }

    let reply: Promise<Reply> | null = null;
    if (event.event_type === 'command.invoked') reply = this.#runCommand(event, ctx);
    for (const k of keys) this.#seen.add(k, reply);
    const answer = reply ? await reply : null;
    this.#json(res, 200, answer ?? { ok: true });
    // The handlers run once the answer is written (the spec's 5-second rule). A sender that hung up
    // first (its time-out) gets them run all the same: the delivery verified and its id is recorded.
    if (res.closed || res.destroyed) this.#dispatch(event, ctx);
    else res.once('close', () => this.#dispatch(event, ctx));
  }

  #dispatch(event: AnyWebhookEvent, ctx: HandlerContext): void {
    const handlers = [...(this.#handlers.get(event.event_type) ?? []), ...(this.#handlers.get('*') ?? [])];
    if (event.event_type === 'action.invoked' && typeof event.data?.action_id === 'string') {
      const e = event;
      const chosen = new Set([
        ...(this.#actions.get(e.data.action_id) ?? []),
        ...(this.#actions.get('*') ?? []),
      ]);
      for (const a of chosen) handlers.push(() => a(e.data, e, ctx));
    }
    for (const h of handlers) {
      const run = (async () => {
        try {
          await h(event, ctx);
        } catch (err) {
          this.#o.logger.error(`handler for ${event.event_type} failed`, err);
        }
      })();
      this.#running.add(run);
      void run.finally(() => this.#running.delete(run));
    }
  }

  async #runCommand(event: WebhookEvent<'command.invoked'>, ctx: HandlerContext): Promise<Reply> {
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
    } catch (err) {
      this.#o.logger.error(`command /${data.command} failed`, err);
      return null;
    } finally {
      clearTimeout(timer);
    }
  }
}
