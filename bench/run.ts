/** Runs every benchmark script in bench/ one after the other (each starts its own servers). */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib.js';

const only = process.argv[2];
const scripts = readdirSync(join(ROOT, 'bench'))
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run.ts'].includes(f))
  .filter((f) => !only || f.includes(only))
  .sort();
let failed = 0;
for (const f of scripts) {
  console.log(`\n### ${f}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', f)], {
    stdio: 'inherit',
    cwd: ROOT,
  });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
