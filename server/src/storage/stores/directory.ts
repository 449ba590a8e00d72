import { sql } from 'kysely';
import type { BotRow, ChannelRow, ProjectRow, TagRow, TaskRow } from '../schema.js';
import type { Executor } from './executor.js';
import { containsInsensitive } from './sql-helpers.js';

/** 1 when the member (`idColumn`, a trusted column name) is in the channel, else 0 (no channel: 0). */
const inChannel = (channelId: string | null, type: 'user' | 'bot', idColumn: string) =>
  sql<number>`case when exists (select 1 from channel_members cm where cm.channel_id = ${channelId} and cm.member_type = ${type} and cm.member_id = ${sql.ref(idColumn)}) then 1 else 0 end`;

export interface MentionUser {
  id: string;
  display_name: string;
  email: string;
  role: string;
  department: string | null;
  in_channel: boolean;
}

export type MentionBot = Pick<BotRow, 'id' | 'name' | 'type' | 'description'> & { in_channel: boolean };

export type TaskWithPlace = TaskRow & { topic_name: string; project_id: string; project_name: string };

/**
 * Look-ups across aggregates for mentions and hashtags: who and what matches a typed prefix, and the
 * counts shown on preview cards.
 */
export class DirectoryStore {
  constructor(private readonly db: Executor) {}

  /**
   * Active users of an organization whose name or email contains `q`; with a channel, its members
   * come first (`in_channel`).
   */
  async searchUsers(
    orgId: string,
    q: string,
    channelId: string | null,
    limit: number,
  ): Promise<MentionUser[]> {
    const rows = await this.db
      .selectFrom('users')
      .leftJoin('departments', 'departments.id', 'users.department_id')
      .select([
        'users.id',
        'users.display_name',
        'users.email',
        'users.role',
        'departments.name as department',
        inChannel(channelId, 'user', 'users.id').as('in_channel'),
      ])
      .where('users.org_id', '=', orgId)
      .where('users.status', '=', 'active')
      .$if(q !== '', (qb) =>
        qb.where((eb) =>
          eb.or([containsInsensitive('users.display_name', q), containsInsensitive('users.email', q)]),
        ),
      )
      .orderBy('in_channel', 'desc')
      .orderBy(sql`lower(users.display_name)`)
      .orderBy('users.id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, in_channel: Number(r.in_channel) === 1 }));
  }

  /** Active bots usable in an organization (its own and platform bots) whose name contains `q`. */
  async searchBots(orgId: string, q: string, channelId: string | null, limit: number): Promise<MentionBot[]> {
    const rows = await this.db
      .selectFrom('bots')
      .select([
        'bots.id',
        'bots.name',
        'bots.type',
        'bots.description',
        inChannel(channelId, 'bot', 'bots.id').as('in_channel'),
      ])
      .where('bots.deleted_at', 'is', null)
      .where('bots.status', '=', 'active')
      .where((eb) =>
        eb.or([
          eb('bots.org_id', '=', orgId),
          eb.and([eb('bots.type', '=', 'platform'), eb('bots.builtin', 'is', null)]),
        ]),
      )
      .$if(q !== '', (qb) => qb.where(containsInsensitive('bots.name', q)))
      .orderBy('in_channel', 'desc')
      .orderBy(sql`lower(bots.name)`)
      .orderBy('bots.id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, in_channel: Number(r.in_channel) === 1 }));
  }

  /** Departments of an organization whose name contains `q`, with their active user counts. */
  searchDepartments(orgId: string, q: string, limit: number) {
    return this.db
      .selectFrom('departments')
      .select([
        'departments.id',
        'departments.name',
        sql<number>`(select count(*) from users u where u.department_id = departments.id and u.status = 'active')`.as(
          'member_count',
        ),
      ])
      .where('departments.org_id', '=', orgId)
      .$if(q !== '', (qb) => qb.where(containsInsensitive('departments.name', q)))
      .orderBy(sql`lower(departments.name)`)
      .limit(limit)
      .execute();
  }

  searchTags(orgId: string, q: string, limit: number): Promise<TagRow[]> {
    return this.db
      .selectFrom('tags')
      .selectAll()
      .where('org_id', '=', orgId)
      .$if(q !== '', (qb) => qb.where(containsInsensitive('name', q)))
      .orderBy(sql`lower(name)`)
      .limit(limit)
      .execute();
  }

  async insertTag(row: TagRow): Promise<void> {
    await this.db
      .insertInto('tags')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'name']).doNothing())
      .execute();
  }

  /** Tasks whose title contains `q`, in the given topics, with where they live. */
  searchTasks(topicIds: string[], q: string, limit: number): Promise<TaskWithPlace[]> {
    if (topicIds.length === 0) return Promise.resolve([]);
    return this.tasksWithPlace()
      .where('tasks.topic_id', 'in', topicIds)
      .$if(q !== '', (qb) => qb.where(containsInsensitive('tasks.title', q)))
      .orderBy('tasks.updated_at', 'desc')
      .orderBy('tasks.id')
      .limit(limit)
      .execute();
  }

  getTaskWithPlace(id: string): Promise<TaskWithPlace | undefined> {
    return this.tasksWithPlace().where('tasks.id', '=', id).executeTakeFirst();
  }

  private tasksWithPlace() {
    return this.db
      .selectFrom('tasks')
      .innerJoin('topics', 'topics.id', 'tasks.topic_id')
      .innerJoin('projects', 'projects.id', 'topics.project_id')
      .selectAll('tasks')
      .select(['topics.name as topic_name', 'projects.id as project_id', 'projects.name as project_name']);
  }

  /** Counts for a channel's preview card. */
  async channelCounts(channel: ChannelRow): Promise<{ member_count: number; message_count: number }> {
    const r = await this.db
      .selectNoFrom([
        sql<number>`(select count(*) from channel_members where channel_id = ${channel.id})`.as(
          'member_count',
        ),
        sql<number>`(select count(*) from messages where channel_id = ${channel.id} and deleted_at is null)`.as(
          'message_count',
        ),
      ])
      .executeTakeFirstOrThrow();
    return { member_count: Number(r.member_count), message_count: Number(r.message_count) };
  }

  /** Counts for a project's preview card. */
  async projectCounts(
    project: ProjectRow,
  ): Promise<{ member_count: number; topic_count: number; task_count: number; open_task_count: number }> {
    const r = await this.db
      .selectNoFrom([
        sql<number>`(select count(*) from project_members where project_id = ${project.id})`.as(
          'member_count',
        ),
        sql<number>`(select count(*) from topics where project_id = ${project.id})`.as('topic_count'),
        sql<number>`(select count(*) from tasks t join topics tp on tp.id = t.topic_id where tp.project_id = ${project.id})`.as(
          'task_count',
        ),
        sql<number>`(select count(*) from tasks t join topics tp on tp.id = t.topic_id where tp.project_id = ${project.id} and t.status <> 'done')`.as(
          'open_task_count',
        ),
      ])
      .executeTakeFirstOrThrow();
    return {
      member_count: Number(r.member_count),
      topic_count: Number(r.topic_count),
      task_count: Number(r.task_count),
      open_task_count: Number(r.open_task_count),
    };
  }
}
