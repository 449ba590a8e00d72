import { EXIT, CliError } from './exit-codes.js';
import type { Command } from './common.js';
import { START_HELP } from './start.js';
import { HARNESS_HELP } from './harness.js';
import { migrateCommand } from './migrate.js';
import { backupCommand } from './backup.js';
import { restoreCommand } from './restore.js';
import { createAdminCommand } from './create-admin.js';
import { resetPasswordCommand } from './reset-password.js';
import { checkConfigCommand } from './check-config.js';
import { moveFilesCommand } from './move-files.js';
import { rotateKeyCommand } from './rotate-key.js';

/**
 * The `workroom` command (server/bin/workroom.js → here): one file per subcommand in this folder, each
 * with its --help; expected failures print one sentence and exit with a code of exit-codes.ts.
 */
const startCommand: Command = {
  name: 'start',
  summary: 'run the server (built, no compile step) until SIGTERM/SIGINT',
  help: START_HELP,
  async run(args) {
    if (args.length > 0)
      throw new CliError(`unexpected argument ${args[0]}\nSee: workroom start --help`, EXIT.usage);
    const { startServer } = await import('./start.js');
    await startServer(process.env);
    return -1; // the server runs on; the process exits when it stops
  },
};

/** A throwaway server for a bot's tests (harness.ts): not for production. */
const harnessCommand: Command = {
  name: 'harness',
  summary: 'FOR TESTS: a throwaway server on a temporary SQLite, its test clock moved over stdin',
  help: HARNESS_HELP,
  async run(args, env) {
    if (args.length > 0)
      throw new CliError(`unexpected argument ${args[0]}\nSee: workroom harness --help`, EXIT.usage);
    const { runHarness } = await import('./harness.js');
    await runHarness(env);
    return -1; // runs until stdin closes
  },
};

const COMMANDS: Command[] = [
  startCommand,
  migrateCommand,
  backupCommand,
  restoreCommand,
  createAdminCommand,
  resetPasswordCommand,
  checkConfigCommand,
  moveFilesCommand,
  rotateKeyCommand,
  harnessCommand,
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: workroom <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Configuration comes from the environment (README.md, "Configuration"); from a file with',
    '  node --env-file=/etc/workroom.env server/bin/workroom.js <command>',
    '`workroom <command> --help` tells more. docs/OPERATIONS.md: install, backups, upgrades.',
  ].join('\n');
}

/** Runs the command line; returns the exit code, or -1 when the server runs on (`start`). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    const { serverVersion } = await import('./schema.js');
    process.stdout.write(`${serverVersion()}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`workroom: unknown command "${name}"\n\n${usage()}\n`);
    return EXIT.usage;
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${command.help}\n`);
    return EXIT.ok;
  }
  try {
    return await command.run(args, env);
  } catch (e) {
    if (e instanceof CliError) {
      process.stderr.write(`workroom ${name}: ${e.message}\n`);
      return e.code;
    }
    process.stderr.write(
      `workroom ${name} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    return EXIT.failed;
  }
}
