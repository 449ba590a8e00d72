import type { TaskRow } from '../schema.js';
import type { Executor } from './executor.js';
import { containsInsensitive } from './sql-helpers.js';

export class TaskStore {
  constructor(private readonly db: Executor) {}

  async insert(row: TaskRow): Promise<void> {
    await this.db.insertInto('tasks').values(row).execute();
  }

  get(id: string): Promise<TaskRow | undefined> {
    return this.db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async update(
    id: string,
    patch: Partial<
      Pick<TaskRow, 'title' | 'description' | 'priority' | 'status' | 'assignee_id' | 'due_date'>
    >,
    now: string,
  ): Promise<void> {
    await this.db
      .updateTable('tasks')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  list(
    topicId: string,
    f: { status?: string | undefined; assigneeId?: string | undefined; limit: number },
  ): Promise<TaskRow[]> {
    let q = this.db.selectFrom('tasks').selectAll().where('topic_id', '=', topicId);
    if (f.status) q = q.where('status', '=', f.status);
    if (f.assigneeId) q = q.where('assignee_id', '=', f.assigneeId);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  }

  search(topicIds: string[], query: string, limit: number): Promise<TaskRow[]> {
    if (topicIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('tasks')
      .selectAll()
      .where('topic_id', 'in', topicIds)
      .where((eb) => eb.or([containsInsensitive('title', query), containsInsensitive('description', query)]))
      .orderBy('updated_at', 'desc')
      .limit(limit)
      .execute();
  }
}
