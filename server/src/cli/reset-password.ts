import { nowIso } from '../domain/ids.js';
import { hashPassword } from '../domain/secrets.js';
import { out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { choosePassword, showGenerated } from './passwords.js';
import { assertCurrent, schemaStatus } from './schema.js';

const HELP = `Usage: workroom reset-password <email> [--password-stdin] [--activate]

Sets a user's password directly in the database (no server needed; works while one runs) and signs the
user out everywhere (every session token is revoked). Without --password-stdin a password is generated
and printed once.

  --password-stdin  read the password (at least 8 characters) from the first line of stdin
  --activate        also reactivate the user when deactivated

Exit codes: 0 done, 1 no such user or failed, 2 invalid configuration, 6 migrations pending,
64 wrong arguments.`;

export const resetPasswordCommand: Command = {
  name: 'reset-password',
  summary: "set a user's password and sign them out everywhere",
  help: HELP,
  async run(args, env) {
    const { values, positionals } = parse(
      'reset-password',
      args,
      {
        'password-stdin': { type: 'boolean', default: false },
        activate: { type: 'boolean', default: false },
      },
      1,
    );
    const email = positionals[0]?.trim().toLowerCase();
    if (!email)
      throw new CliError("the user's email is required: workroom reset-password <email>", EXIT.usage);
    const config = readConfig(env);
    return withDatabase(config, async ({ handle, storage }) => {
      assertCurrent(await schemaStatus(handle), 'reset-password');
      const user = await storage.stores.users.getByEmail(email);
      if (!user) throw new CliError(`No user with the email ${email}.`, EXIT.failed);
      const { password, generated } = await choosePassword(values['password-stdin']);
      const password_hash = await hashPassword(password);
      const now = nowIso();
      await storage.transaction(async (s) => {
        await s.users.update(
          user.id,
          { password_hash, ...(values.activate && { status: 'active' as const }) },
          now,
        );
        await s.users.revokeAllTokens(user.id, now);
      });
      out(`password set for ${email} (${user.role}); its sessions were revoked`);
      if (user.status !== 'active' && !values.activate)
        out(`note: the user is ${user.status}; --activate reactivates it`);
      if (generated) out(showGenerated(email, password));
      return EXIT.ok;
    });
  },
};
