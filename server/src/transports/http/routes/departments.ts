import {
  createDepartment,
  deleteDepartment,
  listDepartments,
  renameDepartment,
} from '../../../operations/orgs/departments.js';
import type { Route } from '../types.js';

const conflictResponse = { 409: { $ref: '#/components/responses/Error' } };

/** Departments of the caller's organization. */
export const departmentRoutes: Route[] = [
  { method: 'GET', path: '/api/departments', op: listDepartments, tags: ['users'] },
  {
    method: 'POST',
    path: '/api/departments',
    op: createDepartment,
    status: 201,
    responses: conflictResponse,
    tags: ['users'],
  },
  {
    method: 'PATCH',
    path: '/api/departments/{departmentId}',
    op: renameDepartment,
    responses: conflictResponse,
    tags: ['users'],
  },
  { method: 'DELETE', path: '/api/departments/{departmentId}', op: deleteDepartment, tags: ['users'] },
];
