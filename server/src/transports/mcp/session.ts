import { AppError } from '../../domain/errors.js';
import type { CommittedEvents } from '../../events/committed.js';
import type { Service } from '../../runtime/lifecycle.js';
import { mcpSessionHash } from '../../operations/bots/mcp-sessions.js';
import type { BotActor } from '../../operations/context.js';
import { botsWithChangedResourcesOf } from './listen.js';
import type { SessionSigner } from './session-token.js';
import type { SseStream } from './sse.js';

/**
 * MCP sessions (`Mcp-Session-Id`) of the legacy (2025-era) protocol versions. The id is a signed,
 * self-describing token (session-token.ts: bot, key, negotiated version, expiry), so any instance
 * serves a session another one opened, without shared memory: an id this instance does not hold is
 * verified and adopted. The GET stream's notifications carry the outbox position of the change as
 * their event id, so a stream resumes with `Last-Event-ID` on any instance (`replay`). What lives here
 * is per instance: the GET stream, and the bookkeeping of the caps. A session ends on DELETE or when a
 * cap ends it, on every instance (an `mcp.session_ended` outbox event: each answers its id 404 until
 * it expires, from the moment it reads the event); the token expires
 * `WORKROOM_SESSION_TTL` after initialize. A session idle for `idleMs` is only forgotten here (its
 * log and stream state): its id stays valid, as it is on every other instance.
 *
 * Caps keep one tenant from crowding out another: a key past `perKey` sessions, or an organization
 * past `perOrg`, ends its own least recently used session to make room; nobody else's is ever ended
 * for it. When the whole store is full (`max`), a new session is refused (503) rather than evicting
 * another tenant's (an adopted session is then served without being held).
 */
const LOG_SIZE = 100;
/** Outbox events read at most to resume a GET stream, and per read. */
const REPLAY_MAX_EVENTS = 10_000;
const REPLAY_PAGE = 1_000;

export interface SessionLimits {
  perKey: number;
  perOrg: number;
  max: number;
  idleMs: number;
  /** How long a session id is valid after initialize. */
  ttlMs: number;
}

/** A message of the GET stream: its event id, its JSON, and the outbox position it reports (if any). */
export interface StreamEvent {
  id: string;
  data: string;
  position?: number | undefined;
}

export class McpSession {
  lastSeen = Date.now();
  initialized = false;
  stream: SseStream | undefined;
  /** How the outbox names this session when it ends (`mcp.session_ended`). */
  readonly hash: string;
  #seq = 0;
  readonly #log: (StreamEvent & { seq: number })[] = [];
  /** The newest outbox position sent on the current stream: a change is sent on it at most once. */
  #sentPosition = 0;
  /** Live notifications held while the stream's replay is read (then sent after it, once each). */
  #held: StreamEvent[] | undefined;

  constructor(
    readonly id: string,
    readonly botId: string,
    readonly keyId: string,
    readonly orgId: string,
    readonly protocolVersion: string,
    readonly expiresAt: number,
  ) {
    this.hash = mcpSessionHash(id);
  }

  /** The next event id of this session's POST streams (numbers, this instance's own). */
  nextEventId(): string {
    return String(++this.#seq);
  }

  /**
   * Sends a server message on the GET stream, or keeps it for a reconnecting client. `position`: the
   * outbox position of the change it reports; its event id is then `o<position>`, which any instance
   * can resume from (SessionStore.replay).
   */
  notify(data: string, position?: number): void {
    const seq = ++this.#seq;
    const e = { id: position === undefined ? String(seq) : `o${position}`, data, position };
    this.#log.push({ seq, id: e.id, data, position });
    if (this.#log.length > LOG_SIZE) this.#log.shift();
    if (this.#held) this.#held.push(e);
    else this.#send(e);
  }

  #send(e: StreamEvent): void {
    if (!this.stream) return;
    if (e.position !== undefined) {
      // Sent already (by the replay, or live while the replay was read): once is enough.
      if (e.position <= this.#sentPosition) return;
      this.#sentPosition = e.position;
    }
    this.stream.send(e.data, e.id);
  }

  /**
   * A new GET stream, resuming after outbox position `fromPosition` (0: from now). Live notifications
   * are held until `resume` sends what the stream missed: the replay first, then the held ones, each
   * change once and in order.
   */
  attach(stream: SseStream, fromPosition: number, replaying: boolean): void {
    this.stream?.end();
    this.stream = stream;
    this.#sentPosition = fromPosition;
    this.#held = replaying ? [] : undefined;
  }

  /** Sends what the stream `stream` missed (its replay), then what came live meanwhile. */
  resume(stream: SseStream, missed: readonly StreamEvent[]): void {
    if (this.stream !== stream) return; // replaced meanwhile: the newer stream resumes itself
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const e of missed) this.#send(e);
    for (const e of held) this.#send(e);
  }

  /** Messages of this instance's log after the numeric event id `lastEventId`; none for another id. */
  since(lastEventId: string): StreamEvent[] {
    if (!/^\d+$/.test(lastEventId)) return [];
    const n = Number(lastEventId);
    return this.#log.filter((e) => e.seq > n).map(({ id, data, position }) => ({ id, data, position }));
  }

  close(): void {
    this.stream?.end();
    this.stream = undefined;
  }
}

/** Sessions grouped by a key (API key or organization), for the caps. */
class Groups {
  readonly #groups = new Map<string, Set<McpSession>>();

  add(key: string, s: McpSession): void {
    let g = this.#groups.get(key);
    if (!g) this.#groups.set(key, (g = new Set()));
    g.add(s);
  }

  remove(key: string, s: McpSession): void {
    const g = this.#groups.get(key);
    if (!g) return;
    g.delete(s);
    if (g.size === 0) this.#groups.delete(key);
  }

  size(key: string): number {
    return this.#groups.get(key)?.size ?? 0;
  }

  /** The least recently used session of the group. */
  leastRecent(key: string): McpSession | undefined {
    let lru: McpSession | undefined;
    for (const s of this.#groups.get(key) ?? []) if (!lru || s.lastSeen < lru.lastSeen) lru = s;
    return lru;
  }
}

export class SessionStore implements Service {
  readonly name = 'MCP sessions';
  readonly #sessions = new Map<string, McpSession>();
  readonly #byKey = new Groups();
  readonly #byOrg = new Groups();
  /**
   * Sessions ended on any instance (DELETE, caps; this one's and the others' `mcp.session_ended`),
   * by hash → their expiry: answered 404 until then.
   */
  readonly #ended = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly bus: CommittedEvents,
    private readonly limits: SessionLimits,
    private readonly signer: SessionSigner,
    private readonly now: () => number,
    /** Tells the other instances a session ended (an outbox event); never rejects (it logs). */
    private readonly announceEnded: (s: McpSession) => Promise<void> = () => Promise.resolve(),
  ) {}

  start(): void {
    this.#timer = setInterval(() => this.sweep(), Math.min(60_000, this.limits.idleMs));
    this.#timer.unref();
    // A bot added to or removed from a channel, added to a project, given a topic in one of its
    // projects or a new DM room, sees another list of resources.
    this.#unsubscribe = this.bus.subscribe((events, positions) => {
      events.forEach((e, i) => {
        if (e.type === 'mcp.session_ended') this.#endedElsewhere(e.data.session_hash, e.data.expires_at);
        for (const botId of botsWithChangedResourcesOf(e))
          this.notifyBot(botId, LIST_CHANGED, positions?.[i]);
      });
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    // Stopping ends no session: its id stays valid on the other instances and after a restart.
    for (const s of [...this.#sessions.values()]) this.#forget(s);
  }

  /** A new session for the key of `actor`; throws `unavailable` when the store is full. */
  create(actor: BotActor, protocolVersion: string): McpSession {
    const expiresAt = this.now() + this.limits.ttlMs;
    const id = this.signer.issue(actor.botId, actor.keyId, protocolVersion, expiresAt);
    const s = this.#hold(
      new McpSession(id, actor.botId, actor.keyId, actor.orgId, protocolVersion, expiresAt),
    );
    if (!s) {
      throw new AppError('unavailable', 'Too many MCP sessions on this server; retry later', {
        retryAfterSeconds: 60,
      });
    }
    return s;
  }

  /** Keeps `s` within the caps (ending the key's or org's least recent session); undefined when full. */
  #hold(s: McpSession): McpSession | undefined {
    const { perKey, perOrg, max } = this.limits;
    const keyGroup = `key:${s.keyId}`;
    const orgGroup = `org:${s.orgId}`;
    if (this.#byKey.size(keyGroup) >= perKey) void this.end(this.#byKey.leastRecent(keyGroup)!);
    if (this.#byOrg.size(orgGroup) >= perOrg) void this.end(this.#byOrg.leastRecent(orgGroup)!);
    if (this.#sessions.size >= max) this.sweep();
    if (this.#sessions.size >= max) return undefined;
    this.#sessions.set(s.id, s);
    this.#byKey.add(keyGroup, s);
    this.#byOrg.add(orgGroup, s);
    return s;
  }

  /** Whether `create` would succeed: the key or org at its cap makes room itself; else the store must. */
  hasRoomFor(actor: BotActor): boolean {
    if (this.#byKey.size(`key:${actor.keyId}`) >= this.limits.perKey) return true;
    if (this.#byOrg.size(`org:${actor.orgId}`) >= this.limits.perOrg) return true;
    if (this.#sessions.size >= this.limits.max) this.sweep();
    return this.#sessions.size < this.limits.max;
  }

  /**
   * The live session with this id, if it was opened with the key `actor` authenticated with: held
   * here, or opened on another instance (or before a restart, or forgotten after idling) and adopted
   * now. Undefined for an ended, expired, forged or foreign id.
   */
  resolve(id: string, actor: BotActor): McpSession | undefined {
    const now = this.now();
    const held = this.#sessions.get(id);
    if (held) {
      if (held.botId !== actor.botId || held.keyId !== actor.keyId || held.expiresAt <= now) return undefined;
      held.lastSeen = Date.now();
      return held;
    }
    const claim = this.signer.verify(id, now);
    if (claim && this.#ended.has(mcpSessionHash(id))) return undefined;
    if (!claim || claim.botId !== actor.botId || claim.keyId !== actor.keyId) return undefined;
    const s = new McpSession(
      id,
      actor.botId,
      actor.keyId,
      actor.orgId,
      claim.protocolVersion,
      claim.expiresAt,
    );
    return this.#hold(s) ?? s;
  }

  /** Ends `s` here at once and, through the outbox, on every instance (resolves once that is written). */
  end(s: McpSession): Promise<void> {
    if (this.#ended.has(s.hash)) return Promise.resolve();
    this.#ended.set(s.hash, s.expiresAt);
    if (this.#sessions.get(s.id) === s) this.#forget(s);
    return this.announceEnded(s);
  }

  /** Another instance (or this one) ended a session: its id is answered 404 here too. */
  #endedElsewhere(hash: string, expiresAt: string): void {
    this.#ended.set(hash, Date.parse(expiresAt));
    for (const s of this.#sessions.values()) if (s.hash === hash) this.#forget(s);
  }

  #forget(s: McpSession): void {
    this.#sessions.delete(s.id);
    this.#byKey.remove(`key:${s.keyId}`, s);
    this.#byOrg.remove(`org:${s.orgId}`, s);
    s.close();
  }

  notifyBot(botId: string, data: string, position?: number): void {
    for (const s of this.#sessions.values()) if (s.botId === botId) s.notify(data, position);
  }

  /**
   * What a GET stream resuming from `lastEventId` missed. An id `o<position>` (a change read from the
   * shared outbox) resumes on any instance: the outbox is read after that position and each change of
   * this bot's resources found there is answered as it was sent live, with its own position, the
   * last `LOG_SIZE` of them. Past `REPLAY_MAX_EVENTS` events the read stops and one more list_changed
   * is answered with the position reached (a spare one costs the client a list; a missed one would
   * leave it a stale one). A numeric id is this instance's own (its log of the last `LOG_SIZE`).
   */
  async replay(session: McpSession, lastEventId: string): Promise<StreamEvent[]> {
    const m = /^o(\d+)$/.exec(lastEventId);
    if (!m || !this.bus.readAfter) return session.since(lastEventId);
    const out: StreamEvent[] = [];
    let position = Number(m[1]);
    for (let read = 0; ;) {
      const page = await this.bus.readAfter(position, REPLAY_PAGE);
      page.events.forEach((e, i) => {
        if (botsWithChangedResourcesOf(e).includes(session.botId))
          out.push({ id: `o${page.positions[i]!}`, data: LIST_CHANGED, position: page.positions[i]! });
      });
      read += page.events.length;
      position = page.positions.at(-1) ?? position;
      if (page.events.length < REPLAY_PAGE) break;
      if (read >= REPLAY_MAX_EVENTS) {
        out.push({ id: `o${position}`, data: LIST_CHANGED, position });
        break;
      }
    }
    return out.slice(-LOG_SIZE);
  }

  /**
   * Forgets sessions idle for longer than the limit (an open GET stream counts as activity) and those
   * expired, and the ended ids once they expire (at most `2 × max` are remembered).
   */
  sweep(now = Date.now()): void {
    const t = this.now();
    for (const s of this.#sessions.values())
      if ((now - s.lastSeen > this.limits.idleMs && !s.stream) || s.expiresAt <= t) this.#forget(s);
    for (const [id, exp] of this.#ended) if (exp <= t) this.#ended.delete(id);
    for (const id of this.#ended.keys()) {
      if (this.#ended.size <= 2 * this.limits.max) break;
      this.#ended.delete(id);
    }
  }

  get size(): number {
    return this.#sessions.size;
  }
}

const LIST_CHANGED = '{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}';
