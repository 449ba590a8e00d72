import { defineConfig } from 'vitest/config';

/**
 * @workroom/testing's own suite and the example bots' tests written with it (`npm test -w sdks/testing`;
 * needs the built server and SDK: `npm run build && npm run build -w sdks/typescript`). Each file starts
 * one harness (a server process).
 */
export default defineConfig({
  test: {
    root: import.meta.dirname,
    dir: '../..',
    include: ['sdks/testing/test/**/*.test.ts', 'examples/node-bot/**/*.test.mjs'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
