import {
  addProjectMember,
  archiveProject,
  archiveTopic,
  listProjectMembers,
  updateProject,
  updateTopic,
  removeProjectMember,
  createProject,
  createTopic,
  getProject,
  listProjects,
  listTopics,
} from '../../../operations/containers/projects.js';
import type { Route } from '../types.js';

/** Projects, their members and their topics. */
export const projectRoutes: Route[] = [
  { method: 'POST', path: '/api/projects', op: createProject, status: 201, tags: ['projects'] },
  { method: 'GET', path: '/api/projects', op: listProjects, tags: ['projects'] },
  { method: 'GET', path: '/api/projects/{projectId}', op: getProject, tags: ['projects'] },
  { method: 'PATCH', path: '/api/projects/{projectId}', op: updateProject, tags: ['projects'] },
  { method: 'POST', path: '/api/projects/{projectId}/archive', op: archiveProject, tags: ['projects'] },
  { method: 'PATCH', path: '/api/topics/{topicId}', op: updateTopic, tags: ['projects'] },
  { method: 'POST', path: '/api/topics/{topicId}/archive', op: archiveTopic, tags: ['projects'] },
  {
    method: 'POST',
    path: '/api/projects/{projectId}/members',
    op: addProjectMember,
    status: 201,
    tags: ['projects'],
  },
  { method: 'GET', path: '/api/projects/{projectId}/members', op: listProjectMembers, tags: ['projects'] },
  {
    method: 'DELETE',
    path: '/api/projects/{projectId}/members/users/{userId}',
    op: removeProjectMember,
    tags: ['projects'],
  },
  {
    method: 'DELETE',
    path: '/api/projects/{projectId}/members/bots/{botId}',
    op: removeProjectMember,
    tags: ['projects'],
  },
  {
    method: 'POST',
    path: '/api/projects/{projectId}/topics',
    op: createTopic,
    status: 201,
    tags: ['projects'],
  },
  { method: 'GET', path: '/api/projects/{projectId}/topics', op: listTopics, tags: ['projects'] },
];
