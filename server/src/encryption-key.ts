import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CliError, EXIT } from './cli/exit-codes.js';
import type { Config } from './config/config.js';
import { decryptSecret, encryptSecret, subkey } from './domain/secrets.js';
import type { Clock } from './runtime/clock.js';
import type { Storage } from './storage/storage.js';
import { ClusterSettingsStore, SECRET_COLUMNS, type SecretKind } from './storage/stores/cluster-settings.js';

/**
 * One encryption key for the cluster (issue 18, point 3; docs/SCALING.md, "The encryption key").
 *
 * The database keeps a verifier of the key: an HMAC of a fixed label under an HKDF subkey of it. It
 * tells whether a key is the one the database's secrets are encrypted with and reveals nothing of the
 * key (HKDF and HMAC are one-way; the key has 256 bits, so it cannot be guessed from the verifier).
 * The first instance writes it; an instance with another key, or with none on a database that has a
 * verifier, refuses to start (exit code 2, configuration) instead of running with secrets it cannot
 * read.
 */

export const VERIFIER = 'encryption_key_verifier';
export const NEXT_VERIFIER = 'encryption_key_next_verifier';

/** The keys this instance uses: `key` encrypts (and decrypts); `previous` only decrypts (rotation). */
export interface EncryptionKeys {
  key: Buffer;
  previous: Buffer[];
}

export function keyVerifier(key: Buffer): string {
  const sub = subkey(key, 'workroom encryption key verifier v1');
  return `v1:${createHmac('sha256', sub).update('workroom/encryption-key-check').digest('base64url')}`;
}

const keyFile = (config: Config) => join(config.dataDir, 'encryption.key');

/** The key the configuration names (WORKROOM_ENCRYPTION_KEY, else the data directory's file), if any. */
function configuredKey(config: Config): { key: Buffer; from: string } | undefined {
  if (config.encryptionKey)
    return { key: Buffer.from(config.encryptionKey, 'base64'), from: 'WORKROOM_ENCRYPTION_KEY' };
  const file = keyFile(config);
  if (existsSync(file))
    return { key: Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), from: `the key in ${file}` };
  return undefined;
}

const HOW_TO_FIX =
  'Every instance on one database must use the same WORKROOM_ENCRYPTION_KEY: set it to the key the ' +
  'other instances use (or the one this database was first started with). To change the key, see ' +
  '`workroom rotate-key --help` and docs/SCALING.md, "The encryption key".';

function refuse(message: string): CliError {
  return new CliError(`${message} ${HOW_TO_FIX}`, EXIT.config);
}

/**
 * The instance's keys, checked against the database's verifier (written if there is none yet). A start
 * with WORKROOM_ENCRYPTION_KEY = the new key and WORKROOM_ENCRYPTION_KEY_PREVIOUS = the database's key
 * is a rotation in progress: accepted, and the new key recorded as the one the rotation goes to.
 */
export async function establishEncryptionKeys(
  config: Config,
  storage: Storage,
  log: Logger,
  clock: Clock,
): Promise<EncryptionKeys> {
  const settings = new ClusterSettingsStore(storage.stores.db);
  const previous = config.previousEncryptionKey ? [Buffer.from(config.previousEncryptionKey, 'base64')] : [];
  const stored = await settings.get(VERIFIER);
  let configured = configuredKey(config);
  if (!configured) {
    if (stored)
      throw refuse(
        'No encryption key is configured (WORKROOM_ENCRYPTION_KEY is not set and there is no ' +
          `${keyFile(config)}), but this database's secrets are encrypted with a key: this instance will ` +
          'not generate one of its own.',
      );
    configured = { key: generateKeyFile(config, log), from: `the key in ${keyFile(config)}` };
  }
  const { key, from } = configured;
  const mine = keyVerifier(key);
  const now = clock.nowIso();
  if (!stored) {
    // The first instance on this database: its key becomes the cluster's (whoever wrote first wins).
    const winner = await settings.setIfAbsent(VERIFIER, mine, now);
    if (winner !== mine)
      throw refuse(
        `The encryption key (${from}) is not the key another instance just recorded for this database.`,
      );
    log.info('recorded the verifier of the encryption key in the database');
    return { key, previous };
  }
  if (stored === mine) {
    if (previous.length > 0 && (await settings.get(NEXT_VERIFIER)) === undefined)
      log.warn(
        'WORKROOM_ENCRYPTION_KEY_PREVIOUS is set but no key rotation is in progress: it is no longer needed',
      );
    return { key, previous };
  }
  if (previous.some((p) => keyVerifier(p) === stored)) {
    const next = await settings.setIfAbsent(NEXT_VERIFIER, mine, now);
    if (next !== mine)
      throw refuse(
        `The encryption key (${from}) is not the one the key rotation in progress goes to (another ` +
          'instance started with a different new key).',
      );
    log.warn(
      'encryption key rotation in progress: new secrets are encrypted with WORKROOM_ENCRYPTION_KEY, ' +
        'existing ones are read with either key; once every instance runs with both, run `workroom rotate-key`',
    );
    return { key, previous };
  }
  throw refuse(
    `The encryption key (${from}) is not the key this database's secrets (webhook signing secrets) are ` +
      'encrypted with.',
  );
}

/** A key generated on the first start of a single instance without WORKROOM_ENCRYPTION_KEY, kept 0600. */
function generateKeyFile(config: Config, log: Logger): Buffer {
  const file = keyFile(config);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64'), { mode: 0o600, flag: 'wx' });
  log.warn(
    { file },
    'generated a new encryption key for stored secrets; back it up or set WORKROOM_ENCRYPTION_KEY',
  );
  return key;
}

export interface RotationReport {
  /** Secrets re-encrypted under the new key. */
  rotated: number;
  /** Secrets that were under the new key already. */
  current: number;
  /** Secrets neither key decrypts (left as they are; they were unreadable before the rotation too). */
  unreadable: number;
}

/**
 * `workroom rotate-key`: every stored secret (webhook secrets, ed25519 signing keys) re-encrypted under `keys.key`, in batches, online (each
 * row is replaced only if it did not change meanwhile), then the database's verifier switched to the
 * new key. Instances running with both keys serve throughout. Resumable: a secret already under the new
 * key is left alone, so a second run finishes what an interrupted one began.
 */
export async function rotateEncryptionKey(
  storage: Storage,
  keys: { key: Buffer; previous: Buffer },
  clock: Clock,
  progress: (msg: string) => void,
  batch = 200,
): Promise<RotationReport> {
  const settings = new ClusterSettingsStore(storage.stores.db);
  const newV = keyVerifier(keys.key);
  const oldV = keyVerifier(keys.previous);
  const stored = await settings.get(VERIFIER);
  if (stored !== newV && stored !== oldV)
    throw new CliError(
      'Neither WORKROOM_ENCRYPTION_KEY nor WORKROOM_ENCRYPTION_KEY_PREVIOUS is the key of this database. ' +
        'Run rotate-key with the new key in WORKROOM_ENCRYPTION_KEY and the current one in ' +
        'WORKROOM_ENCRYPTION_KEY_PREVIOUS.',
      EXIT.config,
    );
  if (stored === oldV) {
    const next = await settings.setIfAbsent(NEXT_VERIFIER, newV, clock.nowIso());
    if (next !== newV)
      throw new CliError(
        'Another key rotation is in progress, to a different key (an instance started with another ' +
          'new key). Finish or undo that one first.',
        EXIT.config,
      );
  }
  const report: RotationReport = { rotated: 0, current: 0, unreadable: 0 };
  // Passes until one finds nothing left under the old key (an instance not yet restarted with the new
  // key may have written a secret under the old one meanwhile).
  for (let pass = 1; ; pass++) {
    let changed = 0;
    for (const kind of Object.keys(SECRET_COLUMNS) as SecretKind[]) {
      let after = '';
      for (;;) {
        const rows = await settings.secretsAfter(kind, after, batch);
        if (rows.length === 0) break;
        for (const r of rows) {
          after = r.bot_id;
          let plain: string;
          try {
            decryptSecret(r.secret_encrypted, keys.key);
            if (pass === 1) report.current++;
            continue;
          } catch {
            try {
              plain = decryptSecret(r.secret_encrypted, keys.previous);
            } catch {
              if (pass === 1) report.unreadable++;
              continue;
            }
          }
          if (
            await settings.replaceSecret(kind, r.bot_id, r.secret_encrypted, encryptSecret(plain, keys.key))
          ) {
            report.rotated++;
            changed++;
          }
        }
        progress(`pass ${pass}: ${report.rotated} re-encrypted so far (${kind}, up to bot ${after})`);
      }
    }
    if (changed === 0) break;
  }
  await storage.transaction(async (s) => {
    const st = new ClusterSettingsStore(s.db);
    await st.set(VERIFIER, newV, clock.nowIso());
    await st.delete(NEXT_VERIFIER);
  });
  return report;
}
