import { sql } from 'kysely';
import { Stores } from './stores/index.js';
import type { DatabaseHandle, Dialect, PoolUse } from './database.js';
import { migrate, pingDatabase } from './database.js';
import { engineTransaction } from './sqlite-engine.js';
import { deferredTransaction } from './pg-deferred-transaction.js';
import type { Progress } from './migrations/0002_search.js';
import { SearchStore } from './stores/search.js';
import { SharedRateBuckets } from './shared-rate-buckets.js';
import { PresenceStore } from './presence.js';
import { CommandForwardStore } from './command-forwards.js';
import { LeaseStore } from './leases.js';

/** The storage layer as the rest of the server sees it: stores, transactions, health, close. */
export class Storage {
  readonly stores: Stores;
  readonly dialect: Dialect;
  /**
   * Statements run on the event loop's own thread, one writer at a time (SQLite): a transaction keeps
   * the loop busy for as long as it runs, so background work paces itself and writes in one lane.
   */
  readonly runsOnEventLoop: boolean;
  /**
   * Outbox positions are given after commit by a sequencer, in commit order (PostgreSQL, several
   * writers at once); on SQLite the single writer numbers each event as it is written.
   */
  readonly numbersOutboxAfterCommit: boolean;
  /** Full-text search reads, each within a time budget (off the event loop's thread on SQLite). */
  readonly search: SearchStore;
  /**
   * Rate-limit buckets shared by every instance on the database (PostgreSQL, where several instances
   * may serve one database); undefined on SQLite, whose one server keeps them in memory.
   */
  readonly sharedRateBuckets: SharedRateBuckets | undefined;
  /** Live-stream presence every instance on the database sees (PostgreSQL); undefined on SQLite. */
  readonly presence: PresenceStore | undefined;
  /** Slash commands forwarded to the instance holding the bot's socket (PostgreSQL); undefined on SQLite. */
  readonly commandForwards: CommandForwardStore | undefined;
  /** Leases of singleton work (scheduler/leader.ts). */
  readonly leases: LeaseStore;

  constructor(private readonly handle: DatabaseHandle) {
    this.stores = new Stores(handle.db, handle.pgLookups);
    this.dialect = handle.dialect;
    this.runsOnEventLoop = handle.dialect === 'sqlite';
    this.numbersOutboxAfterCommit = handle.dialect === 'postgres';
    this.search = new SearchStore(handle);
    this.sharedRateBuckets = handle.dialect === 'postgres' ? new SharedRateBuckets(handle.db) : undefined;
    this.presence = handle.dialect === 'postgres' ? new PresenceStore(handle.db) : undefined;
    this.commandForwards = handle.dialect === 'postgres' ? new CommandForwardStore(handle.db) : undefined;
    this.leases = new LeaseStore(handle.db);
  }

  /** Runs `fn` in one transaction: every change it makes commits together or not at all. */
  transaction<T>(fn: (stores: Stores) => Promise<T>): Promise<T> {
    const { db, sqlite, pgPool, pgWrites } = this.handle;
    if (sqlite) return engineTransaction(db, sqlite, (trx) => fn(new Stores(trx)));
    if (pgPool) return deferredTransaction(db, pgPool, pgWrites, (trx) => fn(new Stores(trx)));
    return db.transaction().execute((trx) => fn(new Stores(trx)));
  }

  /**
   * Runs `fn` in one transaction that no other instance on the database runs at the same time for the
   * same `name` (PostgreSQL: an advisory lock held to its commit; SQLite has one writer anyway): what
   * instances starting together must do once, such as the first-start set-up.
   */
  exclusiveTransaction<T>(name: string, fn: (stores: Stores) => Promise<T>): Promise<T> {
    return this.transaction(async (stores) => {
      if (this.dialect === 'postgres') {
        await sql`select pg_advisory_xact_lock(hashtext(current_schema() || ${`.workroom.${name}`}))`.execute(
          stores.db,
        );
      }
      return fn(stores);
    });
  }

  /** Applies pending migrations; `progress` hears how a long one is doing (the search index build). */
  migrate(progress?: Progress): Promise<string[]> {
    return migrate(this.handle, progress);
  }

  /** Connections in use, idle and waited for (metrics): PostgreSQL's main pool; SQLite's one writer. */
  poolUse(): PoolUse {
    const { sqlite, pool } = this.handle;
    if (pool) return pool();
    const used = sqlite?.locked ? 1 : 0;
    return { max: 1, used, idle: 1 - used, waiting: sqlite?.waiting ?? 0 };
  }

  ping(): Promise<boolean> {
    return pingDatabase(this.handle);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
