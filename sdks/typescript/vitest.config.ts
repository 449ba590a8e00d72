import { defineConfig } from 'vitest/config';

/** The SDK's own suite (`npm run test -w sdks/typescript`): against a real Workroom server started in-process. */
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
