import { slowFirstSequencer } from '../../server/test/helpers/sequencer.js';

/**
 * Browser test files, two at a time (web/vitest.config.ts): the stand-up one first, since it spends
 * most of its ~110 s waiting for a minute boundary and the stand-up's window, then the performance one,
 * so that its timings are taken beside that mostly idle file rather than beside another busy browser.
 */
export default slowFirstSequencer(['platform-bots', 'perf']);
