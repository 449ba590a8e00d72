import { createTask, getTask, listTasks, updateTask } from '../../../operations/tasks/tasks.js';
import type { Route } from '../types.js';

/** Tasks of a topic: the REST twins of the MCP task tools. */
export const taskRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/topics/{topicId}/tasks',
    op: createTask,
    status: 201,
    idempotent: true,
    tags: ['tasks'],
  },
  { method: 'GET', path: '/api/topics/{topicId}/tasks', op: listTasks, tags: ['tasks'] },
  { method: 'GET', path: '/api/tasks/{taskId}', op: getTask, tags: ['tasks'] },
  { method: 'PATCH', path: '/api/tasks/{taskId}', op: updateTask, tags: ['tasks'] },
];
