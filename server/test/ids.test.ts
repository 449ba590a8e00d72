import { afterEach, describe, expect, it, vi } from 'vitest';
import { newId } from '../src/domain/ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newId', () => {
  afterEach(() => vi.restoreAllMocks());

  it('makes UUIDv7 ids whose timestamp is the current millisecond', () => {
    const before = Date.now();
    const id = newId();
    const after = Date.now();
    expect(id).toMatch(UUID_V7);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after + 1);
  });

  it('is strictly increasing within one process, also for thousands made in one millisecond', () => {
    // 20,000 ids take a few milliseconds: thousands share a millisecond, so the counter runs past its
    // 4,096 values in at least one of them and carries into the next timestamp.
    const ids = Array.from({ length: 20_000 }, newId);
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i - 1]! < ids[i]!)) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(UUID_V7);
  });

  it('carries on from the last timestamp when the counter runs out or the clock steps back', () => {
    const ms = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    // One millisecond ahead of any id made so far (the files of a worker share this module: its ids
    // stay within a few milliseconds of the real clock afterwards).
    const t = Date.now() + 1;
    vi.spyOn(Date, 'now').mockReturnValue(t);
    const same = Array.from({ length: 5_000 }, newId); // more than one counter's 2,048+ values
    expect(ms(same[0]!)).toBe(t);
    expect(ms(same.at(-1)!)).toBeGreaterThan(t);
    vi.spyOn(Date, 'now').mockReturnValue(t - 5_000); // the clock steps back
    const after = newId();
    expect(after > same.at(-1)!).toBe(true);
    for (let i = 1; i < same.length; i++) expect(same[i - 1]! < same[i]!).toBe(true);
  });

  it('keeps random bits apart from the counter', () => {
    const ids = Array.from({ length: 1_000 }, newId);
    expect(new Set(ids.map((id) => id.slice(19))).size).toBeGreaterThan(990);
  });
});
