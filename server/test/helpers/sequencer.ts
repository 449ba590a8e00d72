import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that wait on real clock time (a minute boundary, a poll's or a collection's deadline, a
 * stand-up's window, retries after a kill) or are long for their own reasons, longest first (durations
 * on SQLite on a shared 2-core machine, 2026-11-27, after the bot and scheduler tests moved to the
 * test clock). Started first, they wait while the short files keep the other workers busy; started
 * last, they are the tail of the run.
 *
 * vitest's own order (BaseSequencer) is the longest first only with its results cache of an earlier
 * run (node_modules/.vite/vitest, which `npm ci` deletes); without it, the largest files first. For
 * vitest.config.ts: `sequence: { sequencer: SlowFirstSequencer }`.
 */
export const SLOW_FIRST = [
  'standup-crash', // ~170 s (real clock minutes: the one process test of the stand-up bot)
  'delivery-crash', // ~50 s
  'delivery-fairness', // ~45 s
  'fuzz-rest', // ~15 s
  'hardening-realtime', // ~13 s
  'scheduler-process', // ~13 s
  'hardening', // ~11 s
  'fuzz-raw', // ~10 s
  'delivery-drain', // ~9 s
  'process', // ~9 s
  'hardening-memory', // ~9 s
  'delivery-webhooks', // ~9 s
  'hardening-login', // ~7 s
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
