import { createUser, getUser, listUsers, updateUser } from '../../../operations/users/users.js';
import type { Route } from '../types.js';

/** People of an organization (departments are in departments.ts). */
export const userRoutes: Route[] = [
  { method: 'POST', path: '/api/users', op: createUser, status: 201, tags: ['users'] },
  { method: 'GET', path: '/api/users', op: listUsers, tags: ['users'] },
  { method: 'GET', path: '/api/users/{userId}', op: getUser, tags: ['users'] },
  { method: 'PATCH', path: '/api/users/{userId}', op: updateUser, tags: ['users'] },
];
