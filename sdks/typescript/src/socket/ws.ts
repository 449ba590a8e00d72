import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';

/**
 * A minimal WebSocket client (RFC 6455) over node:http(s), so that the SDK keeps zero runtime
 * dependencies on Node 20 (which has no global WebSocket): text frames, fragmentation, masking of what
 * it sends, ping/pong and the close handshake. No extensions (no compression).
 */

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Largest message accepted from the server (a delivery carries at most a few hundred KB). */
const MAX_MESSAGE = 16 * 1024 * 1024;

/** The server answered the upgrade with an HTTP status instead of 101. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`the server refused the socket: HTTP ${status} ${body.slice(0, 300)}`);
    this.name = 'UpgradeRefused';
  }
}

export interface WsHandlers {
  message(text: string, ws: MiniWebSocket): void;
  /** Any pong (answer to our ping). */
  pong(): void;
  /** Once, however the connection ended. */
  close(code: number, reason: string): void;
}

export class MiniWebSocket {
  #buf: Buffer = Buffer.alloc(0);
  #fragments: Buffer[] = [];
  #fragmentBytes = 0;
  #closed = false;
  #closeSent = false;

  private constructor(
    private readonly socket: Socket,
    private readonly h: WsHandlers,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', () => this.#end(1006, 'connection error'));
    socket.on('close', () => this.#end(1006, 'connection closed'));
  }

  /** Opens a socket to `url` (http(s):// or ws(s)://), with these extra request headers. */
  static connect(
    url: string,
    headers: Record<string, string>,
    h: WsHandlers,
    timeoutMs = 15_000,
  ): Promise<MiniWebSocket> {
    const u = new URL(url.replace(/^ws/, 'http'));
    const key = randomBytes(16).toString('base64');
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(u, {
        method: 'GET',
        headers: {
          ...headers,
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': key,
        },
        timeout: timeoutMs,
      });
      req.on('timeout', () => req.destroy(new Error(`no answer to the upgrade within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.on('response', (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (body.length < 4096) body += c;
        });
        res.on('end', () => reject(new UpgradeRefused(res.statusCode ?? 0, body)));
        res.on('error', reject);
      });
      req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
        const expected = createHash('sha1')
          .update(key + GUID)
          .digest('base64');
        if (res.headers['sec-websocket-accept'] !== expected) {
          socket.destroy();
          reject(new Error('bad Sec-WebSocket-Accept from the server'));
          return;
        }
        socket.setTimeout(0);
        const ws = new MiniWebSocket(socket, h);
        if (head.length > 0) ws.#onData(head);
        resolve(ws);
      });
      req.end();
    });
  }

  get open(): boolean {
    return !this.#closed && !this.#closeSent;
  }

  send(text: string): boolean {
    if (!this.open) return false;
    this.#write(0x1, Buffer.from(text, 'utf8'));
    return true;
  }

  ping(): void {
    if (this.open) this.#write(0x9, Buffer.alloc(0));
  }

  /** Starts the close handshake (the server answers and closes the TCP connection). */
  close(code = 1000, reason = ''): void {
    if (this.#closed || this.#closeSent) return;
    this.#closeSent = true;
    const r = Buffer.from(reason.slice(0, 120), 'utf8');
    const p = Buffer.alloc(2 + r.length);
    p.writeUInt16BE(code, 0);
    r.copy(p, 2);
    this.#write(0x8, p);
    // A server that never answers the close is not waited for long.
    setTimeout(() => this.terminate(), 2000).unref();
  }

  /** Ends the connection at once, without a close handshake. */
  terminate(): void {
    this.socket.destroy();
    this.#end(1006, 'terminated');
  }

  #end(code: number, reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.socket.destroy();
    this.h.close(code, reason);
  }

  #write(opcode: number, payload: Buffer): void {
    const len = payload.length;
    const headerLen = len < 126 ? 2 : len < 65536 ? 4 : 10;
    const frame = Buffer.alloc(headerLen + 4 + len);
    frame[0] = 0x80 | opcode;
    if (len < 126) frame[1] = 0x80 | len;
    else if (len < 65536) {
      frame[1] = 0x80 | 126;
      frame.writeUInt16BE(len, 2);
    } else {
      frame[1] = 0x80 | 127;
      frame.writeBigUInt64BE(BigInt(len), 2);
    }
    const mask = randomBytes(4);
    mask.copy(frame, headerLen);
    for (let i = 0; i < len; i++) frame[headerLen + 4 + i] = payload[i]! ^ mask[i & 3]!;
    this.socket.write(frame);
  }

  #onData(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      const fin = (b[0]! & 0x80) !== 0;
      const opcode = b[0]! & 0x0f;
      const masked = (b[1]! & 0x80) !== 0;
      let len = b[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        const big = b.readBigUInt64BE(2);
        if (big > BigInt(MAX_MESSAGE)) return this.#protocolError(1009, 'message too big');
        len = Number(big);
        off = 10;
      }
      if (len > MAX_MESSAGE) return this.#protocolError(1009, 'message too big');
      const maskOff = off;
      if (masked) off += 4;
      if (b.length < off + len) return;
      let payload = b.subarray(off, off + len);
      if (masked) {
        payload = Buffer.from(payload);
        for (let i = 0; i < len; i++) payload[i] = payload[i]! ^ b[maskOff + (i & 3)]!;
      }
      this.#buf = b.subarray(off + len);
      if (this.#closed) return;
      this.#frame(fin, opcode, payload);
    }
  }

  #frame(fin: boolean, opcode: number, payload: Buffer): void {
    switch (opcode) {
      case 0x0: // continuation
      case 0x1: // text
      case 0x2: {
        // binary (not used by the server; read as text)
        this.#fragments.push(payload);
        this.#fragmentBytes += payload.length;
        if (this.#fragmentBytes > MAX_MESSAGE) return this.#protocolError(1009, 'message too big');
        if (!fin) return;
        const whole = this.#fragments.length === 1 ? this.#fragments[0]! : Buffer.concat(this.#fragments);
        this.#fragments = [];
        this.#fragmentBytes = 0;
        this.h.message(whole.toString('utf8'), this);
        return;
      }
      case 0x8: {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        const reason = payload.length > 2 ? payload.subarray(2).toString('utf8') : '';
        if (!this.#closeSent) {
          this.#closeSent = true;
          const echo = Buffer.alloc(2);
          echo.writeUInt16BE(code === 1005 ? 1000 : code, 0);
          this.#write(0x8, echo);
        }
        this.socket.end();
        this.#end(code, reason);
        return;
      }
      case 0x9:
        if (!this.#closeSent) this.#write(0xa, payload);
        return;
      case 0xa:
        this.h.pong();
        return;
      default:
        this.#protocolError(1002, `unknown opcode ${opcode}`);
    }
  }

  #protocolError(code: number, reason: string): void {
    this.close(code, reason);
    this.terminate();
  }
}
