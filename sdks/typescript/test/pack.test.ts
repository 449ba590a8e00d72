import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vectorFile, vectorRequest } from './vectors.js';

/** `npm pack` (its prepack builds with tsc) gives a tarball that works on its own, without dependencies. */
describe('npm pack', () => {
  const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');
  const out = mkdtempSync(join(tmpdir(), 'workroom-sdk-pack-'));
  let files: string[];
  beforeAll(() => {
    const json = execFileSync('npm', ['pack', '--json', '--pack-destination', out], {
      cwd: pkgDir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [info] = JSON.parse(json) as [{ filename: string; files: { path: string }[] }];
    files = info.files.map((f) => f.path);
    execFileSync('tar', ['-xzf', join(out, info.filename), '-C', out]);
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('holds the built ESM, its declarations and the README, and no dependencies', () => {
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts']),
    );
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md')).toEqual(
      [],
    );
    const pkg = JSON.parse(readFileSync(join(out, 'package', 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.type).toBe('module');
  });

  it('exports exactly the SDK surface, and it works from the tarball', async () => {
    const mod = (await import(pathToFileURL(join(out, 'package', 'dist', 'index.js')).href)) as Record<
      string,
      unknown
    >;
    expect(Object.keys(mod).sort()).toEqual([
      'SocketReceiver',
      'UpgradeRefused',
      'WebhookReceiver',
      'WorkroomClient',
      'WorkroomError',
      'verifySignature',
    ]);
    const verify = mod.verifySignature as (b: string, h: object, s: string, o: object) => { ok: boolean };
    const v = vectorFile.vectors[0]!;
    const { body, headers } = vectorRequest(v);
    expect(verify(body, headers, v.secret, { now: v.webhook_timestamp }).ok).toBe(true);
    expect(verify(`${body} `, headers, v.secret, { now: v.webhook_timestamp }).ok).toBe(false);
  });
});
