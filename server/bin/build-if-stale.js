// Builds the server (tsc → server/dist) only when server/dist is missing or older than its sources: what
// `npm start` does before starting (start.js), and what the process tests do before running the build.
// Run directly: `node server/bin/build-if-stale.js`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const server = fileURLToPath(new URL('..', import.meta.url));
const root = join(server, '..');
const built = join(server, 'dist/main.js');

/** The newest modification time among the server's sources and the compiler settings. */
function newestSource() {
  let newest = 0;
  for (const f of ['tsconfig.json', 'server/tsconfig.build.json'])
    newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  for (const e of readdirSync(join(server, 'src'), { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.ts'))
      newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/** Why the build must be made ('missing', 'older than its sources'), or null when it is current. */
export function staleness() {
  if (!existsSync(built)) return 'missing';
  // tsc writes every output file on each build, after reading all the sources.
  return newestSource() > statSync(built).mtimeMs ? 'older than its sources' : null;
}

/** Builds when needed; exits the process when it cannot (no TypeScript and no build at all, or tsc failed). */
export function buildIfStale(who = 'workroom') {
  const stale = staleness();
  if (!stale) return;
  let tsc = null;
  try {
    tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    tsc = null;
  }
  if (!tsc) {
    if (stale === 'missing') {
      process.stderr.write(
        `${who}: the server is not built and TypeScript is not installed (a production install?).\n` +
          'Build where the devDependencies are (`npm ci && npm run build`), then `npm ci --omit=dev`\n' +
          '(docs/OPERATIONS.md, "Production install").\n',
      );
      process.exit(1);
    }
    process.stderr.write(
      `${who}: server/dist is older than its sources and TypeScript is not installed: running it as it is\n`,
    );
    return;
  }
  process.stderr.write(`${who}: the build is ${stale}; building the server (tsc)…\n`);
  // --noCheck: emit only (type errors are the typecheck's business, not a start's); much faster.
  const r = spawnSync(process.execPath, [tsc, '-p', join(server, 'tsconfig.build.json'), '--noCheck'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) buildIfStale('build');
