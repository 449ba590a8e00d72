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
    // The files share the worker's module cache (each still starts its own server and browser): importing
    // the server's modules again for every file cost ~28 s of the run.
    isolate: false,
    reporters: ['default'],
  },
});
