import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { newId, nowIso } from './domain/ids.js';
import { hashPassword } from './domain/secrets.js';
import type { Storage } from './storage/storage.js';

/**
 * The encryption key for secrets stored encrypted: WORKROOM_ENCRYPTION_KEY, or a key generated on
 * first start and kept (mode 0600) in the data directory.
 */
export function loadEncryptionKey(config: Config, log: Logger): Buffer {
  if (config.encryptionKey) return Buffer.from(config.encryptionKey, 'base64');
  const file = join(config.dataDir, 'encryption.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64'), { mode: 0o600 });
  log.warn(
    { file },
    'generated a new encryption key for stored secrets; back it up or set WORKROOM_ENCRYPTION_KEY',
  );
  return key;
}

/**
 * First start on an empty database: one organization and a system_admin. Without
 * WORKROOM_ADMIN_PASSWORD a password is generated and printed once (to stdout, never to the log).
 */
export async function bootstrapIfEmpty(config: Config, storage: Storage, log: Logger): Promise<boolean> {
  if ((await storage.stores.orgs.count()) > 0) return false;
  const generated = config.admin.password === undefined;
  const password = config.admin.password ?? randomBytes(12).toString('base64url');
  const password_hash = await hashPassword(password);
  const created = await storage.transaction(async (s) => {
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
  if (!created) return false;
  log.info(
    { email: config.admin.email, organization: config.admin.orgName },
    'created the first organization and its system_admin',
  );
  if (generated) {
    process.stdout.write(
      `\n  Workroom: first start. Sign in as ${config.admin.email} with the password\n\n      ${password}\n\n  It is shown only this once. Set WORKROOM_ADMIN_PASSWORD to choose it yourself.\n\n`,
    );
  }
  return true;
}
