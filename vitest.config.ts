import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Each test file starts its own server on its own database; two cores, so two at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
