import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './server/test/helpers/sequencer.js';

/**
 * Test files run in the SQLite run (the README's `npm test`) and not again when DATABASE_URL points at
 * PostgreSQL, because the database is not what they test: pure logic (parsing, rendering, time
 * arithmetic, signatures), HTTP framing before any request reaches an operation (fuzz-raw), the
 * process's own lifecycle (cli-start: signals, exit codes, help; starting on PostgreSQL is tested by
 * ops-safe-start, process, cluster and cluster-crash), MCP version negotiation (mcp-versions: the
 * handshake and headers; tool calls on PostgreSQL are in mcp-protocol, mcp-modern and mcp-sdk), files
 * generated from the schemas (openapi-committed, events-generated), the outbound client's address rules
 * (outbound-ssrf, webhook-refusal-hint), what the server holds for strangers before any credential is
 * checked (hardening-memory), the live stream's timers (realtime-heartbeat), the HTML sanitizer's image
 * rule (message-images) and the production install's imports (ops-production-deps).
 */
const ONCE = [
  'clock',
  'ids',
  'collect-tasknotify-unit',
  'poll-render',
  'poll-unit',
  'scheduler-time',
  'standup-unit',
  'webhook-sign',
  'fuzz-raw',
  'cli-start',
  'mcp-versions',
  'openapi-committed',
  'events-generated',
  'outbound-ssrf',
  'webhook-refusal-hint',
  'hardening-memory',
  'realtime-heartbeat',
  'message-images',
  'ops-production-deps',
];

export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts'],
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.DATABASE_URL ? ONCE.map((name) => `server/test/${name}.test.ts`) : []),
    ],
    // Generous: several tests start server processes (migrations, scrypt) and CI machines can be busy;
    // a test's own waits (expect.poll) say what is expected, these only stop a hung test.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each test file starts its own server on its own database. Three at a time on two cores: several
    // files (stand-up, poll, collection, scheduler, crash) spend most of their time waiting for real
    // clock times, and they start first (helpers/sequencer.ts) so that they are not the run's tail.
    maxWorkers: 3,
    // Once per run: the build (server/dist) the server processes of tests run, made when missing or stale,
    // and the name of the run's PostgreSQL schemas (helpers/global-setup.ts).
    globalSetup: ['server/test/helpers/global-setup.ts'],
    sequence: { sequencer: SlowFirstSequencer },
    // Files share a worker's module cache (loading the server's modules again for every file cost about
    // 9 s a file under load); every file still starts its own servers on its own databases.
    isolate: false,
    reporters: ['default'],
  },
});
