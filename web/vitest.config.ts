import { defineConfig } from 'vitest/config';

// Browser tests: a real server in-process serving the built app (web/dist), driven in Debian's
// Chromium by playwright-core. `npm run test:browser` builds the app first.
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['web/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One browser at a time: the machine has two cores and the server runs in the same process.
    fileParallelism: false,
    reporters: ['default'],
  },
});
