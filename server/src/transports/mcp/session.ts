import { randomUUID } from 'node:crypto';
import type { EventBus } from '../../events/bus.js';
import type { SseStream } from './sse.js';

/**
 * MCP sessions (`Mcp-Session-Id`), in the memory of this process: issued at initialize, bound to the
 * bot that opened them, ended by DELETE or after `IDLE_MS` without a request. Server messages for a
 * session go to its GET stream with increasing event ids; the last `LOG_SIZE` are kept so that a client
 * reconnecting with `Last-Event-ID` gets what it missed.
 */
const IDLE_MS = 60 * 60_000;
const LOG_SIZE = 100;
const MAX_SESSIONS = 10_000;

export class McpSession {
  lastSeen = Date.now();
  initialized = false;
  stream: SseStream | undefined;
  #seq = 0;
  readonly #log: { seq: number; data: string }[] = [];

  constructor(
    readonly id: string,
    readonly botId: string,
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

export class SessionStore {
  readonly #sessions = new Map<string, McpSession>();
  readonly #timer: NodeJS.Timeout;

  constructor(bus: EventBus) {
    this.#timer = setInterval(() => this.sweep(), 60_000);
    this.#timer.unref();
    // A bot added to or removed from a channel, added to a project, given a topic in one of its
    // projects or a new DM room, sees another list of resources.
    bus.subscribe((events) => {
      for (const e of events) {
        if (e.type === 'member.joined' || e.type === 'member.left') {
          const d = JSON.parse(e.data) as { member_type?: string; member_id?: string };
          if (d.member_type === 'bot' && d.member_id) this.notifyBot(d.member_id, LIST_CHANGED);
        } else if (e.type === 'resources.changed') {
          const d = JSON.parse(e.data) as { bot_ids?: string[] };
          for (const id of d.bot_ids ?? []) this.notifyBot(id, LIST_CHANGED);
        }
      }
    });
  }

  create(botId: string, protocolVersion: string): McpSession {
    if (this.#sessions.size >= MAX_SESSIONS) {
      // Map order is insertion order: drop the oldest.
      const oldest = this.#sessions.values().next().value;
      if (oldest) this.end(oldest.id);
    }
    const s = new McpSession(randomUUID(), botId, protocolVersion);
    this.#sessions.set(s.id, s);
    return s;
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
    s.close();
  }

  notifyBot(botId: string, data: string): void {
    for (const s of this.#sessions.values()) if (s.botId === botId) s.notify(data);
  }

  sweep(now = Date.now()): void {
    for (const s of this.#sessions.values()) if (now - s.lastSeen > IDLE_MS && !s.stream) this.end(s.id);
  }

  get size(): number {
    return this.#sessions.size;
  }
}

const LIST_CHANGED = '{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}';
