import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Service } from '../runtime/lifecycle.js';
import type { PromMetrics } from './registry.js';

/**
 * `GET /metrics` in the Prometheus text format, on a listener of its own (WORKROOM_METRICS_PORT,
 * default 9464, bound to WORKROOM_METRICS_HOST, default 127.0.0.1): never on the public port, so the
 * internals it shows (queue depths, route names, tool names) reach only what can reach that address.
 * Nothing else is served there.
 *
 * A port that cannot be bound (another process has it) is logged as an error and the server runs on
 * without metrics: serving users matters more than being observed, and the log says so loudly.
 */
export class MetricsListener implements Service {
  readonly name = 'metrics';
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  #url: string | undefined;

  constructor(
    private readonly metrics: PromMetrics,
    private readonly listen: { port: number; host: string },
    private readonly log: Logger,
  ) {}

  /** `http://host:port/metrics` once listening; undefined when it could not bind or has stopped. */
  get url(): string | undefined {
    return this.#url;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      req.on('error', () => res.destroy());
      res.on('error', () => res.destroy());
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: try /metrics\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end();
        return;
      }
      this.metrics.scrape().then(
        (text) => {
          res.writeHead(200, {
            'content-type': this.metrics.contentType,
            'cache-control': 'no-store',
          });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        (err: unknown) => {
          this.log.error({ err }, 'metrics scrape failed');
          if (!res.headersSent)
            res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('scrape failed\n');
          else res.destroy();
        },
      );
    });
    server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.once('close', () => this.#sockets.delete(s));
    });
    server.on('clientError', (_err, socket: Socket) => socket.destroy());
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.listen.port, this.listen.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.log.error(
        { err, port: this.listen.port, host: this.listen.host },
        'metrics listener could not bind: metrics are not served (set WORKROOM_METRICS_PORT, or 0 to turn them off)',
      );
      return;
    }
    server.on('error', (err) => this.log.error({ err }, 'metrics listener'));
    this.#server = server;
    const a = server.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    this.#url = `http://${host}:${a.port}/metrics`;
    this.log.info({ url: this.#url }, 'metrics listening');
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#url = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }
}
