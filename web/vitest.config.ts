import { defineConfig } from 'vitest/config';

// Browser tests: a real server in-process serving the built app (web/dist), driven in Debian's
// Chromium by playwright-core. `npm run test:browser` builds the app first.
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['web/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One file at a time: the machine has two cores and each file runs its server in the test process
    // beside its browser. (Two at a time saved ~35 s of ~300 but made the tests' waits race the server.)
    fileParallelism: false,
    reporters: ['default'],
  },
});
