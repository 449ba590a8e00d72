import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import { TASK_STATUSES } from '../../domain/roles.js';
import type { TaskRow, TopicRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { actorRef, type Actor } from '../context.js';
import { loadTopic } from '../access.js';
import { noteChange } from '../audit/decision.js';
import { defineOperation } from '../operation.js';
import { isoDate, taskPriority, taskStatus, uuid } from '../schemas.js';
import { listOf, TaskView, taskView } from '../views.js';
import { write, type WriteTx } from '../write.js';

/**
 * Tasks live in topics: whoever reaches the topic (see access.ts) reaches its tasks. Creating and
 * updating emit task.created, task.status_changed and task.assigned in the same transaction.
 */

const title = z
  .string({ message: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(LIMITS.taskTitle, `must be at most ${LIMITS.taskTitle} characters`);
const taskDescription = z
  .string({ message: 'must be a string' })
  .max(LIMITS.taskDescription, `must be at most ${LIMITS.taskDescription} characters`);
const dueDate = isoDate.meta({ format: 'date', description: 'Due date, YYYY-MM-DD' });

/** A task the actor reaches (through its topic); anything else is not found. */
export async function loadTask(
  stores: Stores,
  actor: Actor,
  id: string,
): Promise<{ task: TaskRow; topic: TopicRow }> {
  const task = await stores.tasks.get(id);
  if (!task) throw notFound('Task');
  try {
    return { task, topic: await loadTopic(stores, actor, task.topic_id) };
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw notFound('Task');
    throw e;
  }
}

/** The assignee must be a user of the task's organization. */
async function checkAssignee(stores: Stores, orgId: string, userId: string): Promise<void> {
  const u = await stores.users.get(userId);
  if (!u || u.org_id !== orgId) {
    throw new AppError('not_found', `assignee_id: no user ${userId} in this organization`, {
      field: 'assignee_id',
    });
  }
}

/** The fields every task event carries: the task as it is now and who acted. */
function taskEventData<X extends object>(t: TaskRow, by: { type: 'user' | 'bot'; id: string }, extra: X) {
  return {
    task_id: t.id,
    task: taskView(t),
    topic_id: t.topic_id,
    actor_type: by.type,
    actor_id: by.id,
    ...extra,
  };
}

export const CreateTaskInput = z.strictObject({
  topic_id: uuid('topic').describe('Topic that will hold the task'),
  title: title.describe('Task title'),
  description: taskDescription.optional().describe('Details'),
  priority: taskPriority.default('medium').describe('low, medium, high or urgent'),
  assignee_id: uuid('user').optional().describe('User to assign the task to'),
  due_date: dueDate.optional(),
});

export const createTask = defineOperation({
  name: 'tasks.create',
  summary: 'Create a task in a topic you can reach (priority defaults to medium, status starts at todo)',
  input: CreateTaskInput,
  output: TaskView,
  actors: ['user', 'bot'],
  scope: 'tasks:write',
  dryRun: true,
  async run(ctx, input) {
    return write(ctx, async (tx: WriteTx) => {
      const topic = await loadTopic(tx.stores, ctx.actor, input.topic_id);
      if (input.assignee_id) await checkAssignee(tx.stores, topic.org_id, input.assignee_id);
      const by = actorRef(ctx.actor);
      const row: TaskRow = {
        id: newId(),
        org_id: topic.org_id,
        topic_id: topic.id,
        title: input.title,
        description: input.description ?? '',
        priority: input.priority,
        status: 'todo',
        assignee_id: input.assignee_id ?? null,
        due_date: input.due_date ?? null,
        created_by_type: by.type,
        created_by_id: by.id,
        created_at: tx.now,
        updated_at: tx.now,
      };
      await tx.stores.tasks.insert(row);
      tx.emit('task.created', row.org_id, taskEventData(row, by, {}));
      if (row.assignee_id) {
        tx.emit(
          'task.assigned',
          row.org_id,
          taskEventData(row, by, { assignee_id: row.assignee_id, previous_assignee_id: null }),
        );
      }
      return taskView(row);
    });
  },
});

export const UpdateTaskInput = z.strictObject({
  task_id: uuid('task').describe('Task to change'),
  status: taskStatus.optional().describe('todo, in_progress, review or done'),
  title: title.optional().describe('New title'),
  description: taskDescription.optional().describe('New details'),
  priority: taskPriority.optional().describe('low, medium, high or urgent'),
  assignee_id: uuid('user').nullable().optional().describe('New assignee; null removes the assignee'),
  due_date: dueDate.nullable().optional(),
});

export const updateTask = defineOperation({
  name: 'tasks.update',
  summary:
    'Change a task: status, title, description, priority, assignee, due date. Emits task.status_changed and task.assigned on those changes.',
  input: UpdateTaskInput,
  output: TaskView,
  actors: ['user', 'bot'],
  scope: 'tasks:write',
  dryRun: true,
  async run(ctx, input) {
    return write(ctx, async (tx) => {
      const { task } = await loadTask(tx.stores, ctx.actor, input.task_id);
      if (input.assignee_id) await checkAssignee(tx.stores, task.org_id, input.assignee_id);
      const patch: Partial<TaskRow> = {};
      if (input.status !== undefined && input.status !== task.status) patch.status = input.status;
      if (input.title !== undefined && input.title !== task.title) patch.title = input.title;
      if (input.description !== undefined && input.description !== task.description)
        patch.description = input.description;
      if (input.priority !== undefined && input.priority !== task.priority) patch.priority = input.priority;
      if (input.assignee_id !== undefined && input.assignee_id !== task.assignee_id)
        patch.assignee_id = input.assignee_id;
      if (input.due_date !== undefined && input.due_date !== task.due_date) patch.due_date = input.due_date;
      if (Object.keys(patch).length === 0) return taskView(task);

      noteChange(ctx, task as unknown as Record<string, unknown>, patch);
      await tx.stores.tasks.update(task.id, patch, tx.now);
      const updated: TaskRow = { ...task, ...patch, updated_at: tx.now };
      const by = actorRef(ctx.actor);
      if (patch.status !== undefined) {
        tx.emit(
          'task.status_changed',
          task.org_id,
          taskEventData(updated, by, { status: updated.status, previous_status: task.status }),
        );
      }
      if (patch.assignee_id !== undefined) {
        tx.emit(
          'task.assigned',
          task.org_id,
          taskEventData(updated, by, {
            assignee_id: updated.assignee_id,
            previous_assignee_id: task.assignee_id,
          }),
        );
      }
      return taskView(updated);
    });
  },
});

export const getTask = defineOperation({
  name: 'tasks.get',
  summary: 'A task in a topic you can reach',
  input: z.strictObject({ task_id: uuid('task') }),
  output: TaskView,
  actors: ['user', 'bot'],
  scope: 'tasks:read',
  async run(ctx, input) {
    return taskView((await loadTask(ctx.services.storage.stores, ctx.actor, input.task_id)).task);
  },
});

export const ListTasksInput = z.strictObject({
  topic_id: uuid('topic').describe('Topic whose tasks to list'),
  status: z
    .enum([...TASK_STATUSES, 'all'])
    .default('all')
    .describe('todo, in_progress, review, done, or all'),
  assignee_id: uuid('user').optional().describe('Only tasks assigned to this user'),
});

/** At most this many tasks per listing, newest first. */
export const TASK_LIST_MAX = 500;

export const listTasks = defineOperation({
  name: 'tasks.list',
  summary: 'Tasks of a topic you can reach, newest first, filtered by status and assignee',
  input: ListTasksInput,
  output: listOf(TaskView),
  actors: ['user', 'bot'],
  scope: 'tasks:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const topic = await loadTopic(stores, ctx.actor, input.topic_id);
    const rows = await stores.tasks.list(topic.id, {
      status: input.status === 'all' ? undefined : input.status,
      assigneeId: input.assignee_id,
      limit: TASK_LIST_MAX,
    });
    return { items: rows.map(taskView) };
  },
});
