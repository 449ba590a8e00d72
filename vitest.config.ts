import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts'],
    // Generous: several tests start server processes (migrations, scrypt) and CI machines can be busy;
    // a test's own waits (expect.poll) say what is expected, these only stop a hung test.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each test file starts its own server on its own database. Three at a time on two cores: several
    // files (scheduler, stand-up, poll) spend most of their time waiting for real clock times.
    maxWorkers: 3,
    reporters: ['default'],
  },
});
