import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One webhook request as a receiver saw it. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: Record<string, any>;
  at: number;
}

/** What the receiver answers: a status (and headers, body; after `delayMs`), or `hang` (never answer). */
export type Answer =
  { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/**
 * A real HTTP webhook receiver on 127.0.0.1 for tests: every request is recorded; each path
 * (`/hook/<name>`) answers what its behaviour says (200 by default).
 */
export class Receiver {
  readonly received: Received[] = [];
  readonly #behaviour = new Map<string, (r: Received, nth: number) => Answer>();
  readonly #hanging = new Set<IncomingMessage>();
  #server!: Server;
  url = '';

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    r.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, any> = {};
        try {
          json = JSON.parse(body) as Record<string, any>;
        } catch {
          // recorded as is
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        const rec: Received = { path: req.url ?? '', headers, body, json, at: Date.now() };
        r.received.push(rec);
        const nth = r.received.filter((x) => x.path === rec.path).length;
        const answer = r.#behaviour.get(rec.path)?.(rec, nth) ?? { status: 200 };
        if (answer === 'hang') {
          r.#hanging.add(req);
          req.socket.on('close', () => r.#hanging.delete(req));
          return;
        }
        const respond = () => {
          res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
          res.end(answer.body ?? 'ok');
        };
        if (answer.delayMs) setTimeout(respond, answer.delayMs);
        else respond();
      });
    });
    await new Promise<void>((resolve) => r.#server.listen(0, '127.0.0.1', resolve));
    r.url = `http://127.0.0.1:${(r.#server.address() as AddressInfo).port}`;
    return r;
  }

  /** A fresh path for one bot, with its behaviour. */
  hook(name: string, behaviour?: (r: Received, nth: number) => Answer): string {
    const path = `/hook/${name}`;
    if (behaviour) this.#behaviour.set(path, behaviour);
    return `${this.url}${path}`;
  }

  at(url: string): Received[] {
    const path = new URL(url).pathname;
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const req of this.#hanging) req.socket.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
