import { currentToken } from './client';
/**
 * Live updates over the WebSocket at /api/realtime (docs/REALTIME.md): the first message
 * authenticates with the user token and the last sequence number seen, so a dropped connection
 * resumes where it stopped — the server replays what was missed, and anything at or below the last
 * seen `seq` is ignored, so nothing is lost or shown twice. `reset` means the server cannot replay
 * that far back: the app reloads what it shows. Reconnects back off exponentially (with jitter, at
 * most 30 s). Until a connection is ready the status is not 'live', and the chat polls instead.
 * `LiveEvent` is generated from the server's event catalogue (live-events.ts): `event_type` narrows `data`.
 */
import type { LiveEvent, LiveEventType } from './live-events';

export type { LiveEvent, LiveEventType };

export type LiveStatus = 'connecting' | 'live' | 'offline';

export interface RealtimeHandlers {
  event(e: LiveEvent): void;
  ephemeral(m: Record<string, unknown>): void;
  reset(): void;
  status(s: LiveStatus): void;
  unauthorized(): void;
}

type ServerMessage =
  | { type: 'ready'; seq: number }
  | { type: 'event'; seq: number; event: LiveEvent }
  | { type: 'ephemeral'; [k: string]: unknown }
  | { type: 'reset' }
  | { type: 'error'; code?: string; message?: string };

export class Realtime {
  private ws: WebSocket | null = null;
  private lastSeq: number | undefined;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly token: string,
    private readonly on: RealtimeHandlers,
  ) {}

  start(): void {
    this.connect();
    window.addEventListener('online', this.reconnectNow);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    window.removeEventListener('online', this.reconnectNow);
    this.ws?.close(1000);
  }

  private readonly reconnectNow = (): void => {
    if (this.ws === null && !this.stopped) {
      clearTimeout(this.timer);
      this.connect();
    }
  };

  private connect(): void {
    this.on.status('connecting');
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/realtime`;
    let ws: WebSocket;
    try {
      ws = new WebSocket(url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      // The session's current token (a password change signs in again with a new one).
      const auth: Record<string, unknown> = { type: 'auth', token: currentToken() ?? this.token };
      if (this.lastSeq !== undefined) auth.last_seq = this.lastSeq;
      ws.send(JSON.stringify(auth));
    };
    ws.onmessage = (m: MessageEvent<unknown>) => {
      if (typeof m.data !== 'string') return;
      let msg: ServerMessage;
      try {
        msg = JSON.parse(m.data) as ServerMessage;
      } catch {
        return;
      }
      this.handle(msg);
    };
    ws.onclose = (e: CloseEvent) => {
      if (this.ws === ws) this.ws = null;
      if (this.stopped) return;
      this.on.status('offline');
      // 4401 (and policy violation 1008) close a socket whose token the server refused.
      if (e.code === 4401 || e.code === 1008) {
        this.on.unauthorized();
        return;
      }
      this.scheduleReconnect();
    };
  }

  private handle(msg: ServerMessage): void {
    switch (msg.type) {
      case 'ready':
        this.attempt = 0;
        // A first connection starts at the server's current position; a resumed one keeps its own.
        this.lastSeq ??= msg.seq;
        this.on.status('live');
        return;
      case 'event':
        if (this.lastSeq !== undefined && msg.seq <= this.lastSeq) return; // already seen
        this.lastSeq = msg.seq;
        this.on.event(msg.event);
        return;
      case 'ephemeral':
        this.on.ephemeral(msg);
        return;
      case 'reset':
        this.lastSeq = undefined;
        this.on.reset();
        return;
      case 'error':
        if (msg.code === 'unauthenticated') this.on.unauthorized();
        return;
    }
  }

  private scheduleReconnect(): void {
    const base = Math.min(30_000, 500 * 2 ** this.attempt);
    this.attempt++;
    this.timer = setTimeout(() => this.connect(), base / 2 + Math.random() * (base / 2));
  }
}
