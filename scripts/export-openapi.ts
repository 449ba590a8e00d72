/**
 * Writes docs/api/openapi.json, the committed API contract, from what the server really serves:
 * starts the app in-process on a throw-away SQLite directory with a fixed public URL (so the document
 * is the same on every machine), fetches GET /api/openapi.json and formats it with prettier.
 * `npm run openapi`; server/test/openapi-committed.test.ts fails when the two differ.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';
import { startApp } from '../server/src/app.js';
import { loadConfig } from '../server/src/config/config.js';

/** The public URL the committed document names; the test serves with the same one. */
export const OPENAPI_PUBLIC_URL = 'http://localhost:3000';
export const OPENAPI_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'docs',
  'api',
  'openapi.json',
);

/** The served document, formatted as it is committed. */
export async function formatOpenApi(doc: unknown): Promise<string> {
  return format(JSON.stringify(doc), { parser: 'json', printWidth: 110 });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-openapi-'));
  try {
    const app = await startApp(
      loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        WORKROOM_DATA_DIR: dataDir,
        WORKROOM_PUBLIC_URL: OPENAPI_PUBLIC_URL,
        WORKROOM_ADMIN_EMAIL: 'openapi@export.local',
        WORKROOM_ADMIN_PASSWORD: 'openapi-export-only',
        WORKROOM_LOG_LEVEL: 'silent',
      }),
    );
    try {
      const res = await fetch(`${app.url}/api/openapi.json`);
      if (res.status !== 200) throw new Error(`GET /api/openapi.json answered ${res.status}`);
      writeFileSync(OPENAPI_FILE, await formatOpenApi(await res.json()));
      process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
