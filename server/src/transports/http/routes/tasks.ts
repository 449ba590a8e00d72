import { listContainers } from '../../../operations/containers/list-containers.js';
import { search } from '../../../operations/search/search.js';
import { createTask, getTask, listTasks, updateTask } from '../../../operations/tasks/tasks.js';
import type { Route } from '../types.js';

/** Tasks, search and the container listing: the REST twins of the MCP task, search and list_channels tools. */
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
  { method: 'GET', path: '/api/search', op: search, tags: ['search'] },
  { method: 'GET', path: '/api/containers', op: listContainers, tags: ['channels'] },
];
