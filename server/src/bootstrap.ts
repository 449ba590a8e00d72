import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { newId, nowIso } from './domain/ids.js';
import { hashPassword, type PasswordCost } from './domain/secrets.js';
import type { Storage } from './storage/storage.js';

/** What a first start has to tell the operator once the server listens (app.ts calls it after binding). */
export interface FirstStart {
  announce(): void;
}

/**
 * First start on an empty database: one organization and a system_admin. Without
 * WORKROOM_ADMIN_PASSWORD a password is generated and printed once (to stdout, never to the log), by
 * `announce()`, once the port is bound: a start that fails before serving has shown no password that
 * nobody could use. On a database that has its organization already, WORKROOM_ADMIN_* are ignored,
 * and a warning says so when they were set.
 */
export async function bootstrapIfEmpty(
  config: Config,
  storage: Storage,
  log: Logger,
  passwordCost: PasswordCost,
): Promise<FirstStart | undefined> {
  if ((await storage.stores.orgs.count()) > 0) {
    warnAdminIgnored(config, log);
    return undefined;
  }
  const generated = config.admin.password === undefined;
  const password = config.admin.password ?? randomBytes(12).toString('base64url');
  const password_hash = await hashPassword(password, passwordCost);
  // Instances starting together on an empty database: one sets up, the others find it done.
  const created = await storage.exclusiveTransaction('first-start', async (s) => {
    if ((await s.orgs.count()) > 0) return false; // another instance got there first
    const org = await s.orgs.create(config.admin.orgName);
    const now = nowIso();
    await s.users.create({
      id: newId(),
      org_id: org.id,
      email: config.admin.email.toLowerCase(),
      display_name: 'Administrator',
      role: 'system_admin',
      status: 'active',
      department_id: null,
      password_hash,
      created_at: now,
      updated_at: now,
    });
    return true;
  });
  if (!created) return undefined;
  log.info(
    { email: config.admin.email, organization: config.admin.orgName },
    'created the first organization and its system_admin',
  );
  return {
    announce() {
      if (!generated) return;
      process.stdout.write(
        `\n  Workroom: first start. Sign in as ${config.admin.email} with the password\n\n      ${password}\n\n  It is shown only this once. Set WORKROOM_ADMIN_PASSWORD to choose it yourself.\n\n`,
      );
    },
  };
}

/** The defaults of config.ts: a value other than these was set by the operator. */
const ADMIN_DEFAULTS = { email: 'admin@workroom.local', orgName: 'Workroom' };

function warnAdminIgnored(config: Config, log: Logger): void {
  const set = [
    config.admin.email !== ADMIN_DEFAULTS.email && 'WORKROOM_ADMIN_EMAIL',
    config.admin.password !== undefined && 'WORKROOM_ADMIN_PASSWORD',
    config.admin.orgName !== ADMIN_DEFAULTS.orgName && 'WORKROOM_ORG_NAME',
  ].filter((x): x is string => typeof x === 'string');
  if (set.length === 0) return;
  log.warn(
    { ignored: set },
    `${set.join(', ')} ignored: they only create the first organization and administrator on an empty ` +
      'database, and this one has its organization already. To add an administrator or set a password: ' +
      '`workroom create-admin`, `workroom reset-password` (docs/OPERATIONS.md)',
  );
}
