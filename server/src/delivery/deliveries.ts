import type { OutboxReader } from '../events/outbox-reader.js';
import type { Services } from '../operations/context.js';
import { Fanout } from './fanout.js';
import { OutboundClient } from './outbound.js';
import { DeliveryWorker } from './worker.js';

/**
 * Outgoing webhooks as one long-lived service of the app: the fan-out (outbox → delivery rows) and the
 * worker (delivery rows → signed POSTs), with the outbound client they share. Registered in app.ts
 * after the outbox reader; on shutdown the worker drains (attempts in flight finish or are handed
 * back) before storage closes.
 */
export class WebhookDeliveryService {
  readonly name = 'webhooks';
  readonly worker: DeliveryWorker;
  readonly fanout: Fanout;
  readonly #client: OutboundClient;

  constructor(services: Services, reader: OutboxReader, opts: { pollMs?: number } = {}) {
    const w = services.config.webhooks;
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
      client: this.#client,
      ...(opts.pollMs !== undefined && { pollMs: opts.pollMs }),
    });
    this.fanout = new Fanout(services.storage, reader, services.log, () => this.worker.wake());
  }

  start(): void {
    this.fanout.start();
    this.worker.start();
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
