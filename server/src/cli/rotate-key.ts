import { rotateEncryptionKey } from '../encryption-key.js';
import { systemClock } from '../runtime/clock.js';
import { out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { assertCurrent, schemaStatus } from './schema.js';

const HELP = `Usage: workroom rotate-key [--batch N]

Re-encrypts every stored secret (the bots' webhook secrets and ed25519 signing keys) under a new key, online,
in batches, then records the new key as the database's (docs/SCALING.md, "The encryption key"). Run it
with the new key in WORKROOM_ENCRYPTION_KEY and the current one in WORKROOM_ENCRYPTION_KEY_PREVIOUS,
once every instance runs with that same pair (each reads secrets under either key meanwhile):

  1. new key:  openssl rand -base64 32
  2. restart each instance with WORKROOM_ENCRYPTION_KEY=<new> WORKROOM_ENCRYPTION_KEY_PREVIOUS=<old>
  3. workroom rotate-key          (same two variables)
  4. later, restart without WORKROOM_ENCRYPTION_KEY_PREVIOUS

Interrupted, run it again: secrets already under the new key are left alone.

  --batch N  secrets read at a time (default 200)

Exit codes: 0 done, 1 failed, 2 the keys are not this database's (or not configured), 6 migrations
pending, 64 wrong arguments.`;

export const rotateKeyCommand: Command = {
  name: 'rotate-key',
  summary: 're-encrypt stored secrets under a new encryption key (online)',
  help: HELP,
  async run(args, env) {
    const { values } = parse('rotate-key', args, { batch: { type: 'string', default: '200' } });
    const batch = Number(values.batch);
    if (!Number.isInteger(batch) || batch < 1 || batch > 10_000)
      throw new CliError('--batch must be a whole number from 1 to 10000', EXIT.usage);
    const config = readConfig(env);
    if (!config.encryptionKey || !config.previousEncryptionKey)
      throw new CliError(
        'Set WORKROOM_ENCRYPTION_KEY to the new key and WORKROOM_ENCRYPTION_KEY_PREVIOUS to the current ' +
          'one (see workroom rotate-key --help).',
        EXIT.config,
      );
    const keys = {
      key: Buffer.from(config.encryptionKey, 'base64'),
      previous: Buffer.from(config.previousEncryptionKey, 'base64'),
    };
    return withDatabase(config, async ({ handle, storage }) => {
      assertCurrent(await schemaStatus(handle), 'rotate-key');
      const r = await rotateEncryptionKey(storage, keys, systemClock, (msg) => out(msg), batch);
      out(
        `done: ${r.rotated} secrets re-encrypted, ${r.current} already under the new key` +
          (r.unreadable ? `, ${r.unreadable} readable with neither key (left as they were)` : '') +
          '. The database now takes the new key; WORKROOM_ENCRYPTION_KEY_PREVIOUS can go at the next restart.',
      );
      return EXIT.ok;
    });
  },
};
