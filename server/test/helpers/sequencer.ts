import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The longest test files, longest first (durations on a 2-core CI machine, 2026-11-27, SQLite /
 * PostgreSQL, after the bot and scheduler tests and the stand-up crash test moved to the test clock):
 * most wait on server processes, Node's timers or a real clock. Started first, they wait while the
 * short files keep the other workers busy; started last, they are the tail of the run.
 *
 * vitest's own order (BaseSequencer) is the longest first only with its results cache of an earlier
 * run (node_modules/.vite/vitest, which `npm ci` deletes); without it, the largest files first. For
 * vitest.config.ts: `sequence: { sequencer: SlowFirstSequencer }`.
 */
export const SLOW_FIRST = [
  'delivery-fairness', // ~46 s (SQLite) / ~58 s (PostgreSQL): endpoints that time out, on Node's timers
  'ops-safe-start', // ~32 / ~47 s: server processes (migrate, create-admin, check-config)
  'metrics-scale', // ~13 / ~47 s: 1,000 bots and their queued retries
  'cluster-crash', // PostgreSQL ~41 s: three processes, a SIGKILL and a rolling restart
  'cli-start', // ~27 s: the built server started and stopped as a supervisor does
  'ops-backup', // ~11 / ~30 s
  'poll-bot', // ~11 / ~29 s
  'cluster', // PostgreSQL ~28 s
  'hardening-realtime', // ~17 / ~27 s
  'delivery-crash', // ~25 / ~26 s
  'socket-delivery-crash', // ~21-33 / ~26-53 s (server processes, 5 kills, 20 dropped sockets)
  'fuzz-raw', // ~22 s
  'standup-crash', // ~20 s (server processes on a test clock)
  'approval-crash', // server processes, three SIGKILLs between an approval and its post
  'scheduler-process', // ~15 / ~21 s (real clock: the scheduler's seam)
  'hardening', // ~12 / ~15 s
  'search-budget', // ~4 / ~14 s
  'search-contract', // PostgreSQL ~12 s
  'fuzz-mcp', // ~8 / ~11 s
  'hardening-login', // ~8 / ~11 s
  'grants', // 255 cases: 56 s on PostgreSQL under load 10
  'fuzz-rest', // ~10 s
  'delivery-webhooks', // ~9 / ~11 s
  'delivery-drain', // ~9 / ~10 s
];

/** A sequencer that starts the files named in `slowFirst` (file names without `.test.ts`) first, in that order. */
export function slowFirstSequencer(slowFirst: readonly string[]): typeof BaseSequencer {
  const rank = (spec: TestSpecification): number => {
    const name = spec.moduleId
      .split('/')
      .pop()!
      .replace(/\.test\.ts$/, '');
    const i = slowFirst.indexOf(name);
    return i === -1 ? slowFirst.length : i;
  };
  return class SlowFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      // The listed files in this order, then the others in vitest's order (stable sort).
      return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
    }
  };
}

export default slowFirstSequencer(SLOW_FIRST);
