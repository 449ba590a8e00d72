import { describe, expect, it } from 'vitest';
import {
  canonicalTimeZone,
  localDate,
  localToInstant,
  nextOccurrence,
  scheduleProblem,
  zoneOffsetMs,
  type LocalSchedule,
} from '../src/domain/schedule-time.js';

/** The next `n` occurrences after `from`, each found from the one before (as a bot re-schedules). */
function chain(s: LocalSchedule, from: string, n: number): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    at = nextOccurrence(s, at);
    out.push(at.toISOString());
  }
  return out;
}

describe('schedule-time: local wall-clock times in IANA zones (Intl only)', () => {
  it('Europe/Berlin: a daily 09:00 stays 09:00 local across spring-forward and fall-back', () => {
    const daily = { time: '09:00', timeZone: 'Europe/Berlin' };
    // 2025-03-30 01:00 UTC: CET (+1) → CEST (+2).
    expect(chain(daily, '2025-03-28T12:00:00Z', 3)).toEqual([
      '2025-03-29T08:00:00.000Z',
      '2025-03-30T07:00:00.000Z',
      '2025-03-31T07:00:00.000Z',
    ]);
    // 2025-10-26 01:00 UTC: CEST → CET.
    expect(chain(daily, '2025-10-25T12:00:00Z', 2)).toEqual([
      '2025-10-26T08:00:00.000Z',
      '2025-10-27T08:00:00.000Z',
    ]);
  });

  it('Europe/Berlin: a time in the spring-forward gap fires at the jump (03:00 local)', () => {
    const s = { time: '02:30', timeZone: 'Europe/Berlin' };
    expect(chain(s, '2025-03-29T12:00:00Z', 2)).toEqual([
      '2025-03-30T01:00:00.000Z', // 02:30 does not exist: 03:00 CEST
      '2025-03-31T00:30:00.000Z', // 02:30 CEST
    ]);
    expect(localToInstant('Europe/Berlin', { year: 2025, month: 3, day: 30, hour: 2, minute: 0 })).toBe(
      Date.parse('2025-03-30T01:00:00Z'),
    );
  });

  it('Europe/Berlin: a time of the fall-back overlap fires once, at its first occurrence', () => {
    const s = { time: '02:30', timeZone: 'Europe/Berlin' };
    expect(chain(s, '2025-10-25T12:00:00Z', 2)).toEqual([
      '2025-10-26T00:30:00.000Z', // 02:30 CEST; 02:30 CET (01:30Z) is skipped
      '2025-10-27T01:30:00.000Z',
    ]);
  });

  it('America/New_York: weekdays at 09:00 across the March change; gap and overlap', () => {
    const weekdays = { time: '09:00', timeZone: 'America/New_York', weekdays: [1, 2, 3, 4, 5] };
    expect(chain(weekdays, '2025-03-06T20:00:00Z', 3)).toEqual([
      '2025-03-07T14:00:00.000Z', // Fri, EST
      '2025-03-10T13:00:00.000Z', // Mon, EDT (the weekend and the change in between)
      '2025-03-11T13:00:00.000Z',
    ]);
    expect(chain({ time: '02:30', timeZone: 'America/New_York' }, '2025-03-08T12:00:00Z', 1)).toEqual([
      '2025-03-09T07:00:00.000Z', // 03:00 EDT
    ]);
    expect(chain({ time: '01:30', timeZone: 'America/New_York' }, '2025-11-01T12:00:00Z', 2)).toEqual([
      '2025-11-02T05:30:00.000Z', // 01:30 EDT only
      '2025-11-03T06:30:00.000Z', // 01:30 EST the next day
    ]);
  });

  it('Asia/Kolkata (+05:30) and Asia/Kathmandu (+05:45): half and quarter hours', () => {
    expect(chain({ time: '09:00', timeZone: 'Asia/Kolkata' }, '2025-06-01T00:00:00Z', 2)).toEqual([
      '2025-06-01T03:30:00.000Z',
      '2025-06-02T03:30:00.000Z',
    ]);
    expect(
      nextOccurrence({ time: '00:00', timeZone: 'Asia/Kathmandu' }, new Date('2025-06-01T00:00:00Z')),
    ).toEqual(new Date('2025-06-01T18:15:00Z'));
  });

  it('Pacific/Chatham (+12:45 / +13:45): across its April change, and its September gap', () => {
    const daily = { time: '09:00', timeZone: 'Pacific/Chatham' };
    // DST ends 2025-04-06 03:45 local (+13:45 → +12:45).
    expect(chain(daily, '2025-04-04T00:00:00Z', 3)).toEqual([
      '2025-04-04T19:15:00.000Z', // Apr 5 09:00 +13:45
      '2025-04-05T20:15:00.000Z', // Apr 6 09:00 +12:45
      '2025-04-06T20:15:00.000Z',
    ]);
    // DST starts 2025-09-28 02:45 → 03:45: 03:00 does not exist, it fires at 03:45 local.
    expect(chain({ time: '03:00', timeZone: 'Pacific/Chatham' }, '2025-09-27T00:00:00Z', 2)).toEqual([
      '2025-09-27T14:00:00.000Z',
      '2025-09-28T13:15:00.000Z',
    ]);
  });

  it('Australia/Lord_Howe: a half-hour DST change, overlap fires at the first occurrence', () => {
    // 2025-04-06 02:00 (+11) → 01:30 (+10:30): 01:45 happens twice.
    expect(chain({ time: '01:45', timeZone: 'Australia/Lord_Howe' }, '2025-04-05T00:00:00Z', 2)).toEqual([
      '2025-04-05T14:45:00.000Z',
      '2025-04-06T15:15:00.000Z',
    ]);
  });

  it('Pacific/Apia skipped 2011-12-30 entirely: that day fires at the jump', () => {
    expect(chain({ time: '09:00', timeZone: 'Pacific/Apia' }, '2011-12-29T12:00:00Z', 3)).toEqual([
      '2011-12-29T19:00:00.000Z', // Dec 29 09:00 −10
      '2011-12-30T10:00:00.000Z', // Dec 30 never happened: the jump (Dec 31 00:00 +14)
      '2011-12-30T19:00:00.000Z', // Dec 31 09:00 +14
    ]);
  });

  it('UTC and strictly-after: an occurrence at `after` itself is not the next one', () => {
    const s = { time: '12:00', timeZone: 'UTC' };
    expect(nextOccurrence(s, new Date('2025-01-01T12:00:00Z')).toISOString()).toBe(
      '2025-01-02T12:00:00.000Z',
    );
    expect(nextOccurrence(s, new Date('2025-01-01T11:59:59.999Z')).toISOString()).toBe(
      '2025-01-01T12:00:00.000Z',
    );
  });

  it('weekdays: Saturday only, from a Saturday after the time, is a week later', () => {
    const s = { time: '10:00', timeZone: 'Europe/Berlin', weekdays: [6] };
    expect(nextOccurrence(s, new Date('2025-06-07T09:00:00Z')).toISOString()).toBe(
      '2025-06-14T08:00:00.000Z',
    );
  });

  it('validates zones, times and weekdays', () => {
    expect(canonicalTimeZone('europe/berlin')).toBe('Europe/Berlin');
    expect(canonicalTimeZone('Mars/Olympus_Mons')).toBeNull();
    expect(canonicalTimeZone('')).toBeNull();
    expect(scheduleProblem({ time: '09:00', timeZone: 'Mars/Olympus_Mons' })).toMatch(/time_zone/);
    for (const time of ['24:00', '9:00', '09:60', '0900', ' 09:00'])
      expect(scheduleProblem({ time, timeZone: 'UTC' })).toMatch(/time/);
    expect(scheduleProblem({ time: '09:00', timeZone: 'UTC', weekdays: [0] })).toMatch(/weekdays/);
    expect(scheduleProblem({ time: '09:00', timeZone: 'UTC', weekdays: [1, 7] })).toBeNull();
    expect(() => nextOccurrence({ time: '09:00', timeZone: 'Nowhere/Land' }, 0)).toThrow(RangeError);
  });

  it('offsets and local dates', () => {
    expect(zoneOffsetMs(Date.parse('2025-01-15T00:00:00Z'), 'America/New_York')).toBe(-5 * 3_600_000);
    expect(zoneOffsetMs(Date.parse('2025-07-15T00:00:00Z'), 'Pacific/Chatham')).toBe(12.75 * 3_600_000);
    expect(localDate(new Date('2025-03-30T23:30:00Z'), 'Asia/Kolkata')).toBe('2025-03-31');
    expect(localDate(new Date('2025-03-30T23:30:00Z'), 'America/New_York')).toBe('2025-03-30');
  });
});
