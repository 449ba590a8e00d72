import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatOpenApi, OPENAPI_FILE, OPENAPI_PUBLIC_URL } from '../../scripts/export-openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * docs/api/openapi.json is the contract the SDKs are generated from; it must be exactly what the server
 * serves, so a route or schema change without `npm run openapi` fails here (and in CI).
 */
describe('committed OpenAPI document', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_PUBLIC_URL: OPENAPI_PUBLIC_URL });
  });
  afterAll(async () => {
    await srv.close();
  });

  it('equals the served /api/openapi.json (run `npm run openapi` to update it)', async () => {
    const res = await fetch(`${srv.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    const served = await formatOpenApi(await res.json());
    const committed = readFileSync(OPENAPI_FILE, 'utf8');
    // Text equality (same formatter), so key order counts too: the generated SDK types follow it.
    expect(committed, 'docs/api/openapi.json is out of date: run `npm run openapi` and commit it').toBe(
      served,
    );
  });

  it('has a unique operationId on every operation', () => {
    const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
