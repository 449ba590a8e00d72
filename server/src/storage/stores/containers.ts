import { sql } from 'kysely';
import type { ChannelRow, DmRoomRow, ProjectRow, TopicRow } from '../schema.js';
import type { Executor } from './executor.js';
import { containsInsensitive } from './sql-helpers.js';
import { prepared } from './prepared.js';

export type MemberType = 'user' | 'bot';
export interface MemberRef {
  type: MemberType;
  id: string;
}

const MEMBER_TABLES = {
  channel: { table: 'channel_members', parent: 'channel_id' },
  project: { table: 'project_members', parent: 'project_id' },
  dm_room: { table: 'dm_room_members', parent: 'dm_room_id' },
} as const;
export type MembershipKind = keyof typeof MEMBER_TABLES;

// Lookups on every request that touches a container: prepared once, not rebuilt.
const isMemberQuery = (kind: MembershipKind) =>
  prepared((db, parentId: string, type: string, id: string) =>
    db
      .selectFrom(MEMBER_TABLES[kind].table)
      .select('member_id')
      .where(MEMBER_TABLES[kind].parent as never, '=', parentId as never)
      .where('member_type', '=', type as MemberType)
      .where('member_id', '=', id),
  );
const IS_MEMBER = {
  channel: isMemberQuery('channel'),
  project: isMemberQuery('project'),
  dm_room: isMemberQuery('dm_room'),
};
/**
 * A row of `table` with whether the given member belongs to it (via `memberTable.parent` =
 * `table.via`): one query for the access check on every request that names a container.
 */
const withMembership = <T extends 'channels' | 'topics'>(
  table: T,
  via: 'id' | 'project_id',
  memberTable: 'channel_members' | 'project_members',
  parent: 'channel_id' | 'project_id',
) =>
  prepared((db, id: string, type: string, memberId: string) =>
    db
      .selectFrom(table as 'channels')
      .selectAll()
      .select((eb) =>
        eb
          .exists(
            db
              .selectFrom(memberTable as 'channel_members')
              .select('member_id')
              .where(sql.ref(`${memberTable}.${parent}`), '=', sql.ref(`${table}.${via}`))
              .where('member_type', '=', type as MemberType)
              .where('member_id', '=', memberId),
          )
          .as('is_member'),
      )
      .where(sql.ref(`${table}.id`), '=', id),
  );
/** A channel with whether a given member belongs to it: what the access check reads. */
export type ChannelForMember = ChannelRow & { is_member: boolean };

const CHANNEL_COLUMNS = [
  'id',
  'org_id',
  'name',
  'description',
  'is_private',
  'created_by',
  'created_at',
  'updated_at',
  'archived_at',
] as const satisfies readonly (keyof ChannelRow)[];

/**
 * Selections for a query that left-joins `channels` (on the channel asked for): the channel's columns as
 * `ch_<column>` and whether the member (`memberType`, the caller's column `memberIdColumn`) belongs to
 * it as `ch_is_member`. A credential's lookup takes them so that authentication and the channel's
 * access check are one statement, one round trip (users.ts, bots.ts; read back with `channelOfRow`).
 */
export function channelSelections(memberType: MemberType, memberIdColumn: string) {
  return [
    ...CHANNEL_COLUMNS.map((c) => sql.ref(`channels.${c}`).as(`ch_${c}`)),
    sql<unknown>`exists (select 1 from channel_members where channel_members.channel_id = channels.id and channel_members.member_type = ${memberType} and channel_members.member_id = ${sql.ref(memberIdColumn)})`.as(
      'ch_is_member',
    ),
  ];
}

/**
 * A channel's own columns as one object literal (without an `is_member` a read added). Rows from the
 * SQLite committed-read cache are frozen, and V8 (Node 20) copies a frozen object by spread or rest
 * ~8× slower than a plain one (366 against 45 ns; bench/object-spread.ts): reading its fields is not.
 */
export function channelRowOf(c: ChannelRow): ChannelRow {
  return {
    id: c.id,
    org_id: c.org_id,
    name: c.name,
    description: c.description,
    is_private: c.is_private,
    created_by: c.created_by,
    created_at: c.created_at,
    updated_at: c.updated_at,
    archived_at: c.archived_at ?? null,
  } satisfies Required<ChannelRow>; // a column added to ChannelRow must be added here
}

/** The channel a row selected with `channelSelections` carries; undefined when there is no such channel. */
export function channelOfRow(row: ChannelColumns): ChannelForMember | undefined {
  if (row.ch_id === null || row.ch_id === undefined) return undefined;
  // One object literal (one shape), not a loop over the names: on every request of a channel's messages.
  return {
    id: row.ch_id,
    org_id: row.ch_org_id,
    name: row.ch_name,
    description: row.ch_description,
    is_private: row.ch_is_private,
    created_by: row.ch_created_by,
    created_at: row.ch_created_at,
    updated_at: row.ch_updated_at,
    archived_at: row.ch_archived_at,
    is_member: Boolean(row.ch_is_member),
  } as ChannelForMember;
}

/** The `ch_*` columns of `channelSelections`, as a row carries them (null: no such channel). */
type ChannelColumns = { [K in (typeof CHANNEL_COLUMNS)[number] as `ch_${K}`]: unknown } & {
  ch_is_member: unknown;
};

const GET_CHANNEL_FOR = withMembership('channels', 'id', 'channel_members', 'channel_id');
const GET_TOPIC_FOR = withMembership('topics', 'project_id', 'project_members', 'project_id');
const GET_CHANNEL = prepared((db, id: string) => db.selectFrom('channels').selectAll().where('id', '=', id));
const GET_TOPIC = prepared((db, id: string) => db.selectFrom('topics').selectAll().where('id', '=', id));
const GET_DM_ROOM = prepared((db, id: string) => db.selectFrom('dm_rooms').selectAll().where('id', '=', id));

/**
 * Channels, projects with their topics, and DM rooms: the containers that hold messages, tasks and
 * files, with their memberships.
 */
export class ContainerStore {
  constructor(private readonly db: Executor) {}

  // --- memberships (one implementation for the three member tables) ---

  async isMember(kind: MembershipKind, parentId: string, m: MemberRef): Promise<boolean> {
    return (await IS_MEMBER[kind](this.db, parentId, m.type, m.id)).rows.length > 0;
  }

  /** Adds a member; returns false when it already was one. */
  async addMember(kind: MembershipKind, parentId: string, m: MemberRef, now: string): Promise<boolean> {
    const { table, parent } = MEMBER_TABLES[kind];
    const res = await this.db
      .insertInto(table)
      .values({ [parent]: parentId, member_type: m.type, member_id: m.id, joined_at: now } as never)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async removeMember(kind: MembershipKind, parentId: string, m: MemberRef): Promise<boolean> {
    const { table, parent } = MEMBER_TABLES[kind];
    const res = await this.db
      .deleteFrom(table)
      .where(parent as never, '=', parentId as never)
      .where('member_type', '=', m.type)
      .where('member_id', '=', m.id)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async listMembers(
    kind: MembershipKind,
    parentId: string,
  ): Promise<{ member_type: MemberType; member_id: string; joined_at: string }[]> {
    const { table, parent } = MEMBER_TABLES[kind];
    return this.db
      .selectFrom(table)
      .select(['member_type', 'member_id', 'joined_at'])
      .where(parent as never, '=', parentId as never)
      .orderBy('joined_at')
      .execute() as never;
  }

  // --- channels ---

  async createChannel(row: ChannelRow): Promise<void> {
    await this.db.insertInto('channels').values(row).execute();
  }

  async getChannel(id: string): Promise<ChannelRow | undefined> {
    return (await GET_CHANNEL(this.db, id)).rows[0];
  }

  async updateChannel(
    id: string,
    patch: Partial<Pick<ChannelRow, 'name' | 'description' | 'is_private'>>,
    now: string,
  ): Promise<void> {
    await this.db
      .updateTable('channels')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Channels of an organization that a member can see: public ones, and private ones it belongs to.
   * With `onlyMemberOf`, only those it belongs to (what a bot reaches).
   */
  listChannels(
    orgId: string,
    viewer: MemberRef,
    opts: { onlyMemberOf: boolean; query?: string; limit?: number },
  ): Promise<ChannelRow[]> {
    let q = this.db
      .selectFrom('channels')
      .selectAll('channels')
      .where('channels.org_id', '=', orgId)
      .where('channels.archived_at', 'is', null);
    const memberOf = this.db
      .selectFrom('channel_members')
      .select('channel_id')
      .where('member_type', '=', viewer.type)
      .where('member_id', '=', viewer.id);
    q = opts.onlyMemberOf
      ? q.where('channels.id', 'in', memberOf)
      : q.where((eb) => eb.or([eb('channels.is_private', '=', 0), eb('channels.id', 'in', memberOf)]));
    if (opts.query) q = q.where(containsInsensitive('channels.name', opts.query));
    return q
      .orderBy('channels.name')
      .limit(opts.limit ?? 1000)
      .execute();
  }

  // --- projects and topics ---

  async createProject(row: ProjectRow): Promise<void> {
    await this.db.insertInto('projects').values(row).execute();
  }

  getProject(id: string): Promise<ProjectRow | undefined> {
    return this.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Projects of the org the member belongs to (all of them when `all` is set, for admins). */
  listProjects(
    orgId: string,
    viewer: MemberRef,
    opts: { all: boolean; query?: string; limit?: number },
  ): Promise<ProjectRow[]> {
    let q = this.db
      .selectFrom('projects')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('archived_at', 'is', null);
    if (!opts.all) {
      q = q.where(
        'id',
        'in',
        this.db
          .selectFrom('project_members')
          .select('project_id')
          .where('member_type', '=', viewer.type)
          .where('member_id', '=', viewer.id),
      );
    }
    if (opts.query) q = q.where(containsInsensitive('name', opts.query));
    return q
      .orderBy('name')
      .limit(opts.limit ?? 1000)
      .execute();
  }

  async updateProject(
    id: string,
    patch: Partial<Pick<ProjectRow, 'name' | 'description'>>,
    now: string,
  ): Promise<void> {
    await this.db
      .updateTable('projects')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async updateTopic(id: string, patch: Partial<Pick<TopicRow, 'name'>>, now: string): Promise<void> {
    await this.db
      .updateTable('topics')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /** Archives (or, with null, restores) a channel, project or topic; false when nothing changed. */
  async setArchived(
    table: 'channels' | 'projects' | 'topics',
    id: string,
    archivedAt: string | null,
    now: string,
  ): Promise<boolean> {
    const res = await this.db
      .updateTable(table)
      .set({ archived_at: archivedAt, updated_at: now })
      .where('id', '=', id)
      .where('archived_at', archivedAt === null ? 'is not' : 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async createTopic(row: TopicRow): Promise<void> {
    await this.db.insertInto('topics').values(row).execute();
  }

  /** The channel and whether `m` is a member of it, in one query. */
  async getChannelFor(id: string, m: MemberRef): Promise<ChannelForMember | undefined> {
    const row = (await GET_CHANNEL_FOR(this.db, id, m.type, m.id)).rows[0];
    if (!row) return undefined;
    const channel = channelRowOf(row) as ChannelForMember;
    channel.is_member = Boolean(row.is_member);
    return channel;
  }

  /** The topic and whether `m` is a member of its project, in one query. */
  async getTopicFor(id: string, m: MemberRef): Promise<(TopicRow & { is_member: boolean }) | undefined> {
    const row = (await GET_TOPIC_FOR(this.db, id, m.type, m.id)).rows[0] as unknown as
      (TopicRow & { is_member: unknown }) | undefined;
    return row && { ...row, is_member: Boolean(row.is_member) };
  }

  async getTopic(id: string): Promise<TopicRow | undefined> {
    return (await GET_TOPIC(this.db, id)).rows[0];
  }

  listTopics(projectIds: string[], opts: { query?: string; limit?: number } = {}): Promise<TopicRow[]> {
    if (projectIds.length === 0) return Promise.resolve([]);
    let q = this.db
      .selectFrom('topics')
      .selectAll()
      .where('project_id', 'in', projectIds)
      .where('archived_at', 'is', null);
    if (opts.query) q = q.where(containsInsensitive('name', opts.query));
    return q
      .orderBy('project_id')
      .orderBy('name')
      .limit(opts.limit ?? 5000)
      .execute();
  }

  // --- DM rooms ---

  async getDmRoom(id: string): Promise<DmRoomRow | undefined> {
    return (await GET_DM_ROOM(this.db, id)).rows[0];
  }

  getDmRoomByMembers(orgId: string, memberKey: string): Promise<DmRoomRow | undefined> {
    return this.db
      .selectFrom('dm_rooms')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('member_key', '=', memberKey)
      .executeTakeFirst();
  }

  /** Inserts the room unless one with the same members exists; returns the room that exists afterwards. */
  async createDmRoomOnce(
    row: DmRoomRow,
    members: MemberRef[],
  ): Promise<{ room: DmRoomRow; created: boolean }> {
    const res = await this.db
      .insertInto('dm_rooms')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'member_key']).doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) === 0) {
      const room = await this.getDmRoomByMembers(row.org_id, row.member_key);
      if (!room) throw new Error('DM room vanished during creation');
      return { room, created: false };
    }
    for (const m of members) await this.addMember('dm_room', row.id, m, row.created_at);
    return { room: row, created: true };
  }

  listDmRooms(orgId: string, viewer: MemberRef, limit = 1000): Promise<DmRoomRow[]> {
    return this.db
      .selectFrom('dm_rooms')
      .selectAll()
      .where('org_id', '=', orgId)
      .where(
        'id',
        'in',
        this.db
          .selectFrom('dm_room_members')
          .select('dm_room_id')
          .where('member_type', '=', viewer.type)
          .where('member_id', '=', viewer.id),
      )
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
  }
}

/** The stable key of a DM room's member set. */
export function dmMemberKey(members: MemberRef[]): string {
  return [...new Set(members.map((m) => `${m.type}:${m.id}`))].sort().join(',');
}
