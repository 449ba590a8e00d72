import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** This run's name for its PostgreSQL test schemas, `wr_test_<run>_…` (helpers/global-setup.ts). */
    testRun: string;
  }
}

/**
 * This run's name for its PostgreSQL test schemas, which vitest's global setup provides
 * (helpers/global-setup.ts); under a config without it (the SDK and browser suites), none.
 */
export function testRun(): string | undefined {
  try {
    return inject('testRun');
  } catch {
    return undefined;
  }
}
