import type { Logger } from 'pino';

/**
 * A long-lived part of the server (recorders, workers, hubs, session stores). `app.ts` owns every one
 * of them through one `Lifecycle`: nothing starts itself on first use, nothing lives in a module-level
 * singleton, and shutdown runs in one order for all.
 */
export interface Service {
  readonly name: string;
  /** Starts timers, workers, listeners. Called once, in registration order. */
  start?(): void | Promise<void>;
  /**
   * Finishes work in flight (deliveries being sent, streams being written) without taking new work,
   * until `deadlineMs` (a `Date.now()` value) at the latest. All services drain at the same time.
   */
  drain?(deadlineMs: number): Promise<void>;
  /** Flushes what is buffered and releases everything. Called in reverse registration order. */
  stop(): Promise<void>;
}

export class Lifecycle {
  readonly #services: Service[] = [];
  #started = false;

  constructor(private readonly log: Logger) {}

  /** Registers a service (started by `start()`, or at once when the lifecycle already started). */
  add<T extends Service>(service: T): T {
    this.#services.push(service);
    if (this.#started)
      void Promise.resolve(service.start?.()).catch((err: unknown) => this.#failed(service, err));
    return service;
  }

  async start(): Promise<void> {
    this.#started = true;
    for (const s of this.#services) await s.start?.();
  }

  /**
   * Shutdown after the HTTP server stopped accepting requests: every service drains (in parallel, until
   * the deadline), then each stops in reverse order, so that a worker stops before the recorders it
   * writes to flush, and those before storage closes. A failing service never keeps the others from
   * stopping.
   */
  async stop(deadlineMs: number): Promise<void> {
    await Promise.all(
      this.#services.map((s) =>
        s.drain
          ? withDeadline(s.drain(deadlineMs), deadlineMs).catch((err: unknown) => this.#failed(s, err))
          : undefined,
      ),
    );
    for (const s of [...this.#services].reverse()) {
      try {
        await s.stop();
      } catch (err) {
        this.#failed(s, err);
      }
    }
  }

  #failed(s: Service, err: unknown): void {
    this.log.error({ err, service: s.name }, 'service failed');
  }
}

function withDeadline(p: Promise<void>, deadlineMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadlineMs - Date.now()));
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
