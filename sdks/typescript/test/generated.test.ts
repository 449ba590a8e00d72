import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, generateApiTypes } from '../scripts/generate.js';

/** The SDK's request/response types come from docs/api/openapi.json (itself checked against the server). */
describe('generated API types', () => {
  it('src/generated/api.ts is what docs/api/openapi.json generates (run `npm run generate -w sdks/typescript`)', async () => {
    const expected = await generateApiTypes();
    expect(
      readFileSync(GENERATED_FILE, 'utf8') === expected,
      'src/generated/api.ts is stale: run `npm run openapi` then `npm run generate -w sdks/typescript`',
    ).toBe(true);
  });
});
