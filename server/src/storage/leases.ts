import { sql } from 'kysely';
import type { Executor } from './stores/executor.js';

/** Leases of singleton work (migration 0018): who holds `name`, until when (epoch ms). */
export class LeaseStore {
  constructor(private readonly db: Executor) {}

  /**
   * Takes or renews the lease `name` for `holder` until `untilMs`, if it is free, expired at `nowMs`, or
   * already `holder`'s; true when `holder` holds it now. One statement: two instances asking at once
   * cannot both get it.
   */
  async tryHold(name: string, holder: string, nowMs: number, untilMs: number): Promise<boolean> {
    const r = await sql<{ holder: string }>`insert into leases (name, holder, expires_at_ms)
      values (${name}, ${holder}, ${untilMs})
      on conflict (name) do update set holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
      where leases.holder = excluded.holder or leases.expires_at_ms < ${nowMs}
      returning holder`.execute(this.db);
    return r.rows[0]?.holder === holder;
  }

  /** Gives the lease up (a stopping instance), if `holder` has it. */
  async release(name: string, holder: string): Promise<void> {
    await sql`delete from leases where name = ${name} and holder = ${holder}`.execute(this.db);
  }

  /** The holder of `name` at `nowMs`, if any (tests, diagnostics). */
  async holder(name: string, nowMs: number): Promise<string | undefined> {
    const r = await sql<{ holder: string }>`select holder from leases
      where name = ${name} and expires_at_ms >= ${nowMs}`.execute(this.db);
    return r.rows[0]?.holder;
  }
}
