import type { Logger } from 'pino';
import type { Storage } from '../../storage/storage.js';

/**
 * Records API-key usage (last-used time, use count) without a database write per request: uses are
 * counted in memory and flushed every `intervalMs`, at shutdown, and before any read of key usage.
 */
export class KeyUsageRecorder {
  readonly name = 'key usage';
  readonly #pending = new Map<string, { uses: number; lastUsedAt: string }>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.intervalMs);
    this.#timer.unref();
  }

  record(keyId: string, at: string): void {
    const p = this.#pending.get(keyId);
    if (p) {
      p.uses += 1;
      p.lastUsedAt = at;
    } else this.#pending.set(keyId, { uses: 1, lastUsedAt: at });
  }

  /** Writes what is pending; concurrent calls wait for the same write. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return;
      const batch = [...this.#pending];
      this.#pending.clear();
      try {
        await this.storage.transaction(async (s) => {
          for (const [keyId, u] of batch) await s.bots.recordKeyUsage(keyId, u.uses, u.lastUsedAt);
        });
      } catch (err) {
        // Put the counts back so that they are written with the next flush.
        for (const [keyId, u] of batch) {
          const p = this.#pending.get(keyId);
          if (p) p.uses += u.uses;
          else this.#pending.set(keyId, u);
        }
        this.log.warn({ err }, 'could not record API key usage; will retry');
      }
    });
    return this.#flushing;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.flush();
  }
}
