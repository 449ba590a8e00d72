import { sql, type RawBuilder } from 'kysely';
import type { ReadMarkerRow } from '../schema.js';
import type { Executor } from './executor.js';

export type MarkerKind = ReadMarkerRow['container_type'];

/** One container with messages the user has not read. */
export interface UnreadRow {
  container_type: MarkerKind;
  container_id: string;
  /** Messages after the marker, at most the cap asked for. */
  unread: number;
  last_read_at: string | null;
  last_read_message_id: string | null;
}

/** The message column of each container kind (each has its own partial index on created_at, id). */
const COLUMN = { channel: 'channel_id', topic: 'topic_id', dm_room: 'dm_room_id' } as const;

/**
 * Messages of container `src.container_id` after the read position (`src.after_at`, `src.after_id`),
 * neither deleted nor sent by the user, counted up to `cap`: an index range scan that stops at `cap`
 * rows, whatever the history's length.
 */
function cappedCount(kind: MarkerKind, userId: string, cap: number): RawBuilder<number> {
  const col = sql.ref(`m.${COLUMN[kind]}`);
  return sql<number>`(select count(*) from (
      select 1 from messages m
      where ${col} = src.container_id
        and m.deleted_at is null
        and (m.created_at > src.after_at or (m.created_at = src.after_at and m.id > src.after_id))
        and not (m.sender_type = 'user' and m.sender_id = ${userId})
      limit ${cap}) capped)`;
}

/**
 * Read markers: how far each user has read each container (channel, topic, DM room). A marker only
 * moves forward, in the list order of messages (created_at, then id).
 */
export class ReadMarkerStore {
  constructor(private readonly db: Executor) {}

  get(userId: string, kind: MarkerKind, containerId: string): Promise<ReadMarkerRow | undefined> {
    return this.db
      .selectFrom('read_markers')
      .selectAll()
      .where('user_id', '=', userId)
      .where('container_type', '=', kind)
      .where('container_id', '=', containerId)
      .executeTakeFirst();
  }

  /**
   * Moves the marker to (at, messageId) unless it is already there or further: one statement, so two
   * racing calls (two tabs) can never move it backwards. Answers whether it moved.
   */
  async advance(row: ReadMarkerRow): Promise<boolean> {
    const res = await this.db
      .insertInto('read_markers')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['user_id', 'container_type', 'container_id'])
          .doUpdateSet({
            last_read_at: (eb) => eb.ref('excluded.last_read_at'),
            last_read_message_id: (eb) => eb.ref('excluded.last_read_message_id'),
            updated_at: (eb) => eb.ref('excluded.updated_at'),
          })
          .where((eb) =>
            eb.or([
              eb('excluded.last_read_at', '>', eb.ref('read_markers.last_read_at')),
              eb.and([
                eb('excluded.last_read_at', '=', eb.ref('read_markers.last_read_at')),
                eb(
                  'excluded.last_read_message_id',
                  '>',
                  sql<string>`coalesce(${sql.ref('read_markers.last_read_message_id')}, '')`,
                ),
              ]),
            ]),
          ),
      )
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Unread messages of one container after the user's marker (or after `since` without one). */
  async countOne(
    userId: string,
    kind: MarkerKind,
    containerId: string,
    since: string,
    cap: number,
  ): Promise<number> {
    const r = await sql<{ unread: number | string }>`
      select ${cappedCount(kind, userId, cap)} as unread from (
        select ${containerId} as container_id,
          coalesce(r.last_read_at, ${since}) as after_at,
          coalesce(r.last_read_message_id, '') as after_id
        from (select 1 as one) o
        left join read_markers r
          on r.user_id = ${userId} and r.container_type = ${kind} and r.container_id = ${containerId}
      ) src`.execute(this.db);
    return Number(r.rows[0]?.unread ?? 0);
  }

  /**
   * Unread counts of every container of one kind the user follows, in one query: the containers it
   * belongs to (counted from its marker, or from when it joined) and those it has a marker of and may
   * still read (public channels it has not joined; for org admins, every channel and topic of the
   * organization). Only containers with unread messages are answered.
   */
  async unread(
    kind: MarkerKind,
    viewer: { userId: string; orgId: string; orgAdmin: boolean },
    cap: number,
  ): Promise<UnreadRow[]> {
    const { userId, orgId, orgAdmin } = viewer;
    const admin = orgAdmin ? 1 : 0;
    const marker = (id: RawBuilder<unknown>) =>
      sql`left join read_markers r on r.user_id = ${userId} and r.container_type = ${kind} and r.container_id = ${id}`;
    let followed: RawBuilder<unknown>;
    if (kind === 'channel') {
      followed = sql`
        select cm.channel_id as container_id, coalesce(r.last_read_at, cm.joined_at) as after_at,
          coalesce(r.last_read_message_id, '') as after_id, r.last_read_at, r.last_read_message_id
        from channel_members cm ${marker(sql.ref('cm.channel_id'))}
        where cm.member_type = 'user' and cm.member_id = ${userId}
        union all
        select r.container_id, r.last_read_at, coalesce(r.last_read_message_id, ''), r.last_read_at,
          r.last_read_message_id
        from read_markers r join channels ch on ch.id = r.container_id
        where r.user_id = ${userId} and r.container_type = 'channel' and ch.org_id = ${orgId}
          and (ch.is_private = 0 or ${admin} = 1)
          and not exists (select 1 from channel_members x where x.channel_id = ch.id
            and x.member_type = 'user' and x.member_id = ${userId})`;
    } else if (kind === 'topic') {
      followed = sql`
        select t.id as container_id, coalesce(r.last_read_at, pm.joined_at) as after_at,
          coalesce(r.last_read_message_id, '') as after_id, r.last_read_at, r.last_read_message_id
        from project_members pm join topics t on t.project_id = pm.project_id ${marker(sql.ref('t.id'))}
        where pm.member_type = 'user' and pm.member_id = ${userId}
        union all
        select r.container_id, r.last_read_at, coalesce(r.last_read_message_id, ''), r.last_read_at,
          r.last_read_message_id
        from read_markers r join topics t on t.id = r.container_id
        where r.user_id = ${userId} and r.container_type = 'topic' and t.org_id = ${orgId} and ${admin} = 1
          and not exists (select 1 from project_members x where x.project_id = t.project_id
            and x.member_type = 'user' and x.member_id = ${userId})`;
    } else {
      followed = sql`
        select dm.dm_room_id as container_id, coalesce(r.last_read_at, dm.joined_at) as after_at,
          coalesce(r.last_read_message_id, '') as after_id, r.last_read_at, r.last_read_message_id
        from dm_room_members dm ${marker(sql.ref('dm.dm_room_id'))}
        where dm.member_type = 'user' and dm.member_id = ${userId}`;
    }
    const r = await sql<{
      container_id: string;
      unread: number | string;
      last_read_at: string | null;
      last_read_message_id: string | null;
    }>`
      select container_id, unread, last_read_at, last_read_message_id from (
        select src.container_id, ${cappedCount(kind, userId, cap)} as unread,
          src.last_read_at, src.last_read_message_id
        from (${followed}) src
      ) counted
      where unread > 0
      order by container_id`.execute(this.db);
    return r.rows.map((x) => ({
      container_type: kind,
      container_id: x.container_id,
      unread: Number(x.unread),
      last_read_at: x.last_read_at,
      last_read_message_id: x.last_read_message_id,
    }));
  }
}
