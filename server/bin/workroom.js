#!/usr/bin/env node
// The `workroom` command (package.json "bin"): runs the built server's CLI (server/dist/cli), with no
// compile step and no devDependency. `workroom --help` lists the subcommands; docs/OPERATIONS.md.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/index.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'workroom: the server is not built (server/dist is missing).\n' +
      'Build it once in the checkout with `npm run build` (needs the devDependencies: `npm ci`), or use\n' +
      '`npm start`, which builds when needed. docs/OPERATIONS.md, "Production install".\n',
  );
  process.exit(1);
}
const { runCli } = await import(entry.href);
const code = await runCli(process.argv.slice(2), process.env);
// -1: the server runs on (`start`); it exits when it stops.
if (code >= 0) process.exitCode = code;
