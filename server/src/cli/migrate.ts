import { createLogger } from '../logging/logger.js';
import { Storage } from '../storage/storage.js';
import { describeDatabase, out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { lockDataDir } from './lock.js';
import { explainMigrationError, newerDatabaseError, schemaStatus } from './schema.js';

const HELP = `Usage: workroom migrate [--check]

Applies the pending database migrations (the server also does so when it starts). On SQLite it takes
the data directory's lock: stop the server first.

  --check   apply nothing; list the pending migrations and exit 6 when there are any
            (0: up to date), for a deploy pipeline

Exit codes: 0 done / up to date, 1 failed, 2 invalid configuration, 3 data directory in use,
4 database from a newer version, 6 migrations pending (--check).`;

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations (--check: only tell)',
  help: HELP,
  async run(args, env) {
    const { values } = parse('migrate', args, { check: { type: 'boolean', default: false } });
    const config = readConfig(env);
    const lock =
      !values.check && config.database.kind === 'sqlite'
        ? lockDataDir(config.dataDir, 'workroom migrate')
        : undefined;
    try {
      return await withDatabase(config, async ({ handle }) => {
        const status = await schemaStatus(handle);
        if (status.unknown.length > 0) throw newerDatabaseError(status.unknown);
        out(
          `${describeDatabase(config)}: ${status.applied.length} migration(s) applied, ${status.pending.length} pending`,
        );
        for (const m of status.pending) out(`  pending: ${m}`);
        if (values.check) return status.pending.length > 0 ? EXIT.pending : EXIT.ok;
        if (status.pending.length === 0) return EXIT.ok;
        const log = createLogger({ logLevel: 'info' });
        const applied = await new Storage(handle)
          .migrate((msg, data) => log.info(data ?? {}, msg))
          .catch((e: unknown) => {
            const explained = explainMigrationError(e);
            throw explained instanceof CliError
              ? explained
              : new CliError(
                  `Migration failed (nothing of it was kept): ${(e as Error).message}`,
                  EXIT.failed,
                );
          });
        out(`applied: ${applied.join(', ') || '(none; another process applied them)'}`);
        return EXIT.ok;
      });
    } finally {
      lock?.release();
    }
  },
};
