import { z } from 'zod';
import { AppError, conflict, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import { isUniqueViolation } from '../../storage/database.js';
import type { DepartmentRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor } from '../context.js';
import { isOrgAdmin } from '../access.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { write } from '../write.js';

/**
 * Departments of an organization. Everyone of the organization lists them (bots: users:read);
 * org_admins (and system_admins) create, rename and delete them. Users are put in a department with
 * POST/PATCH /api/users (by name, created on first use); deleting a department leaves its users
 * without one.
 */

const departmentName = z
  .string({ message: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(LIMITS.name, `must be at most ${LIMITS.name} characters`);

export const DepartmentView = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  member_count: z.number().describe('Active users in the department'),
  created_at: z.string(),
});
type DepartmentView = z.infer<typeof DepartmentView>;

const view = (d: DepartmentRow, members: number | string): DepartmentView => ({
  id: d.id,
  org_id: d.org_id,
  name: d.name,
  member_count: Number(members),
  created_at: d.created_at,
});

function assertOrgAdmin(actor: Actor): void {
  if (actor.kind !== 'user') throw new AppError('forbidden', 'Bots cannot manage departments');
  if (!isOrgAdmin(actor, actor.orgId))
    throw new AppError('forbidden', 'Only an org_admin or system_admin manages departments');
}

/** A department of the actor's organization; any other answers 404. */
async function loadDepartment(stores: Stores, actor: Actor, id: string): Promise<DepartmentRow> {
  const d = await stores.orgs.getDepartment(id);
  if (!d || d.org_id !== actor.orgId) throw notFound('Department');
  return d;
}

const duplicate = (name: string) => conflict(`The organization already has a department named ${name}`);

export const listDepartments = defineOperation({
  name: 'departments.list',
  summary: 'Departments of your organization, by name, with their numbers of active users',
  input: z.strictObject({}),
  output: listOf(DepartmentView),
  actors: ['user', 'bot'],
  scope: 'users:read',
  async run(ctx) {
    const rows = await ctx.services.storage.stores.orgs.listDepartments(ctx.actor.orgId);
    return { items: rows.map((r) => view(r, r.member_count)) };
  },
});

export const createDepartment = defineOperation({
  name: 'departments.create',
  summary: 'Create a department in your organization (org_admin); 409 if the name is taken',
  input: z.strictObject({ name: departmentName }),
  output: DepartmentView,
  actors: ['user'],
  async run(ctx, input) {
    assertOrgAdmin(ctx.actor);
    const row: DepartmentRow = { id: newId(), org_id: ctx.actor.orgId, name: input.name, created_at: '' };
    try {
      return await write(ctx, async ({ stores, now }) => {
        if (await stores.orgs.getDepartmentByName(row.org_id, input.name)) throw duplicate(input.name);
        row.created_at = now;
        await stores.orgs.createDepartment(row);
        return view(row, 0);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw duplicate(input.name);
      throw e;
    }
  },
});

export const renameDepartment = defineOperation({
  name: 'departments.update',
  summary: 'Rename a department of your organization (org_admin); 409 if the name is taken',
  input: z.strictObject({ department_id: uuid('department'), name: departmentName }),
  output: DepartmentView,
  actors: ['user'],
  async run(ctx, input) {
    assertOrgAdmin(ctx.actor);
    try {
      return await write(ctx, async ({ stores }) => {
        const d = await loadDepartment(stores, ctx.actor, input.department_id);
        const same = await stores.orgs.getDepartmentByName(d.org_id, input.name);
        if (same && same.id !== d.id) throw duplicate(input.name);
        await stores.orgs.renameDepartment(d.id, input.name);
        const members = (await stores.orgs.listDepartments(d.org_id)).find((x) => x.id === d.id);
        return view({ ...d, name: input.name }, members?.member_count ?? 0);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw duplicate(input.name);
      throw e;
    }
  },
});

export const deleteDepartment = defineOperation({
  name: 'departments.delete',
  summary: 'Delete a department of your organization (org_admin); its users stay, without a department',
  input: z.strictObject({ department_id: uuid('department') }),
  output: z.object({ id: z.string(), deleted: z.literal(true), users_unassigned: z.number() }),
  actors: ['user'],
  async run(ctx, input) {
    assertOrgAdmin(ctx.actor);
    return write(ctx, async ({ stores, now }) => {
      const d = await loadDepartment(stores, ctx.actor, input.department_id);
      const users = await stores.orgs.deleteDepartment(d.id, now);
      return { id: d.id, deleted: true as const, users_unassigned: users };
    });
  },
});
