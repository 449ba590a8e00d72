import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { installBuiltinsIn } from '../bots/builtins.js';
import { defineOperation } from '../operation.js';
import { write } from '../write.js';
import { isSystemAdmin } from '../access.js';
import { name } from '../schemas.js';
import { listOf } from '../views.js';

export const OrganizationView = z.object({ id: z.string(), name: z.string(), created_at: z.string() });

export const createOrganization = defineOperation({
  name: 'organizations.create',
  summary: 'Create an organization (system_admin)',
  input: z.strictObject({ name }),
  output: OrganizationView,
  actors: ['user'],
  async run(ctx, input) {
    if (!isSystemAdmin(ctx.actor))
      throw new AppError('forbidden', 'Only a system_admin creates organizations');
    // The built-in bots are installed with it, in the same transaction (docs/BUILTIN-BOTS.md).
    return write(ctx, async (tx) => {
      const org = await tx.stores.orgs.create(input.name);
      await installBuiltinsIn(tx, ctx.services.builtins, org.id);
      return org;
    });
  },
});

export const listOrganizations = defineOperation({
  name: 'organizations.list',
  summary: 'Organizations the caller can see: all for a system_admin, otherwise its own',
  input: z.strictObject({}),
  output: listOf(OrganizationView),
  actors: ['user'],
  async run(ctx) {
    const orgs = ctx.services.storage.stores.orgs;
    if (isSystemAdmin(ctx.actor)) return { items: await orgs.list() };
    const own = await orgs.get(ctx.actor.orgId);
    return { items: own ? [own] : [] };
  },
});
