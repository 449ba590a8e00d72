import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../../..');

/**
 * Builds server/dist when it is missing or older than the sources (server/bin/build-if-stale.js, as
 * `npm start` does; CI built it already). The server processes the tests start run the build
 * (helpers/server-proc.ts, `serverMain`), and the process tests run the `workroom` command on it.
 */
export function ensureBuilt(): void {
  const r = spawnSync(process.execPath, [join(ROOT, 'server/bin/build-if-stale.js')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`build failed: ${r.stdout}${r.stderr}`);
}

/** vitest's global setup: the build once per run, before any test file starts. */
export default function setup(): void {
  ensureBuilt();
}
