import type { OutboxReader } from '../events/outbox-reader.js';
import type { Services } from '../operations/context.js';
import { Fanout } from './fanout.js';
import type { InProcessReceiver } from './in-process.js';
import { OutboundClient } from '../outbound/client.js';
import { Pacer, type ForegroundMeter } from './pacer.js';
import type { SocketTransport } from './socket.js';
import { DeliveryWorker } from './worker.js';

/**
 * Outgoing webhooks as one long-lived service of the app: the fan-out (outbox → delivery rows) and the
 * worker (delivery rows → signed POSTs), with the outbound client they share. Registered in app.ts
 * after the outbox reader; on shutdown the worker drains (attempts in flight finish or are handed
 * back, and finished ones are recorded) before storage closes.
 *
 * `foreground` (app.ts counts requests in flight) paces both while requests are being served
 * (delivery/pacer.ts); `inProcess` delivers to built-in bots (delivery/in-process.ts).
 */
export class WebhookDeliveryService {
  readonly name = 'webhooks';
  readonly worker: DeliveryWorker;
  readonly fanout: Fanout;
  readonly #client: OutboundClient;

  constructor(
    services: Services,
    reader: OutboxReader,
    opts: {
      pollMs?: number;
      inProcess?: InProcessReceiver;
      socket?: SocketTransport;
      foreground?: ForegroundMeter;
    } = {},
  ) {
    const w = services.config.webhooks;
    const pacer = new Pacer(opts.foreground);
    this.#client = new OutboundClient({
      allowPrivate: w.allowPrivateUrls,
      allowedRanges: w.allowedRanges,
      timeoutMs: w.timeoutMs,
      maxResponseBytes: 1024,
    });
    this.worker = new DeliveryWorker({
      storage: services.storage,
      log: services.log,
      webhooks: w,
      encryptionKey: services.encryptionKey,
      previousEncryptionKeys: services.previousEncryptionKeys,
      client: this.#client,
      pacer,
      clock: services.clock,
      metrics: services.metrics,
      isLeader: () => services.leader.isLeader,
      ...(opts.pollMs !== undefined && { pollMs: opts.pollMs }),
      ...(opts.inProcess && { inProcess: opts.inProcess }),
      ...(opts.socket && { socket: opts.socket }),
      sockets: services.config.sockets,
    });
    this.fanout = new Fanout(services.storage, reader, services.log, this.worker, pacer);
  }

  start(): void {
    this.worker.start();
    this.fanout.start();
  }

  async drain(deadlineMs: number): Promise<void> {
    await this.fanout.stop();
    await this.worker.drain(deadlineMs);
  }

  async stop(): Promise<void> {
    await this.fanout.stop();
    await this.worker.stop();
    this.#client.close();
  }
}
