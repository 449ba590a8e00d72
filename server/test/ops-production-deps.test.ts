import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/ops.js';

/**
 * A production install (`npm ci --omit=dev`) has the server workspace's dependencies and nothing of the
 * devDependencies: everything `workroom start` and the other subcommands load — server/dist and
 * server/bin — must import only Node's modules and those dependencies (docs/OPERATIONS.md,
 * "Production install"). vitest's global setup built server/dist (helpers/global-setup.ts).
 */
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s*['"]([^'"]+)['"]/gm;

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => join(e.parentPath, e.name));
}

/** The package a bare specifier names: `pino`, `@scope/pkg`, `kysely/helpers` → `kysely`. */
const packageOf = (spec: string) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

describe('production install', () => {
  it('server/dist and server/bin import only Node built-ins and the server’s dependencies', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'server/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const allowed = new Set(Object.keys(pkg.dependencies));
    const builtins = new Set(builtinModules);
    const files = [...jsFiles(join(ROOT, 'server/dist')), ...jsFiles(join(ROOT, 'server/bin'))];
    expect(files.length).toBeGreaterThan(100);
    const used = new Set<string>();
    const wrong: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(SPECIFIER)) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        used.add(packageOf(spec));
        if (!allowed.has(packageOf(spec))) wrong.push(`${file.slice(ROOT.length + 1)}: ${spec}`);
      }
    }
    expect(wrong).toEqual([]);
    // The scan sees the imports it is about (a scan that found nothing would pass for nothing).
    for (const dep of ['better-sqlite3', 'kysely', 'pg', 'pino', 'zod']) expect(used).toContain(dep);
    // typescript is only resolved by `npm start`'s build step, guarded (server/bin/build-if-stale.js).
    expect(readFileSync(join(ROOT, 'server/bin/build-if-stale.js'), 'utf8')).toContain(
      "resolve('typescript/bin/tsc')",
    );
  });
});
