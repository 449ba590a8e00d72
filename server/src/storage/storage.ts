import { Stores } from './stores/index.js';
import type { DatabaseHandle, Dialect } from './database.js';
import { migrate, pingDatabase } from './database.js';
import { engineTransaction } from './sqlite-engine.js';
import type { Progress } from './migrations/0002_search.js';
import { SearchStore } from './stores/search.js';

/** The storage layer as the rest of the server sees it: stores, transactions, health, close. */
export class Storage {
  readonly stores: Stores;
  readonly dialect: Dialect;
  /** Full-text search reads, each within a time budget (off the event loop's thread on SQLite). */
  readonly search: SearchStore;

  constructor(private readonly handle: DatabaseHandle) {
    this.stores = new Stores(handle.db);
    this.dialect = handle.dialect;
    this.search = new SearchStore(handle);
  }

  /** Runs `fn` in one transaction: every change it makes commits together or not at all. */
  transaction<T>(fn: (stores: Stores) => Promise<T>): Promise<T> {
    const { db, sqlite } = this.handle;
    if (sqlite) return engineTransaction(db, sqlite, (trx) => fn(new Stores(trx)));
    return db.transaction().execute((trx) => fn(new Stores(trx)));
  }

  /** Applies pending migrations; `progress` hears how a long one is doing (the search index build). */
  migrate(progress?: Progress): Promise<string[]> {
    return migrate(this.handle, progress);
  }

  ping(): Promise<boolean> {
    return pingDatabase(this.handle);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
