import { defineConfig } from 'vitest/config';
import SlowFirst from './test/sequencer.js';

// Browser tests: a real server in-process serving the built app (web/dist), driven in Debian's
// Chromium by playwright-core. `npm run test:browser` builds the app first.
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['web/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two files at a time (each file starts its own server and browser): the stand-up file, which
    // mostly waits for clock times, starts first beside the performance file (test/sequencer.ts);
    // the others follow, two at a time.
    maxWorkers: 2,
    sequence: { sequencer: SlowFirst },
    reporters: ['default'],
  },
});
