import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.js';
import type { EventBus } from '../../events/bus.js';
import type { Service } from '../../runtime/lifecycle.js';
import type { BotActor } from '../../operations/context.js';
import type { SseStream } from './sse.js';

/**
 * MCP sessions (`Mcp-Session-Id`), in the memory of this process: issued at initialize, bound to the
 * bot and key that opened them, ended by DELETE or after `idleMs` without a request. Server messages for
 * a session go to its GET stream with increasing event ids; the last `LOG_SIZE` are kept so that a
 * client reconnecting with `Last-Event-ID` gets what it missed.
 *
 * Caps keep one tenant from crowding out another: a key past `perKey` sessions, or an organization
 * past `perOrg`, ends its own least recently used session to make room; nobody else's is ever ended
 * for it. When the whole store is full (`max`), a new session is refused (503) rather than evicting
 * another tenant's.
 */
const LOG_SIZE = 100;

export interface SessionLimits {
  perKey: number;
  perOrg: number;
  max: number;
  idleMs: number;
}

export class McpSession {
  lastSeen = Date.now();
  initialized = false;
  stream: SseStream | undefined;
  #seq = 0;
  readonly #log: { seq: number; data: string }[] = [];

  constructor(
    readonly id: string,
    readonly botId: string,
    readonly keyId: string,
    readonly orgId: string,
    readonly protocolVersion: string,
  ) {}

  /** The next event id of this session (also used for events of POST streams). */
  nextEventId(): string {
    return String(++this.#seq);
  }

  /** Sends a server message on the GET stream, or keeps it for a reconnecting client. */
  notify(data: string): void {
    const seq = ++this.#seq;
    this.#log.push({ seq, data });
    if (this.#log.length > LOG_SIZE) this.#log.shift();
    this.stream?.send(data, String(seq));
  }

  /** Messages after `lastEventId` (resumption); none when the id is unknown or not a number. */
  since(lastEventId: string): { seq: number; data: string }[] {
    const n = Number(lastEventId);
    if (!Number.isInteger(n)) return [];
    return this.#log.filter((e) => e.seq > n);
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
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly limits: SessionLimits,
  ) {}

  start(): void {
    this.#timer = setInterval(() => this.sweep(), Math.min(60_000, this.limits.idleMs));
    this.#timer.unref();
    // A bot added to or removed from a channel, added to a project, given a topic in one of its
    // projects or a new DM room, sees another list of resources.
    this.#unsubscribe = this.bus.subscribe((events) => {
      for (const e of events) {
        if (e.type === 'member.joined' || e.type === 'member.left') {
          if (e.data.member_type === 'bot') this.notifyBot(String(e.data.member_id), LIST_CHANGED);
        } else if (e.type === 'resources.changed') {
          for (const id of e.data.bot_ids as string[]) this.notifyBot(id, LIST_CHANGED);
        }
      }
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    for (const id of [...this.#sessions.keys()]) this.end(id);
  }

  /** A new session for the key of `actor`; throws `unavailable` when the store is full. */
  create(actor: BotActor, protocolVersion: string): McpSession {
    const { perKey, perOrg, max } = this.limits;
    const keyGroup = `key:${actor.keyId}`;
    const orgGroup = `org:${actor.orgId}`;
    if (this.#byKey.size(keyGroup) >= perKey) this.end(this.#byKey.leastRecent(keyGroup)!.id);
    if (this.#byOrg.size(orgGroup) >= perOrg) this.end(this.#byOrg.leastRecent(orgGroup)!.id);
    if (this.#sessions.size >= max) this.sweep();
    if (this.#sessions.size >= max) {
      throw new AppError('unavailable', 'Too many MCP sessions on this server; retry later', {
        retryAfterSeconds: 60,
      });
    }
    const s = new McpSession(randomUUID(), actor.botId, actor.keyId, actor.orgId, protocolVersion);
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

  /** The live session with this id, if it belongs to this bot. */
  get(id: string, botId: string): McpSession | undefined {
    const s = this.#sessions.get(id);
    if (!s || s.botId !== botId) return undefined;
    s.lastSeen = Date.now();
    return s;
  }

  end(id: string): void {
    const s = this.#sessions.get(id);
    if (!s) return;
    this.#sessions.delete(id);
    this.#byKey.remove(`key:${s.keyId}`, s);
    this.#byOrg.remove(`org:${s.orgId}`, s);
    s.close();
  }

  notifyBot(botId: string, data: string): void {
    for (const s of this.#sessions.values()) if (s.botId === botId) s.notify(data);
  }

  /** Ends sessions idle for longer than the limit (an open GET stream counts as activity). */
  sweep(now = Date.now()): void {
    for (const s of this.#sessions.values())
      if (now - s.lastSeen > this.limits.idleMs && !s.stream) this.end(s.id);
  }

  get size(): number {
    return this.#sessions.size;
  }
}

const LIST_CHANGED = '{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}';
