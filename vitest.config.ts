import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts'],
    // Generous: several tests start server processes (migrations, scrypt) and CI machines can be busy;
    // a test's own waits (expect.poll) say what is expected, these only stop a hung test.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each test file starts its own server on its own database; two cores, so two at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
