import { sql } from 'kysely';
import type { Executor } from './stores/executor.js';

/**
 * Live-stream presence shared by the instances of one PostgreSQL database (migration 0017): a row per
 * instance and connected user, heartbeated by its instance. Used through realtime/presence.ts.
 */
export class PresenceStore {
  constructor(private readonly db: Executor) {}

  async connected(instanceId: string, userId: string, nowMs: number): Promise<void> {
    await sql`insert into presence (instance_id, user_id, seen_at_ms) values (${instanceId}, ${userId}, ${nowMs})
      on conflict (user_id, instance_id) do update set seen_at_ms = excluded.seen_at_ms`.execute(this.db);
  }

  async disconnected(instanceId: string, userId: string): Promise<void> {
    await sql`delete from presence where instance_id = ${instanceId} and user_id = ${userId}`.execute(
      this.db,
    );
  }

  /** Heartbeat: every user of the instance seen now; the rows of users it no longer has go. */
  async heartbeat(instanceId: string, userIds: readonly string[], nowMs: number): Promise<void> {
    await sql`delete from presence where instance_id = ${instanceId}
      and not (user_id = any(${sql.val([...userIds])}::text[]))`.execute(this.db);
    if (userIds.length === 0) return;
    await sql`insert into presence (instance_id, user_id, seen_at_ms)
      select ${instanceId}, u, ${nowMs} from unnest(${sql.val([...userIds])}::text[]) as u
      on conflict (user_id, instance_id) do update set seen_at_ms = excluded.seen_at_ms`.execute(this.db);
  }

  /** Which of `userIds` some instance saw connected since `sinceMs`. */
  async onlineAmong(userIds: readonly string[], sinceMs: number): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const r = await sql<{ user_id: string }>`select distinct user_id from presence
      where user_id = any(${sql.val([...userIds])}::text[]) and seen_at_ms >= ${sinceMs}`.execute(this.db);
    return new Set(r.rows.map((x) => x.user_id));
  }

  /**
   * The ids starting with `prefix` (without it) that an instance other than `exceptInstance` saw
   * connected since `sinceMs` (bot sockets: `bot:<id>`, transports/socket/hub.ts).
   */
  async onlineWithPrefix(prefix: string, sinceMs: number, exceptInstance: string): Promise<Set<string>> {
    const r = await sql<{ user_id: string }>`select distinct user_id from presence
      where user_id like ${`${prefix}%`} and instance_id <> ${exceptInstance} and seen_at_ms >= ${sinceMs}`.execute(
      this.db,
    );
    return new Set(r.rows.map((x) => x.user_id.slice(prefix.length)));
  }

  /** Removes rows no instance has heartbeated since `beforeMs` (instances that died). */
  async prune(beforeMs: number): Promise<number> {
    const r = await sql`delete from presence where seen_at_ms < ${beforeMs}`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }
}
