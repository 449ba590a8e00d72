import type { Kysely } from 'kysely';
import type { Storage } from '../storage/storage.js';

/**
 * Readiness (`GET /api/health/ready`, docs/METRICS.md "Health"): whether this instance should be sent
 * traffic. Liveness (`/api/health/live`) only says the process answers; readiness also asks:
 * - database: a `select 1` answers;
 * - migrations: the database has exactly the migrations this build applied at start (a newer
 *   version's migration, or one removed, means the schema is not the one this code was written for);
 * - workers: the long-lived services (outbox reader, webhook worker, scheduler, live stream) started
 *   and the server is not shutting down (a load balancer stops sending before the drain).
 */

export type WorkersState = 'starting' | 'running' | 'stopping';

export interface ReadinessReport {
  ready: boolean;
  database: 'ok' | 'unreachable';
  migrations: 'applied' | 'differ' | 'unknown';
  workers: WorkersState;
}

/** What the health route asks (Services.readiness). */
export interface ReadinessCheck {
  check(): Promise<ReadinessReport>;
}

export class Readiness implements ReadinessCheck {
  #workers: WorkersState = 'starting';
  /** The migrations recorded in the database once this build's were applied, sorted. */
  #applied: string | undefined;

  constructor(private readonly storage: Storage) {}

  /** The services started (app.ts, after the lifecycle's start): remembers the migrations applied. */
  async started(): Promise<void> {
    this.#applied = await this.#migrations();
    this.#workers = 'running';
  }

  /** Shutdown began: not ready from now on. */
  stopping(): void {
    this.#workers = 'stopping';
  }

  async check(): Promise<ReadinessReport> {
    const database = (await this.storage.ping()) ? 'ok' : 'unreachable';
    let migrations: ReadinessReport['migrations'] = 'unknown';
    if (database === 'ok' && this.#applied !== undefined) {
      const now = await this.#migrations().catch(() => undefined);
      migrations = now === undefined ? 'unknown' : now === this.#applied ? 'applied' : 'differ';
    }
    return {
      ready: database === 'ok' && migrations === 'applied' && this.#workers === 'running',
      database,
      migrations,
      workers: this.#workers,
    };
  }

  /** Names in Kysely's migration table (the storage's migrator keeps it; same name on both databases). */
  async #migrations(): Promise<string> {
    // The migration table is not part of the typed schema: read it untyped.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = this.storage.stores.db as unknown as Kysely<any>;
    const rows = (await db.selectFrom('kysely_migration').select('name').execute()) as { name: string }[];
    return rows
      .map((r) => r.name)
      .sort()
      .join(',');
  }
}
