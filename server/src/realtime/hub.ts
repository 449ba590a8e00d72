import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { AppError, isAppError } from '../domain/errors.js';
import { looksLikeBotKey } from '../domain/secrets.js';
import { authenticateUserToken, bearerCredential } from '../operations/auth/authenticate.js';
import { clientAddress } from '../operations/client-address.js';
import type { Actor, Services, UserActor } from '../operations/context.js';
import { RealtimeClient, type RealtimeStats } from './client.js';
import type { EventFeed, FeedEvent } from './feed.js';
import type { ClusterPresence } from './presence.js';
import { addressKey, PreAuthPool, ReplayPacer, ResumeGate, type Turn } from './fairness.js';
import {
  CLOSE,
  DEFAULT_LIMITS,
  parseClientMessage,
  REALTIME_PATH,
  refusal,
  type RealtimeLimits,
} from './protocol.js';
import { invalidates, PUSHED_EVENT_TYPES, VisibilityCache } from './visibility.js';

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
 *
 * Fairness (docs/REALTIME.md "Limits"): connections that have not authenticated yet share a pool per
 * client address (`PreAuthPool`) and have a short window to authenticate; replays are bounded per user,
 * per organization and in all (`ResumeGate`) and run in slices of at most `replaySliceMs` per turn of
 * the event loop (`ReplayPacer`), so that no client's resume holds up another tenant's requests.
 */
/** Takes an upgrade request for its path (true), or leaves it (false). */
export interface UpgradeHandler {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
}

export class RealtimeHub {
  readonly name = 'realtime';
  readonly limits: RealtimeLimits;
  readonly stats: RealtimeStats = { peakBufferedBytes: 0, slowDisconnects: 0, replayedEvents: 0 };
  readonly #wss: WebSocketServer;
  readonly #all = new Set<RealtimeClient>();
  readonly #byOrg = new Map<string, Set<RealtimeClient>>();
  readonly #byUser = new Map<string, Set<RealtimeClient>>();
  /** Position of the last event the dispatcher finished. */
  #position = 0;
  /**
   * Position of the event the dispatcher is working on (equal to `#position` between events): a client
   * may have been given it (held during its replay) before `#position` reaches it.
   */
  #dispatching = 0;
  /** Accepted connections not yet authenticated (or refused), by client address. */
  readonly #preAuth: PreAuthPool<RealtimeClient>;
  readonly #resumes: ResumeGate;
  readonly #pacer: ReplayPacer;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping = false;
  /** Connections of the other instances on the same database (PostgreSQL); none on SQLite. */
  #presence: ClusterPresence | undefined;

  constructor(
    private readonly services: Services,
    private readonly feed: EventFeed,
    limits: Partial<RealtimeLimits> = {},
  ) {
    const rt = services.config.realtime;
    this.limits = {
      ...DEFAULT_LIMITS,
      authTimeoutMs: rt.authTimeoutMs,
      maxUnauthenticated: rt.preAuthMax,
      maxUnauthenticatedPerAddress: rt.preAuthPerAddress,
      maxReplaySpan: rt.resumeSpan,
      maxResumesPerUser: rt.resumesPerUser,
      maxResumesPerOrg: rt.resumesPerOrg,
      ...limits,
    };
    const l = this.limits;
    this.#preAuth = new PreAuthPool(() => ({
      perKey: l.maxUnauthenticatedPerAddress,
      max: l.maxUnauthenticated,
    }));
    this.#resumes = new ResumeGate(() => ({
      perUser: l.maxResumesPerUser,
      perOrg: l.maxResumesPerOrg,
      max: l.maxResumes,
    }));
    this.#pacer = new ReplayPacer(() => ({ sliceMs: l.replaySliceMs, share: l.replayShare }));
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

  /** Connections not authenticated yet; replays running and waiting their turn (tests, metrics). */
  get pending(): { unauthenticated: number; replaying: number; queued: number } {
    return {
      unauthenticated: this.#preAuth.size,
      replaying: this.#resumes.running,
      queued: this.#resumes.waiting,
    };
  }

  async start(): Promise<void> {
    await this.feed.start((events) => this.#dispatch(events));
    this.#position = this.feed.position;
    this.#dispatching = this.#position;
    this.#heartbeat = setInterval(() => this.#beat(), this.limits.heartbeatMs);
    this.#heartbeat.unref();
  }

  /**
   * Hooks the hub onto the HTTP server's upgrade requests; `others` take the paths it does not (bot
   * sockets, transports/socket/hub.ts); any other path answers 404.
   */
  attach(server: Server, others: readonly UpgradeHandler[] = []): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      // A listener that throws would end the process: whatever goes wrong ends this socket only.
      try {
        if (
          !this.handleUpgrade(req, socket, head) &&
          !others.some((o) => o.handleUpgrade(req, socket, head))
        ) {
          socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        }
      } catch (err) {
        this.services.log.warn({ err }, 'realtime: upgrade failed');
        if (socket.writable)
          socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        else socket.destroy();
      }
    });
  }

  /**
   * Takes an upgrade request for the live stream; false for any other path (the caller answers 404).
   * The target is parsed here, not trusted: `//`, `http://[` and the like answer 400.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = upgradeTarget(req.url);
    if (url === null) {
      socket.end(refusal(400, 'bad_request', 'the request target is not a path'));
      return true;
    }
    if (url.pathname !== REALTIME_PATH) return false;
    if (this.#stopping) {
      socket.end(refusal(503, 'unavailable', 'the server is shutting down', 1));
      return true;
    }
    // Before authentication a connection costs memory and names nobody: their number is bounded, per
    // client address and in all, and a full pool is shared fairly among addresses (fairness.ts).
    const address = addressKey(clientAddress(req, this.services.config.http.trustProxy));
    const admission = this.#preAuth.admit(address);
    if (!admission.ok) {
      const message =
        admission.why === 'address'
          ? `too many connections from this address waiting to authenticate (at most ${this.limits.maxUnauthenticatedPerAddress})`
          : 'too many connections waiting to authenticate';
      socket.end(refusal(503, 'unavailable', message, Math.ceil(this.limits.authTimeoutMs / 1000)));
      return true;
    }
    if (admission.evict) {
      this.#leavePool(admission.evict);
      admission.evict.close(CLOSE.tooSlow, 'pre-auth pool full: authenticate at once after connecting');
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, req, url, address));
    return true;
  }

  /** Sends a message to every connection of one user (ephemeral command replies); how many got it. */
  pushToUser(userId: string, message: Record<string, unknown>): number {
    let n = 0;
    for (const c of this.#byUser.get(userId) ?? []) if (c.send(message)) n++;
    return n;
  }

  /** Whether the user has a live connection to this instance. */
  isConnected(userId: string): boolean {
    return (this.#byUser.get(userId)?.size ?? 0) > 0;
  }

  /** Records this instance's connections where every instance sees them (several on one database). */
  usePresence(presence: ClusterPresence): void {
    this.#presence = presence;
  }

  /** The users connected to this instance. */
  connectedUsers(): Iterable<string> {
    return this.#byUser.keys();
  }

  /** Which of `userIds` have a live connection to this instance or to another one (@here: who is online). */
  async onlineAmong(userIds: readonly string[]): Promise<Set<string>> {
    const here = new Set(userIds.filter((u) => this.isConnected(u)));
    const elsewhere = userIds.filter((u) => !here.has(u));
    if (!this.#presence || elsewhere.length === 0) return here;
    for (const u of await this.#presence.onlineAmong(elsewhere)) here.add(u);
    return here;
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

  #accept(ws: WebSocket, req: IncomingMessage, url: URL, address: string): void {
    const client = new RealtimeClient(ws, this.limits, this.stats, address);
    this.#all.add(client);
    this.#preAuth.add(address, client);
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
    // A user's first connection here is recorded for the other instances before it is ready.
    if (this.#presence && !this.isConnected(actor.userId)) {
      await this.#presence.connected(actor.userId);
      if (!client.open) return;
    }
    const mine = this.#byUser.get(actor.userId);
    if (mine && mine.size >= this.limits.maxConnectionsPerUser) {
      client.close(
        CLOSE.tooManyConnections,
        `too many connections for this user (at most ${this.limits.maxConnectionsPerUser})`,
      );
      return;
    }
    client.actor = actor;
    this.#leavePool(client);
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

  /**
   * Replays what a resuming client missed, then what was held for it meanwhile, then makes it live.
   * A resume point further back than `maxReplaySpan` (or not retained, or from another database)
   * answers `reset` at once. A replay waits for its turn at the gate (per user, per organization, in
   * all) and works in paced slices (`#replayPage`).
   */
  async #resume(client: RealtimeClient, lastSeq: number, upTo: number): Promise<void> {
    if (lastSeq > upTo && lastSeq <= this.#dispatching) {
      // The event in dispatch reached the client's previous connection (held for it during its replay)
      // before the position moved on to it: nothing to replay, and not that event again.
      client.livePos = Math.max(client.livePos, lastSeq);
      await this.#finishReplay(client, null);
      return;
    }
    const oldest = await this.feed.oldestResumable();
    if (lastSeq > upTo || lastSeq < oldest || upTo - lastSeq > this.limits.maxReplaySpan) {
      client.send({ type: 'reset' });
      await this.#finishReplay(client, null);
      return;
    }
    const actor = client.actor!;
    const release = await this.#resumes.acquire(actor.userId, actor.orgId, () => client.open);
    if (!release) return;
    try {
      let turn = await this.#pacer.turn();
      let after = lastSeq;
      while (after < upTo) {
        // One query scans at most `replayScanWindow` positions (other organizations' events among them).
        const end = Math.min(upTo, after + this.limits.replayScanWindow);
        const page = await this.feed.readRange(actor.orgId, after, end, this.limits.replayPage);
        for (const ev of page) {
          if (!turn.left()) turn = await this.#turnWhenReadable(client);
          if (!client.open) return;
          const visible = client.visibility!.canSee(ev);
          if (typeof visible === 'boolean' ? visible : await visible) {
            if (!client.sendEvent(ev)) return;
            this.stats.replayedEvents++;
          }
          after = ev.seq;
        }
        if (page.length < this.limits.replayPage) after = end;
        if (!turn.left()) turn = await this.#turnWhenReadable(client);
        if (!client.open) return;
      }
      await this.#finishReplay(client, turn);
    } finally {
      release();
    }
  }

  /** What arrived during the replay, then live: the last check of `pending` and the switch in one turn. */
  async #finishReplay(client: RealtimeClient, turn: Turn | null): Promise<void> {
    while (client.pending.length > 0) {
      if (turn && !turn.left()) turn = await this.#turnWhenReadable(client);
      const ev = client.pending.shift()!;
      const visible = client.visibility!.canSee(ev);
      if ((typeof visible === 'boolean' ? visible : await visible) && !client.sendEvent(ev)) return;
    }
    if (!client.open) return;
    client.state = 'live';
    client.send({ type: 'ready', seq: Math.max(client.livePos, this.#position) });
  }

  /**
   * The next turn of replay work, once the client has read most of what was sent: a replay never
   * queues more than half the bound for a client that reads slowly (it would be cut off with 1013),
   * and a client that does not read at all is ended by the heartbeat.
   */
  async #turnWhenReadable(client: RealtimeClient): Promise<Turn> {
    while (client.open && client.ws.bufferedAmount > this.limits.maxBufferedBytes / 2) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.#pacer.turn();
  }

  #leavePool(client: RealtimeClient): void {
    this.#preAuth.remove(client.address, client);
  }

  #remove(client: RealtimeClient): void {
    this.#leavePool(client);
    client.state = 'closed';
    clearTimeout(client.authTimer);
    this.#all.delete(client);
    if (client.actor) {
      removeFrom(this.#byOrg, client.actor.orgId, client);
      removeFrom(this.#byUser, client.actor.userId, client);
      if (!this.isConnected(client.actor.userId)) this.#presence?.disconnected(client.actor.userId);
    }
    this.#resumes.prune();
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
    this.#dispatching = ev.seq;
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
      const wasLive = round.map((c) => c.state === 'live');
      const answers = round.map((c, i) => (wasLive[i] ? c.visibility!.canSee(ev) : false));
      const settled = answers.some((a) => typeof a !== 'boolean')
        ? await Promise.allSettled(answers)
        : answers.map((value) => ({ status: 'fulfilled' as const, value: value as boolean }));
      round.forEach((c, i) => {
        if (c.livePos >= ev.seq) return;
        // A client that finished its replay while the answers were awaited was not asked: it is in the
        // next round, live (holding the event for it now would leave it unsent for good).
        if (c.state === 'live' && !wasLive[i]) return;
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

/** The origin-form target of an upgrade request as a URL, or null when it is not one. */
function upgradeTarget(target: string | undefined): URL | null {
  if (target === undefined || !target.startsWith('/') || target.startsWith('//')) return null;
  try {
    return new URL(`http://localhost${target}`);
  } catch {
    return null;
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
