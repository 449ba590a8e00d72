import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { openDatabase, type DatabaseHandle } from '../storage/database.js';
import { Storage } from '../storage/storage.js';
import { CliError, EXIT } from './exit-codes.js';

/** What every subcommand is: its help text and what it does with its arguments. */
export interface Command {
  name: string;
  summary: string;
  help: string;
  run(args: string[], env: NodeJS.ProcessEnv): Promise<number>;
}

/** The environment's configuration, or a CliError (exit 2) that says what is wrong. */
export function readConfig(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError)
      throw new CliError(`${e.message}\nSee README.md, section Configuration.`, EXIT.config);
    throw e;
  }
}

/** Parses options; a mistake is a usage error naming the command's --help. */
export function parse<T extends NonNullable<ParseArgsConfig['options']>>(
  command: string,
  args: string[],
  options: T,
  positionals = 0,
) {
  try {
    const r = parseArgs({ args, options, allowPositionals: positionals > 0, strict: true });
    if (r.positionals.length > positionals)
      throw new Error(`unexpected argument ${r.positionals[positionals]}`);
    return r;
  } catch (e) {
    throw new CliError(`${(e as Error).message}\nSee: workroom ${command} --help`, EXIT.usage);
  }
}

/** The database of the configuration, opened without migrating it; `use` runs with it, then it closes. */
export async function withDatabase<T>(
  config: Config,
  use: (db: { handle: DatabaseHandle; storage: Storage }) => Promise<T>,
): Promise<T> {
  let handle: DatabaseHandle;
  try {
    handle = await openDatabase(config.database);
  } catch (e) {
    throw new CliError(`Cannot open the database: ${(e as Error).message}`, EXIT.failed);
  }
  const storage = new Storage(handle);
  try {
    return await use({ handle, storage });
  } finally {
    await storage.close();
  }
}

/** Where a database is, for messages (never the password of a URL). */
export function describeDatabase(config: Config): string {
  if (config.database.kind === 'sqlite') return `SQLite ${config.database.file}`;
  const u = new URL(config.database.url);
  u.password = u.password ? '***' : '';
  return `PostgreSQL ${u.toString()}${config.database.schema ? ` (schema ${config.database.schema})` : ''}`;
}

export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** A password from stdin (one line; `--password-stdin`), so that it never shows in `ps` or a shell history. */
export async function readPasswordFromStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
  if (line.length < 8) throw new CliError('The password must have at least 8 characters.', EXIT.usage);
  return line;
}
