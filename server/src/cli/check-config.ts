import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describeDatabase, out, parse, readConfig, withDatabase, type Command } from './common.js';
import { EXIT } from './exit-codes.js';
import { schemaStatus, serverVersion } from './schema.js';

const HELP = `Usage: workroom check-config [--offline]

Reads the configuration from the environment as the server would, and checks what a start needs: the
data directory writable, the database reachable, its migrations, the encryption key. Changes nothing
(on SQLite, an absent database file is created empty).

  --offline   check the variables only, not the data directory or the database

Exit codes: 0 fine (warnings are printed), 1 a check failed, 2 invalid configuration.`;

export const checkConfigCommand: Command = {
  name: 'check-config',
  summary: 'validate the configuration and reach the database',
  help: HELP,
  async run(args, env) {
    const { values } = parse('check-config', args, { offline: { type: 'boolean', default: false } });
    const config = readConfig(env);
    out(`Workroom ${serverVersion()}: the configuration is valid.`);
    out(`  listen        ${config.host}:${config.port}  (public URL ${config.publicUrl})`);
    out(`  data dir      ${resolve(config.dataDir)}`);
    out(`  database      ${describeDatabase(config)}`);
    out(`  max upload    ${config.maxUploadBytes} bytes (a reverse proxy's body limit must allow it)`);
    out(`  trust proxy   ${config.http.trustProxy ? 'yes: client address from X-Forwarded-For' : 'no'}`);
    const keyFile = join(config.dataDir, 'encryption.key');
    const key = config.encryptionKey
      ? 'WORKROOM_ENCRYPTION_KEY'
      : existsSync(keyFile)
        ? keyFile
        : 'none yet (generated on first start into the data directory)';
    out(`  encryption    ${key}`);
    if (values.offline) return EXIT.ok;
    let failed = false;
    try {
      mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
      accessSync(config.dataDir, constants.W_OK);
      out(`ok    the data directory is writable`);
    } catch (e) {
      out(`FAIL  the data directory: ${(e as Error).message}`);
      return EXIT.failed;
    }
    await withDatabase(config, async ({ handle, storage }) => {
      if (!(await storage.ping())) {
        out('FAIL  the database does not answer');
        failed = true;
        return;
      }
      out('ok    the database answers');
      const s = await schemaStatus(handle);
      if (s.unknown.length > 0) {
        out(`FAIL  the database was migrated by a newer version (${s.unknown.join(', ')})`);
        failed = true;
      } else if (s.pending.length > 0)
        out(
          `note  ${s.pending.length} migration(s) pending: applied by the next start or \`workroom migrate\``,
        );
      else out(`ok    the schema is up to date (${s.applied[s.applied.length - 1] ?? 'empty'})`);
      const hasData =
        s.unknown.length === 0 && s.pending.length === 0 && (await storage.stores.orgs.count()) > 0;
      if (hasData && !config.encryptionKey && !existsSync(keyFile)) {
        out(
          'WARN  the database has data but no encryption key is found: stored secrets (webhook secrets) ' +
            'cannot be read. Set WORKROOM_ENCRYPTION_KEY or restore encryption.key.',
        );
      }
    });
    return failed ? EXIT.failed : EXIT.ok;
  },
};
