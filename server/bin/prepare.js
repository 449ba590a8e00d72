// `prepare` (run by `npm install` / `npm ci`): builds the web app (web/dist) when its build tools are
// installed. A production install (`npm ci --omit=dev`) has none of them: it keeps the web app built
// before (docs/OPERATIONS.md, "Production install") instead of failing the whole install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
let vite = null;
try {
  vite = createRequire(join(root, 'web/package.json')).resolve('vite/package.json');
} catch {
  vite = null;
}
if (vite) {
  const npm = process.env.npm_execpath;
  const r = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build:web'], { cwd: root, stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build:web'], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const built = existsSync(join(root, 'web/dist/index.html'));
process.stderr.write(
  built
    ? 'prepare: no web build tools (a production install): keeping the web app built before (web/dist)\n'
    : 'prepare: no web build tools (a production install) and no web/dist: the web app is not built; run\n' +
        '`npm ci && npm run build:web && npm run build` before `npm ci --omit=dev` (docs/OPERATIONS.md)\n',
);
