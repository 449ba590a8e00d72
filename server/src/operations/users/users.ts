import { z } from 'zod';
import { AppError, conflict, invalid, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import type { Role } from '../../domain/roles.js';
import { USER_STATUSES } from '../../domain/roles.js';
import { hashPassword, verifyPassword } from '../../domain/secrets.js';
import { isUniqueViolation } from '../../storage/database.js';
import type { UserWithDepartment } from '../../storage/stores/users.js';
import type { Actor, OpContext } from '../context.js';
import { inOrg, isSystemAdmin } from '../access.js';
import { defineOperation } from '../operation.js';
import { limit, name, offset, role, uuid } from '../schemas.js';
import { listOf, UserView, userView } from '../views.js';
import { write } from '../write.js';

const password = z.string().min(8, 'must have at least 8 characters').max(1024);
const department = z.string().trim().min(1).max(200);

/** Which roles an actor may give. Nobody but a system_admin creates system_admins. */
function assertMayManage(actor: Actor, orgId: string, targetRole: Role, departmentId: string | null): void {
  if (actor.kind !== 'user') throw new AppError('forbidden', 'Bots cannot manage users');
  if (isSystemAdmin(actor)) return;
  if (targetRole === 'system_admin')
    throw new AppError('forbidden', 'Only a system_admin can grant system_admin');
  if (actor.role === 'org_admin' && actor.orgId === orgId) return;
  if (actor.role === 'dept_admin' && actor.orgId === orgId) {
    if (targetRole === 'org_admin') throw new AppError('forbidden', 'A dept_admin cannot grant org_admin');
    if (actor.departmentId === null || departmentId !== actor.departmentId) {
      throw new AppError('forbidden', 'A dept_admin manages users of its own department only');
    }
    return;
  }
  throw new AppError('forbidden', 'Only administrators manage users');
}

export const createUser = defineOperation({
  name: 'users.create',
  summary:
    'Create a user (org_admin in its organization, dept_admin in its department, system_admin anywhere)',
  input: z.strictObject({
    email: z.email('must be an email address').max(320),
    display_name: name,
    password,
    role: role.default('member'),
    department: department.optional(),
    organization_id: uuid('organization').optional(),
  }),
  output: UserView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor, services } = ctx;
    const orgId = input.organization_id ?? actor.orgId;
    if (orgId !== actor.orgId && !isSystemAdmin(actor)) throw notFound('Organization');
    const org = await services.storage.stores.orgs.get(orgId);
    if (!org) throw notFound('Organization');
    // Everything that can refuse the call is checked before the password is hashed (scrypt costs
    // ~16 MiB and tens of ms of the thread pool): a caller who may not create this user costs nothing.
    // The department as it is now (a name that does not exist yet would be a new one, no dept_admin's);
    // the transaction checks again with the department it settles on.
    const existingDepartment = input.department
      ? ((await services.storage.stores.orgs.getDepartmentByName(orgId, input.department))?.id ?? null)
      : actor.kind === 'user' && actor.role === 'dept_admin'
        ? actor.departmentId
        : null;
    assertMayManage(actor, orgId, input.role, existingDepartment);
    if (await services.storage.stores.users.getByEmail(input.email))
      throw conflict(`A user with the email ${input.email} already exists`);
    const password_hash = await hashPassword(input.password, services.passwordCost);
    try {
      return await write(ctx, async ({ stores, now }) => {
        let departmentId: string | null = null;
        if (input.department)
          departmentId = (await stores.orgs.findOrCreateDepartment(orgId, input.department)).id;
        else if (actor.kind === 'user' && actor.role === 'dept_admin') departmentId = actor.departmentId;
        assertMayManage(actor, orgId, input.role, departmentId);
        const id = newId();
        await stores.users.create({
          id,
          org_id: orgId,
          email: input.email.toLowerCase(),
          display_name: input.display_name,
          role: input.role,
          status: 'active',
          department_id: departmentId,
          password_hash,
          created_at: now,
          updated_at: now,
        });
        return userView((await stores.users.get(id))!);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict(`A user with the email ${input.email} already exists`);
      throw e;
    }
  },
});

/** Users of other organizations look like they do not exist. */
async function visibleUser(ctx: OpContext, u: UserWithDepartment | undefined): Promise<UserWithDepartment> {
  if (!u || !inOrg(ctx.actor, u.org_id)) throw notFound('User');
  return u;
}

export const getUser = defineOperation({
  name: 'users.get',
  summary: 'Look up a user of your organization by id or email',
  input: z
    .strictObject({
      user_id: uuid('user').optional(),
      email: z.email('must be an email address').optional(),
    })
    .refine((v) => v.user_id !== undefined || v.email !== undefined, {
      message: 'at least one of user_id and email must be given',
      path: ['user_id'],
    }),
  output: UserView,
  actors: ['user', 'bot'],
  scope: 'users:read',
  async run(ctx, input) {
    const users = ctx.services.storage.stores.users;
    const u = input.user_id ? await users.get(input.user_id) : await users.getByEmail(input.email!);
    if (u && input.user_id && input.email && u.email !== input.email.toLowerCase()) throw notFound('User');
    return userView(await visibleUser(ctx, u));
  },
});

export const listUsers = defineOperation({
  name: 'users.list',
  summary: 'List users of your organization, filtered by department (partial match) and role',
  input: z.strictObject({
    department: z.string().max(200).optional(),
    role: role.optional(),
    q: z.string().max(200).optional(),
    limit: limit(LIMITS.listUsers.default, LIMITS.listUsers.max),
    offset,
  }),
  output: listOf(UserView),
  actors: ['user', 'bot'],
  scope: 'users:read',
  async run(ctx, input) {
    const rows = await ctx.services.storage.stores.users.list({
      orgId: ctx.actor.orgId,
      department: input.department,
      role: input.role,
      query: input.q,
      limit: input.limit,
      offset: input.offset,
    });
    return { items: rows.map(userView) };
  },
});

export const updateUser = defineOperation({
  name: 'users.update',
  summary:
    'Change a user: your own display name and password, or (as an administrator) role, department, status',
  input: z.strictObject({
    user_id: uuid('user'),
    display_name: name.optional(),
    password: password.optional(),
    current_password: z
      .string()
      .max(1024)
      .optional()
      .describe(
        'Required to change your own password: the one you have now (not for an admin resetting another user)',
      ),
    role: role.optional(),
    department: department.nullable().optional(),
    status: z.enum(USER_STATUSES).optional(),
  }),
  output: UserView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor, services } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Bots cannot manage users');
    const target = await visibleUser(ctx, await services.storage.stores.users.get(input.user_id));
    const self = target.id === actor.userId;
    const adminChange =
      input.role !== undefined || input.department !== undefined || input.status !== undefined;
    if (!self || adminChange) {
      assertMayManage(actor, target.org_id, input.role ?? (target.role as Role), target.department_id);
      if (target.role === 'system_admin' && !isSystemAdmin(actor))
        throw new AppError('forbidden', 'Only a system_admin changes a system_admin');
    }
    // One's own password is changed with the current one (a stolen session alone cannot take the
    // account over); an administrator resetting someone else's does not know theirs.
    if (self && input.password !== undefined) {
      if (input.current_password === undefined)
        throw invalid('current_password', 'is required to change your own password');
      if (!(await verifyPassword(input.current_password, target.password_hash)))
        throw new AppError('forbidden', 'The current password is not correct');
    }
    const password_hash = input.password
      ? await hashPassword(input.password, services.passwordCost)
      : undefined;
    return write(ctx, async ({ stores, now }) => {
      let department_id: string | null | undefined;
      if (input.department === null) department_id = null;
      else if (input.department)
        department_id = (await stores.orgs.findOrCreateDepartment(target.org_id, input.department)).id;
      // The department the user moves to must be the caller's to manage too (a dept_admin would otherwise
      // move its users anywhere, creating departments by name); a refusal rolls the creation back.
      if (department_id !== undefined)
        assertMayManage(actor, target.org_id, input.role ?? (target.role as Role), department_id);
      await stores.users.update(
        target.id,
        {
          ...(input.display_name !== undefined && { display_name: input.display_name }),
          ...(input.role !== undefined && { role: input.role }),
          ...(input.status !== undefined && { status: input.status }),
          ...(department_id !== undefined && { department_id }),
          ...(password_hash !== undefined && { password_hash }),
        },
        now,
      );
      if (input.status === 'deactivated' || password_hash) await stores.users.revokeAllTokens(target.id, now);
      return userView((await stores.users.get(target.id))!);
    });
  },
});
