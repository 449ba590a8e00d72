import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { AppError, isAppError } from '../domain/errors.js';
import { looksLikeBotKey } from '../domain/secrets.js';
import { authenticateUserToken, bearerCredential } from '../operations/auth/authenticate.js';
import type { Actor, Services, UserActor } from '../operations/context.js';
import { RealtimeClient, type RealtimeStats } from './client.js';
import type { EventFeed, FeedEvent } from './feed.js';
import { CLOSE, DEFAULT_LIMITS, parseClientMessage, REALTIME_PATH, type RealtimeLimits } from './protocol.js';
import { invalidates, PUSHED_EVENT_TYPES, VisibilityCache } from './visibility.js';

const REPLAY_PAGE = 500;

/**
 * The WebSocket hub of `GET /api/realtime`: authenticates clients, replays what a resuming client
 * missed, and pushes each outbox event to the clients that may see its container, in position order.
 *
 * Ordering: one dispatcher handles events one at a time, in feed order. Each client remembers the last
 * position the dispatcher considered for it (`livePos`); a client that registers while an event is being
 * dispatched has a lower `livePos` and is picked up by the next round of that same event, so nothing
 * falls between registration and dispatch. A resuming client is registered first (live events are
 * held for it), then replayed from the outbox up to the position it registered at, then given what was
 * held: no gap, no duplicate.
 */
export class RealtimeHub {
  readonly name = 'realtime';
  readonly limits: RealtimeLimits;
  readonly stats: RealtimeStats = { peakBufferedBytes: 0, slowDisconnects: 0 };
  readonly #wss: WebSocketServer;
  readonly #all = new Set<RealtimeClient>();
  readonly #byOrg = new Map<string, Set<RealtimeClient>>();
  readonly #byUser = new Map<string, Set<RealtimeClient>>();
  /** Position of the last event the dispatcher finished. */
  #position = 0;
  /** Accepted connections not yet authenticated (or refused). */
  #unauthenticated = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping = false;

  constructor(
    private readonly services: Services,
    private readonly feed: EventFeed,
    limits: Partial<RealtimeLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      maxPayload: this.limits.maxPayloadBytes,
      perMessageDeflate: false,
    });
  }

  get position(): number {
    return this.#position;
  }

  /** Connected clients (authenticated or not), for tests and metrics. */
  get clients(): ReadonlySet<RealtimeClient> {
    return this.#all;
  }

  async start(): Promise<void> {
    await this.feed.start((events) => this.#dispatch(events));
    this.#position = this.feed.position;
    this.#heartbeat = setInterval(() => this.#beat(), this.limits.heartbeatMs);
    this.#heartbeat.unref();
  }

  /** Hooks the hub onto the HTTP server's upgrade requests; other upgrade paths answer 404. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      if (!this.handleUpgrade(req, socket, head)) {
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      }
    });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== REALTIME_PATH) return false;
    // Before authentication a connection costs memory and names nobody: their number is bounded.
    if (this.#stopping || this.#unauthenticated >= this.limits.maxUnauthenticated) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return true;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, req, url));
    return true;
  }

  /** Sends a message to every connection of one user (ephemeral command replies); how many got it. */
  pushToUser(userId: string, message: Record<string, unknown>): number {
    let n = 0;
    for (const c of this.#byUser.get(userId) ?? []) if (c.send(message)) n++;
    return n;
  }

  /** Whether the user has a live connection to this instance (@here: who is online). */
  isConnected(userId: string): boolean {
    return (this.#byUser.get(userId)?.size ?? 0) > 0;
  }

  /**
   * Refuses new connections and closes the open ones (1001). Called before the HTTP server's close is
   * awaited: an upgraded socket would otherwise keep it open until the client leaves.
   */
  async drain(deadlineMs: number = Date.now() + 1000): Promise<void> {
    this.#stopping = true;
    const closed = [...this.#all].map(
      (c) =>
        new Promise<void>((resolve) =>
          c.ws.readyState === c.ws.CLOSED ? resolve() : c.ws.once('close', () => resolve()),
        ),
    );
    for (const c of this.#all) c.close(CLOSE.goingAway, 'server shutting down');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, Math.min(1000, deadlineMs - Date.now())));
    });
    await Promise.race([Promise.all(closed), late]);
    clearTimeout(timer);
    for (const c of this.#all) c.ws.terminate();
  }

  async stop(): Promise<void> {
    await this.drain();
    this.feed.stop();
    clearInterval(this.#heartbeat);
    this.#wss.close();
  }

  // --- connections ---

  #accept(ws: WebSocket, req: IncomingMessage, url: URL): void {
    const client = new RealtimeClient(ws, this.limits, this.stats);
    this.#all.add(client);
    this.#unauthenticated++;
    // Invalid frames, oversized frames (1009) and socket errors end the connection; ws closes it.
    ws.on('error', (err) => this.services.log.debug({ err: err.message }, 'realtime: client error'));
    ws.on('close', () => this.#remove(client));
    ws.on('pong', () => (client.alive = true));
    ws.on('message', (data: RawData, isBinary: boolean) => this.#onMessage(client, data, isBinary));

    const bearer = bearerCredential(req.headers.authorization);
    if (bearer) {
      const raw = url.searchParams.get('last_seq');
      const lastSeq = raw === null ? undefined : /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
      if (Number.isNaN(lastSeq)) {
        client.close(CLOSE.badMessage, 'last_seq: must be a non-negative integer');
        return;
      }
      this.#guard(client, this.#authenticate(client, bearer, lastSeq));
      return;
    }
    client.authTimer = setTimeout(() => {
      if (client.state === 'auth') {
        client.close(CLOSE.unauthenticated, `no auth message within ${this.limits.authTimeoutMs / 1000} s`);
      }
    }, this.limits.authTimeoutMs);
    client.authTimer.unref();
  }

  #onMessage(client: RealtimeClient, data: RawData, isBinary: boolean): void {
    client.alive = true;
    if (client.state === 'closed') return;
    const msg = parseClientMessage(data, isBinary);
    if (client.state === 'auth') {
      if (typeof msg === 'string' || msg.type !== 'auth') {
        const why = typeof msg === 'string' ? msg : 'expected an auth message';
        client.close(CLOSE.badMessage, `first message must be {"type":"auth","token":...}: ${why}`);
        return;
      }
      clearTimeout(client.authTimer);
      this.#guard(client, this.#authenticate(client, msg.token, msg.last_seq));
      return;
    }
    if (typeof msg !== 'string' && msg.type === 'ping') {
      client.send({ type: 'pong' });
      return;
    }
    const why = typeof msg === 'string' ? msg : 'already authenticated';
    client.send({ type: 'error', code: 'bad_message', message: why });
  }

  /** No error of a connection's work may escape: it ends that connection only. */
  #guard(client: RealtimeClient, work: Promise<void>): void {
    work.catch((err: unknown) => {
      this.services.log.error({ err }, 'realtime: connection failed');
      client.close(CLOSE.internalError, 'internal error; reconnect with your last seq');
    });
  }

  async #authenticate(client: RealtimeClient, token: string, lastSeq: number | undefined): Promise<void> {
    client.state = 'authenticating';
    if (looksLikeBotKey(token)) {
      client.close(CLOSE.forbidden, 'the live stream takes a user token, not a bot API key');
      return;
    }
    let actor: UserActor;
    try {
      actor = asUser(await authenticateUserToken(this.services, token));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'unauthenticated') throw err;
      client.close(CLOSE.unauthenticated, err.message);
      return;
    }
    if (!client.open) return;
    const mine = this.#byUser.get(actor.userId);
    if (mine && mine.size >= this.limits.maxConnectionsPerUser) {
      client.close(
        CLOSE.tooManyConnections,
        `too many connections for this user (at most ${this.limits.maxConnectionsPerUser})`,
      );
      return;
    }
    client.actor = actor;
    this.#unauthenticated--;
    client.token = token;
    client.visibility = new VisibilityCache(this.services.storage.stores, actor);
    addTo(this.#byOrg, actor.orgId, client);
    addTo(this.#byUser, actor.userId, client);
    // Registered at the dispatcher's position, synchronously: every later event reaches this client.
    client.livePos = this.#position;
    if (lastSeq === undefined) {
      client.state = 'live';
      client.send({ type: 'ready', seq: this.#position });
      return;
    }
    client.state = 'replaying';
    await this.#resume(client, lastSeq, this.#position);
  }

  async #resume(client: RealtimeClient, lastSeq: number, upTo: number): Promise<void> {
    const oldest = await this.feed.oldestResumable();
    if (lastSeq > upTo || lastSeq < oldest || upTo - lastSeq > this.limits.maxReplaySpan) {
      client.send({ type: 'reset' });
    } else {
      let after = lastSeq;
      for (;;) {
        const page = await this.feed.readRange(client.actor!.orgId, after, upTo, REPLAY_PAGE);
        for (const ev of page) {
          if (!client.open) return;
          if (await client.visibility!.canSee(ev)) client.sendEvent(ev);
          after = ev.seq;
        }
        if (page.length < REPLAY_PAGE) break;
      }
    }
    // What arrived meanwhile, then live: the last check of `pending` and the switch happen in one turn.
    while (client.pending.length > 0) {
      const ev = client.pending.shift()!;
      if ((await client.visibility!.canSee(ev)) && !client.sendEvent(ev)) return;
    }
    if (!client.open) return;
    client.state = 'live';
    client.send({ type: 'ready', seq: Math.max(client.livePos, this.#position) });
  }

  #remove(client: RealtimeClient): void {
    if (!client.actor) this.#unauthenticated--;
    client.state = 'closed';
    clearTimeout(client.authTimer);
    this.#all.delete(client);
    if (client.actor) {
      removeFrom(this.#byOrg, client.actor.orgId, client);
      removeFrom(this.#byUser, client.actor.userId, client);
    }
  }

  // --- dispatch ---

  async #dispatch(events: FeedEvent[]): Promise<void> {
    for (const ev of events) {
      try {
        await this.#dispatchOne(ev);
      } finally {
        this.#position = Math.max(this.#position, ev.seq);
      }
    }
  }

  /**
   * The position moves on in the same synchronous step that finds no client left to serve: a client
   * registering one microtask later starts after this event (and a resuming one replays it from the
   * outbox), so none can fall between the two.
   */
  async #dispatchOne(ev: FeedEvent): Promise<void> {
    const clients = this.#byOrg.get(ev.orgId);
    const stale = invalidates(ev);
    if (stale && clients) for (const c of clients) c.visibility?.forget(stale);
    if (!clients || clients.size === 0 || !PUSHED_EVENT_TYPES.has(ev.type)) {
      this.#position = ev.seq;
      return;
    }
    const waiting = (c: RealtimeClient) =>
      c.livePos < ev.seq && (c.state === 'live' || c.state === 'replaying');
    for (let round = [...clients].filter(waiting); round.length > 0; round = [...clients].filter(waiting)) {
      const answers = round.map((c) => (c.state === 'live' ? c.visibility!.canSee(ev) : false));
      const settled = answers.some((a) => typeof a !== 'boolean')
        ? await Promise.allSettled(answers)
        : answers.map((value) => ({ status: 'fulfilled' as const, value: value as boolean }));
      round.forEach((c, i) => {
        if (c.livePos >= ev.seq) return;
        c.livePos = ev.seq;
        if (c.state === 'replaying') {
          c.hold(ev);
          return;
        }
        if (c.state !== 'live') return;
        const a = settled[i]!;
        if (a.status === 'rejected') {
          this.services.log.error({ err: a.reason }, 'realtime: visibility check failed');
          c.close(CLOSE.internalError, 'internal error; reconnect with your last seq');
        } else if (a.value) c.sendEvent(ev);
      });
    }
    this.#position = ev.seq;
  }

  // --- heartbeats ---

  #beat(): void {
    for (const c of this.#all) {
      try {
        if (!c.alive) {
          c.ws.terminate();
          continue;
        }
        c.alive = false;
        c.ws.ping();
        if (c.state === 'live' && c.token) this.#guard(c, this.#recheck(c, c.token));
      } catch (err) {
        // A timer callback must never throw: that would end the process.
        this.services.log.warn({ err }, 'realtime: heartbeat failed');
        c.ws.terminate();
      }
    }
  }

  /** A session that ended (logout, expiry, deactivation) ends the stream; a new role is applied. */
  async #recheck(client: RealtimeClient, token: string): Promise<void> {
    let actor: UserActor;
    try {
      actor = asUser(await authenticateUserToken(this.services, token));
    } catch (err) {
      if (isAppError(err) && err.code === 'unauthenticated') {
        client.close(CLOSE.unauthenticated, `session ended: ${err.message}`);
      }
      return;
    }
    const was = client.actor!;
    if (actor.role !== was.role || actor.departmentId !== was.departmentId) {
      client.actor = actor;
      client.visibility!.reset(actor);
    }
  }
}

function asUser(actor: Actor): UserActor {
  if (actor.kind !== 'user') throw new AppError('unauthenticated', 'not a user token');
  return actor;
}

function addTo<K>(map: Map<K, Set<RealtimeClient>>, key: K, c: RealtimeClient): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(c);
}

function removeFrom<K>(map: Map<K, Set<RealtimeClient>>, key: K, c: RealtimeClient): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(c);
  if (set.size === 0) map.delete(key);
}
