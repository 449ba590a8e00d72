import { createOrganization, listOrganizations } from '../../../operations/orgs/organizations.js';
import type { Route } from '../types.js';

/** Organizations (system_admin). */
export const organizationRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/organizations',
    op: createOrganization,
    status: 201,
    tags: ['organizations'],
  },
  { method: 'GET', path: '/api/organizations', op: listOrganizations, tags: ['organizations'] },
];
