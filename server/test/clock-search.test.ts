import { describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { SearchBudget } from '../src/storage/stores/search.js';
import { FrozenClock } from './helpers/frozen-clock.js';

/**
 * A search's time budget (WORKROOM_SEARCH_TIMEOUT) is counted by the server's clock from the search's
 * start (storage/stores/search.ts SearchBudget; search.ts passes Services.clock). The end-to-end budget
 * (503 search_timeout on REST and MCP) is search-budget.test.ts, on the real clock.
 */
describe('SearchBudget on a test clock', () => {
  it('what is left goes down as the clock moves, to 0 once spent; at least 1 ms while any is left', () => {
    const clock = new FrozenClock('2027-01-01T00:00:00.000Z');
    const budget = new SearchBudget(2000, clock);
    expect(budget.ms).toBe(2000);
    expect(budget.left()).toBe(2000);
    clock.advance(1500);
    expect(budget.left()).toBe(500);
    clock.advance(499.6);
    expect(budget.left()).toBe(1); // 0.4 ms left: still some
    clock.advance(0.4);
    expect(budget.left()).toBe(0);
    clock.advance(60_000);
    expect(budget.left()).toBe(0);
  });

  it('a jump of the server clock spends it at once, whatever real time did', () => {
    const clock = new TestClock();
    const budget = new SearchBudget(2000, clock);
    expect(budget.left()).toBeGreaterThan(1900);
    clock.advance(2000);
    expect(budget.left()).toBe(0);
  });
});
