import { sql } from 'kysely';
import type { Executor } from './stores/executor.js';

/**
 * The NOTIFY channel of forwarded slash commands; the payload is the schema, ` request <id> <bot id>`
 * or ` done <id>` (operations/commands/forward.ts).
 */
export const COMMAND_CHANNEL = 'workroom_commands';

export type ForwardState = 'pending' | 'claimed' | 'acked' | 'done';

/**
 * Slash commands forwarded between the instances of one PostgreSQL database (migration 0022): the
 * requesting instance writes the command, the instance holding the bot's socket claims it and writes
 * the outcome. Every change that another instance waits for is followed by a NOTIFY (the command stays
 * in the row: a NOTIFY's payload is at most 8000 bytes).
 */
export class CommandForwardStore {
  constructor(private readonly db: Executor) {}

  async #notify(kind: 'request' | 'done', id: string, botId = ''): Promise<void> {
    await sql`select pg_notify(${COMMAND_CHANNEL}, current_schema() || ${` ${kind} ${id} ${botId}`.trimEnd()})`.execute(
      this.db,
    );
  }

  /** The schema whose payloads are this database's (the listener compares). */
  async schema(): Promise<string> {
    const r = await sql<{ s: string }>`select current_schema() as s`.execute(this.db);
    return r.rows[0]!.s;
  }

  /** Writes a command to forward and tells the other instances. */
  async request(id: string, botId: string, envelope: string, nowMs: number): Promise<void> {
    await sql`insert into command_forwards (id, bot_id, envelope, state, created_at_ms)
      values (${id}, ${botId}, ${envelope}, 'pending', ${nowMs})`.execute(this.db);
    await this.#notify('request', id, botId);
  }

  /** Takes a pending command for `holder`: its bot and envelope, or undefined (taken or withdrawn). */
  async claim(id: string, holder: string): Promise<{ botId: string; envelope: string } | undefined> {
    const r = await sql<{ bot_id: string; envelope: string }>`update command_forwards
      set state = 'claimed', holder = ${holder}
      where id = ${id} and state = 'pending' returning bot_id, envelope`.execute(this.db);
    const row = r.rows[0];
    return row && { botId: row.bot_id, envelope: row.envelope };
  }

  /** The bot acked: false when the requester withdrew meanwhile (it answered `timeout`). */
  async acked(id: string, holder: string): Promise<boolean> {
    const r = await sql`update command_forwards set state = 'acked'
      where id = ${id} and holder = ${holder} and state = 'claimed'`.execute(this.db);
    return Number(r.numAffectedRows ?? 0) === 1;
  }

  /** Writes the outcome and tells the requester; false when it withdrew meanwhile. */
  async finish(id: string, holder: string, result: string): Promise<boolean> {
    const r = await sql`update command_forwards set state = 'done', result = ${result}
      where id = ${id} and holder = ${holder} and state in ('claimed', 'acked')`.execute(this.db);
    const ok = Number(r.numAffectedRows ?? 0) === 1;
    if (ok) await this.#notify('done', id);
    return ok;
  }

  async read(id: string): Promise<{ state: ForwardState; result: string | null } | undefined> {
    const r = await sql<{ state: ForwardState; result: string | null }>`select state, result
      from command_forwards where id = ${id}`.execute(this.db);
    return r.rows[0];
  }

  /** Deletes the command if it is in one of `states`: true if it was (the holder can change nothing). */
  async withdraw(id: string, states: readonly ForwardState[]): Promise<boolean> {
    const r = await sql`delete from command_forwards
      where id = ${id} and state = any(${sql.val([...states])}::text[])`.execute(this.db);
    return Number(r.numAffectedRows ?? 0) === 1;
  }

  async remove(id: string): Promise<void> {
    await sql`delete from command_forwards where id = ${id}`.execute(this.db);
  }

  /** Rows left by instances that died while waiting. */
  async prune(beforeMs: number): Promise<number> {
    const r = await sql`delete from command_forwards where created_at_ms < ${beforeMs}`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }
}
