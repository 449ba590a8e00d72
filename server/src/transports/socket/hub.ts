import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { isAppError } from '../../domain/errors.js';
import { looksLikeBotKey } from '../../domain/secrets.js';
import { scopesAllow } from '../../domain/scopes.js';
import { authenticateBotKey, bearerCredential } from '../../operations/auth/authenticate.js';
import type { BotActor, Services } from '../../operations/context.js';
import type {
  SocketCommandEnvelope as SocketEnvelope,
  SocketCommandOutcome as SocketOutcome,
  SocketCommands,
} from '../../operations/commands/dispatch.js';

/**
 * Bot sockets (`GET /api/bots/socket`, docs/SOCKET.md): a bot opens a WebSocket with its API key and
 * receives its deliveries over it instead of (or besides) its webhook URL. This hub is the transport
 * the delivery worker hands a bot's deliveries to while the bot has a socket here (delivery/socket.ts),
 * and the way a slash command reaches such a bot (operations/commands/dispatch.ts).
 *
 * Protocol (JSON text frames):
 *  - server → bot: `{"type":"ready","bot_id","lease_ms","heartbeat_ms"}` once connected;
 *    `{"type":"event","delivery_id","attempt","event_type","event_id","timestamp","bot_id","data"}` per
 *    delivery (a slash command is an event of type `command.invoked`); `{"type":"pong"}`;
 *    `{"type":"error","code","message"}` for a frame it did not understand.
 *  - bot → server: `{"type":"ack","delivery_id","response"?}` once handled (`response`: a command's
 *    reply); `{"type":"nack","delivery_id","reason"?}` (failed: retried on the usual schedule);
 *    `{"type":"ping"}`.
 * WebSocket pings every WORKROOM_SOCKET_HEARTBEAT; a socket that answered nothing (no pong, no frame)
 * since the last ping is cut off, and its unacknowledged deliveries go out again.
 *
 * Authentication happens before the upgrade (the key in `Authorization: Bearer`), so a refusal is a
 * plain HTTP answer: 401 (no, bad, revoked or expired key; a user token), 403 (the key lacks
 * `messages:read`, or the path names another bot), 429 (the bot has WORKROOM_SOCKETS_PER_BOT sockets
 * here already), 503 (shutting down, or too many upgrades being authenticated).
 */

export const SOCKET_PATH = '/api/bots/socket';
const BOT_PATH = /^\/api\/bots\/([^/]+)\/socket$/;
/** Upgrades being authenticated at once, in all (each holds a socket and a database read). */
const MAX_AUTHENTICATING = 256;
/** Frames from a bot are small (acks; a command's reply is at most 512 KB). */
const MAX_PAYLOAD = 1024 * 1024;
/** A bot that reads nothing while deliveries pile up is cut off (its deliveries go out again). */
const MAX_BUFFERED = 8 * 1024 * 1024;

interface Pending {
  resolve: (o: SocketOutcome) => void;
}

class BotSocket {
  alive = true;
  /** Deliveries sent on it (ties between equally busy sockets go to the one that had fewer). */
  sent = 0;
  readonly inflight = new Map<string, Pending>();
  constructor(
    readonly ws: WebSocket,
    readonly actor: BotActor,
  ) {}

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  send(frame: Record<string, unknown>): boolean {
    if (!this.open) return false;
    if (this.ws.bufferedAmount > MAX_BUFFERED) {
      this.ws.close(1013, 'too much unread: read your socket');
      return false;
    }
    this.ws.send(JSON.stringify(frame));
    return true;
  }
}

/**
 * Implements delivery/socket.ts's SocketTransport (structurally: transports/ do not import delivery/;
 * app.ts hands it to the worker, where the compiler checks the fit) and the commands' SocketCommands.
 */
/**
 * Which bots have sockets on the other instances of one PostgreSQL database (realtime/presence.ts's
 * ClusterPresence, with ids `bot:<id>`), so that an instance leaves their deliveries to the one that
 * holds the socket (docs/SOCKET.md, "Several instances").
 */
export interface SocketPresence {
  connected(id: string): Promise<void>;
  disconnected(id: string): void;
  onlineElsewhere(prefix: string): Promise<Set<string>>;
}

/** How often an instance looks at which bots hold sockets elsewhere. */
const ELSEWHERE_REFRESH_MS = 1000;
const PRESENCE_PREFIX = 'bot:';

export class BotSocketHub implements SocketCommands {
  readonly name = 'bot-sockets';
  readonly #wss: WebSocketServer;
  readonly #byBot = new Map<string, Set<BotSocket>>();
  #count = 0;
  #authenticating = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping = false;
  #presence: SocketPresence | undefined;
  /** Bots with a socket on another instance, as of the last look (PostgreSQL clusters). */
  #elsewhere = new Set<string>();
  #refresh: NodeJS.Timeout | undefined;
  /** Called once a socket of the bot is ready (app.ts: the worker wakes the bot's waiting deliveries). */
  onConnected: (botId: string) => void = () => undefined;

  constructor(private readonly services: Services) {
    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      maxPayload: MAX_PAYLOAD,
      perMessageDeflate: false,
    });
  }

  /** Open sockets on this instance (tests, benchmarks). */
  get size(): number {
    return this.#count;
  }

  start(): void {
    this.#heartbeat = setInterval(() => this.#beat(), this.services.config.sockets.heartbeatMs);
    this.#heartbeat.unref();
    this.#refresh = setInterval(() => void this.#lookElsewhere(), ELSEWHERE_REFRESH_MS);
    this.#refresh.unref();
  }

  /** Shares which bots hold sockets here with the other instances on the database (app.ts, PostgreSQL). */
  usePresence(presence: SocketPresence): void {
    this.#presence = presence;
  }

  /** This instance's bots with a socket, as presence ids (ClusterPresence's heartbeat). */
  presenceIds(): string[] {
    return [...this.#byBot.keys()].map((id) => PRESENCE_PREFIX + id);
  }

  connected(botId: string): boolean {
    return (this.#byBot.get(botId)?.size ?? 0) > 0;
  }

  connectedElsewhere(botId: string): boolean {
    return this.#elsewhere.has(botId) && !this.connected(botId);
  }

  async #lookElsewhere(): Promise<void> {
    if (!this.#presence || this.#stopping) return;
    try {
      this.#elsewhere = await this.#presence.onlineElsewhere(PRESENCE_PREFIX);
    } catch (err) {
      this.services.log.warn({ err }, 'bot socket: could not read the other instances’ sockets');
    }
  }

  /** Sockets of one bot on this instance. */
  socketsOf(botId: string): number {
    return this.#byBot.get(botId)?.size ?? 0;
  }

  deliver(envelope: SocketEnvelope, signal: AbortSignal, sent?: () => void): Promise<SocketOutcome> {
    const leaseMs = this.services.config.sockets.leaseMs;
    return this.#send(envelope, leaseMs, signal, () => ({ kind: 'expired', leaseMs }), sent);
  }

  /** A slash command (operations/commands/dispatch.ts): the ack's `response` within `timeoutMs`. */
  command(envelope: SocketEnvelope, timeoutMs: number): Promise<SocketOutcome> {
    return this.#send(envelope, timeoutMs, undefined, () => ({ kind: 'expired', leaseMs: timeoutMs }));
  }

  #send(
    envelope: SocketEnvelope,
    waitMs: number,
    signal: AbortSignal | undefined,
    expired: () => SocketOutcome,
    sent?: () => void,
  ): Promise<SocketOutcome> {
    // The bot's least busy socket takes it (several sockets share the load).
    let s: BotSocket | undefined;
    for (const c of this.#byBot.get(envelope.bot_id) ?? []) {
      if (!c.open) continue;
      const busy = s === undefined ? 1 : c.inflight.size - s.inflight.size || c.sent - s.sent;
      if (busy < 0 || s === undefined) s = c;
    }
    if (!s) return Promise.resolve({ kind: 'closed' });
    if (signal?.aborted) return Promise.resolve({ kind: 'cancelled' });
    const sock = s;
    sock.sent++;
    const id = envelope.delivery_id;
    return new Promise<SocketOutcome>((resolve) => {
      const onAbort = () => done({ kind: 'cancelled' });
      const done = (o: SocketOutcome) => {
        if (sock.inflight.get(id) !== pending) return;
        sock.inflight.delete(id);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const pending: Pending = { resolve: done };
      // The same delivery cannot be in flight twice on one socket (the worker holds it); if it were,
      // the earlier attempt ends as closed.
      sock.inflight.get(id)?.resolve({ kind: 'closed' });
      sock.inflight.set(id, pending);
      const timer = setTimeout(() => done(expired()), waitMs);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (!sock.send({ type: 'event', ...envelope })) done({ kind: 'closed' });
      else if (sent) queueMicrotask(sent);
    });
  }

  // --- connections ---

  /** Takes an upgrade request for a bot socket; false for any other path. Never throws. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const m = BOT_PATH.exec(path);
    if (path !== SOCKET_PATH && !m) return false;
    if (this.#stopping) {
      socket.end(answer(503, 'unavailable', 'the server is shutting down', 1));
      return true;
    }
    if (this.#authenticating >= MAX_AUTHENTICATING) {
      socket.end(answer(503, 'unavailable', 'too many sockets connecting; retry in a moment', 1));
      return true;
    }
    this.#authenticating++;
    void this.#authenticate(req, m?.[1])
      .then((r) => {
        if (typeof r === 'string') {
          socket.end(r);
          return;
        }
        if (socket.destroyed) return;
        this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, r));
      })
      .catch((err: unknown) => {
        this.services.log.error({ err }, 'bot socket: upgrade failed');
        socket.end(answer(500, 'internal', 'internal error'));
      })
      .finally(() => this.#authenticating--);
    return true;
  }

  /** The bot's actor, or the HTTP refusal to write. */
  async #authenticate(req: IncomingMessage, pathBot: string | undefined): Promise<BotActor | string> {
    if (pathBot !== undefined && !/^[A-Za-z0-9-]{1,64}$/.test(pathBot))
      return answer(400, 'bad_request', 'The path’s bot id is not an id');
    const key = bearerCredential(req.headers.authorization);
    if (!key) return answer(401, 'unauthenticated', 'Missing Authorization: Bearer <bot API key>');
    if (!looksLikeBotKey(key)) return answer(401, 'unauthenticated', 'A bot socket takes a bot API key');
    let actor: BotActor;
    try {
      actor = await authenticateBotKey(this.services, key);
    } catch (err) {
      if (isAppError(err) && err.code === 'unauthenticated') return answer(401, err.code, err.message);
      throw err;
    }
    if (pathBot !== undefined && pathBot !== actor.botId)
      return answer(403, 'forbidden', 'The path names another bot than the API key');
    if (!scopesAllow(actor.scopes, 'messages:read'))
      return answer(403, 'forbidden', 'The API key lacks the scope messages:read (events carry messages)');
    if (this.socketsOf(actor.botId) >= this.services.config.sockets.perBot)
      return answer(
        429,
        'too_many_sockets',
        `The bot has ${this.services.config.sockets.perBot} sockets open already (WORKROOM_SOCKETS_PER_BOT)`,
        5,
      );
    if (this.#stopping) return answer(503, 'unavailable', 'the server is shutting down', 1);
    return actor;
  }

  #accept(ws: WebSocket, actor: BotActor): void {
    const s = new BotSocket(ws, actor);
    let set = this.#byBot.get(actor.botId);
    if (!set) this.#byBot.set(actor.botId, (set = new Set()));
    set.add(s);
    this.#count++;
    // A bot's first socket here is recorded for the other instances (their workers leave its
    // deliveries to this one); until then they may still take some, which wait a second.
    if (set.size === 1 && this.#presence) {
      this.#presence
        .connected(PRESENCE_PREFIX + actor.botId)
        .catch((err: unknown) => this.services.log.warn({ err }, 'bot socket: presence not recorded'));
      // What another instance recorded as waiting for a socket before it saw this one is woken once
      // every instance has looked (their looks come every ELSEWHERE_REFRESH_MS).
      const again = setTimeout(() => {
        if (this.connected(actor.botId) && !this.#stopping) this.#connected(actor.botId);
      }, 3 * ELSEWHERE_REFRESH_MS);
      again.unref();
    }
    ws.on('error', (err) => this.services.log.debug({ err: err.message }, 'bot socket: error'));
    ws.on('close', () => this.#remove(s));
    ws.on('pong', () => (s.alive = true));
    ws.on('message', (data: RawData, isBinary: boolean) => this.#onMessage(s, data, isBinary));
    const { leaseMs, heartbeatMs } = this.services.config.sockets;
    s.send({ type: 'ready', bot_id: actor.botId, lease_ms: leaseMs, heartbeat_ms: heartbeatMs });
    this.#connected(actor.botId);
  }

  #connected(botId: string): void {
    try {
      this.onConnected(botId);
    } catch (err) {
      this.services.log.warn({ err }, 'bot socket: onConnected failed');
    }
  }

  #onMessage(s: BotSocket, data: RawData, isBinary: boolean): void {
    s.alive = true;
    let msg: unknown;
    try {
      if (isBinary) throw new Error('binary');
      msg = JSON.parse(rawText(data));
    } catch {
      s.send({ type: 'error', code: 'bad_message', message: 'frames are JSON text' });
      return;
    }
    const m = (typeof msg === 'object' && msg !== null ? msg : {}) as Record<string, unknown>;
    const id = typeof m.delivery_id === 'string' ? m.delivery_id : undefined;
    switch (m.type) {
      case 'ack':
        // An ack for a delivery not in flight here (acked already, lease ran out) changes nothing.
        if (id) s.inflight.get(id)?.resolve({ kind: 'acked', response: m.response });
        return;
      case 'nack':
        if (id)
          s.inflight.get(id)?.resolve({
            kind: 'nacked',
            ...(typeof m.reason === 'string' && { reason: m.reason.slice(0, 500) }),
          });
        return;
      case 'ping':
        s.send({ type: 'pong' });
        return;
      default:
        s.send({ type: 'error', code: 'bad_message', message: 'expected ack, nack or ping' });
    }
  }

  #remove(s: BotSocket): void {
    const set = this.#byBot.get(s.actor.botId);
    if (set?.delete(s)) this.#count--;
    if (set && set.size === 0) {
      this.#byBot.delete(s.actor.botId);
      this.#presence?.disconnected(PRESENCE_PREFIX + s.actor.botId);
    }
    // Its unacknowledged deliveries go out again (another socket of the bot, or later).
    for (const p of [...s.inflight.values()]) p.resolve({ kind: 'closed' });
  }

  #beat(): void {
    for (const set of this.#byBot.values()) {
      for (const s of set) {
        try {
          if (!s.alive) {
            s.ws.terminate();
            continue;
          }
          s.alive = false;
          s.ws.ping();
        } catch (err) {
          this.services.log.warn({ err }, 'bot socket: heartbeat failed');
          s.ws.terminate();
        }
      }
    }
  }

  /** Closes every socket (1001): called before the HTTP server's close is awaited. */
  async drain(deadlineMs: number = Date.now() + 1000): Promise<void> {
    this.#stopping = true;
    const all = [...this.#byBot.values()].flatMap((set) => [...set]);
    const closed = all.map(
      (s) =>
        new Promise<void>((resolve) =>
          s.ws.readyState === s.ws.CLOSED ? resolve() : s.ws.once('close', () => resolve()),
        ),
    );
    for (const s of all) s.ws.close(1001, 'server shutting down');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, Math.min(1000, deadlineMs - Date.now())));
    });
    await Promise.race([Promise.all(closed), late]);
    clearTimeout(timer);
    for (const s of all) s.ws.terminate();
  }

  async stop(): Promise<void> {
    await this.drain();
    clearInterval(this.#heartbeat);
    clearInterval(this.#refresh);
    this.#wss.close();
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

/** A complete HTTP answer (JSON error) on a socket that was not upgraded. */
function answer(status: number, code: string, message: string, retryAfterSeconds?: number): string {
  const body = JSON.stringify({ error: { code, message } });
  const retry = retryAfterSeconds === undefined ? '' : `Retry-After: ${retryAfterSeconds}\r\n`;
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\n` +
    `Content-Type: application/json\r\n${retry}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}
