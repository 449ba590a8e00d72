import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generateLiveEvents, LIVE_EVENTS_FILE } from '../../scripts/generate-live-events.js';
import { EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../src/domain/events.js';
import { PUSHED_EVENT_TYPES } from '../src/realtime/visibility.js';

/**
 * The event types generated from the catalogue for the other consumers are committed as generated:
 *  - the web app's live events (web/src/api/live-events.ts, scripts/generate-live-events.ts, from the
 *    catalogue with openapi-typescript);
 *  - the Python SDK's webhook events (sdks/python/workroom/events.py, from docs/api/openapi.json by
 *    sdks/python/scripts/generate_types.py, standard library only), every delivered type typed.
 * A change of the catalogue without regenerating them fails here (as openapi-committed.test.ts does for
 * the OpenAPI document, which sdks/typescript's generated.test.ts follows).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PY_SCRIPT = join(root, 'sdks', 'python', 'scripts', 'generate_types.py');
const PY_FILE = join(root, 'sdks', 'python', 'workroom', 'events.py');

const camel = (t: string) =>
  t
    .split(/[^A-Za-z0-9]+/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');

describe('event types generated from the catalogue', () => {
  it('web/src/api/live-events.ts is what scripts/generate-live-events.ts writes now', async () => {
    const committed = readFileSync(LIVE_EVENTS_FILE, 'utf8');
    expect(committed, 'regenerate: npx tsx scripts/generate-live-events.ts').toBe(await generateLiveEvents());
    // One component per pushed event type of the catalogue.
    for (const t of EVENT_TYPES.filter((x) => PUSHED_EVENT_TYPES.has(x)))
      expect(committed).toContain(`'${t}': {`);
  });

  it('sdks/python/workroom/events.py is what generate_types.py writes now; every webhook event type typed', () => {
    const generated = execFileSync('python3', [PY_SCRIPT, '--stdout'], { encoding: 'utf8' });
    const committed = readFileSync(PY_FILE, 'utf8');
    expect(committed, 'regenerate: python3 sdks/python/scripts/generate_types.py').toBe(generated);
    for (const t of WEBHOOK_EVENT_TYPES) {
      expect(committed).toMatch(new RegExp(`^class ${camel(t)}Data\\(`, 'm'));
      expect(committed).toMatch(new RegExp(`^class ${camel(t)}Event\\(`, 'm'));
      expect(committed).toContain(`    event_type: Literal["${t}"]\n`);
    }
    // --check agrees (what CI may run without node).
    expect(() => execFileSync('python3', [PY_SCRIPT, '--check'], { stdio: 'pipe' })).not.toThrow();
  });
});
