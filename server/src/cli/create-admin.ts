import { z } from 'zod';
import { newId, nowIso } from '../domain/ids.js';
import { hashPassword } from '../domain/secrets.js';
import { isUniqueViolation } from '../storage/database.js';
import { out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { choosePassword, showGenerated } from './passwords.js';
import { assertCurrent, schemaStatus } from './schema.js';

const HELP = `Usage: workroom create-admin --email <address> [--role system_admin|org_admin]
                             [--name <display name>] [--org <organization id or name>] [--password-stdin]

Creates an administrator directly in the database (no server needed; works while one runs): the way in
when nobody can sign in. Without --password-stdin a password is generated and printed once.

  --email           the new user's email (required)
  --role            system_admin (default) or org_admin
  --name            display name (default: Administrator)
  --org             organization id or exact name (default: the first organization)
  --password-stdin  read the password (at least 8 characters) from the first line of stdin

Exit codes: 0 created, 1 failed (e.g. the email exists), 2 invalid configuration, 6 migrations
pending (start the server or run \`workroom migrate\` first), 64 wrong arguments.`;

export const createAdminCommand: Command = {
  name: 'create-admin',
  summary: 'create an administrator (system_admin or org_admin)',
  help: HELP,
  async run(args, env) {
    const { values } = parse('create-admin', args, {
      email: { type: 'string' },
      role: { type: 'string', default: 'system_admin' },
      name: { type: 'string', default: 'Administrator' },
      org: { type: 'string' },
      'password-stdin': { type: 'boolean', default: false },
    });
    const email = z.email().safeParse(values.email?.trim());
    if (!email.success)
      throw new CliError('--email <address> is required and must be an email address', EXIT.usage);
    const role = values.role;
    if (role !== 'system_admin' && role !== 'org_admin')
      throw new CliError('--role must be system_admin or org_admin', EXIT.usage);
    const name = values.name.trim();
    if (name.length < 1 || name.length > 200)
      throw new CliError('--name must have 1 to 200 characters', EXIT.usage);
    const config = readConfig(env);
    const { password, generated } = await choosePassword(values['password-stdin']);
    return withDatabase(config, async ({ handle, storage }) => {
      assertCurrent(await schemaStatus(handle), 'create-admin');
      const orgs = await storage.stores.orgs.list();
      const org = values.org ? orgs.find((o) => o.id === values.org || o.name === values.org) : orgs[0];
      if (!org)
        throw new CliError(
          values.org
            ? `No organization "${values.org}" (organizations: ${orgs.map((o) => `${o.name} (${o.id})`).join(', ') || 'none'})`
            : 'The database has no organization yet: start the server once (it creates the first one).',
          EXIT.failed,
        );
      const lower = email.data.toLowerCase();
      if (await storage.stores.users.getByEmail(lower))
        throw new CliError(
          `A user with the email ${lower} exists already; \`workroom reset-password\` sets its password.`,
          EXIT.failed,
        );
      const password_hash = await hashPassword(password);
      const now = nowIso();
      try {
        await storage.transaction((s) =>
          s.users.create({
            id: newId(),
            org_id: org.id,
            email: lower,
            display_name: name,
            role,
            status: 'active',
            department_id: null,
            password_hash,
            created_at: now,
            updated_at: now,
          }),
        );
      } catch (e) {
        if (isUniqueViolation(e))
          throw new CliError(`A user with the email ${lower} exists already.`, EXIT.failed);
        throw e;
      }
      out(`created ${role} ${lower} in the organization ${org.name} (${org.id})`);
      if (generated) out(showGenerated(lower, password));
      return EXIT.ok;
    });
  },
};
