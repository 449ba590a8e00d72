import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that wait on real clock time (a minute boundary, a poll's or a collection's deadline, a
 * stand-up's window, retries after a kill) or are long for their own reasons, longest first (durations
 * on SQLite on a shared 2-core machine, 2026-11-23). Started first, they wait while the short files
 * keep the other workers busy; started last, they are the tail of the run.
 *
 * vitest's own order (BaseSequencer) is the longest first only with its results cache of an earlier
 * run (node_modules/.vite/vitest, which `npm ci` deletes); without it, the largest files first. For
 * vitest.config.ts: `sequence: { sequencer: SlowFirstSequencer }`.
 */
export const SLOW_FIRST = [
  'standup-crash', // ~160–200 s
  'standup-disable', // ~130 s
  'standup-scheduler', // ~100–160 s
  'fuzz-rest', // ~100 s
  'standup-bot', // ~85 s
  'delivery-crash', // ~70 s
  'poll-bot', // ~70 s
  'task-notify-bot', // ~67 s
  'collect-bot', // ~64 s
  'builtin-reminder', // ~49 s (up to a minute)
  'scheduler-process', // ~47 s
  'fuzz-mcp', // ~44 s
  'scheduler-api', // ~41 s
  'hardening', // ~40 s
  'roles', // ~35 s
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
