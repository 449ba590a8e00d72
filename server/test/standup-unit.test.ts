import { describe, expect, it } from 'vitest';
import { parseStandup, parseSetup, resolveDate } from '../src/bots/standup/parse.js';
import { followingStart, heldOn, futureSkips, nextStart, runTimes } from '../src/bots/standup/plan.js';
import { askText, showText, summaryText } from '../src/bots/standup/render.js';
import { STANDUP_LIMITS, type Participant, type StandupConfig } from '../src/bots/standup/model.js';
import { tokenize } from '../src/bots/platform-kit/args.js';
import { formatDays, parseDays, parseDuration } from '../src/bots/platform-kit/time.js';

/** The stand-up bot's pure parts: command parsing, planning across DST, texts. */

const err = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected an error');
};

describe('platform kit', () => {
  it('tokenizes quotes (straight and typographic) and quoted option values', () => {
    expect(tokenize('setup 09:30 "What did you do?" “Blockers?” window:"2h"')).toEqual([
      { text: 'setup', quoted: false },
      { text: '09:30', quoted: false },
      { text: 'What did you do?', quoted: true },
      { text: 'Blockers?', quoted: true },
      { text: 'window:2h', quoted: false },
    ]);
    expect(err(() => tokenize('"open'))).toMatch(/quote is not closed/);
  });

  it('parses days and durations', () => {
    expect(parseDays('mon-fri')).toEqual([1, 2, 3, 4, 5]);
    expect(parseDays('fri-mon')).toEqual([1, 5, 6, 7]);
    expect(parseDays('Mon,wed,FRIDAY')).toEqual([1, 3, 5]);
    expect(parseDays('daily')).toHaveLength(7);
    expect(err(() => parseDays('mon-funday'))).toMatch(/range of weekdays/);
    expect(err(() => parseDays('xyz'))).toMatch(/not a weekday/);
    expect(formatDays([1, 2, 3, 4, 5])).toBe('Mon–Fri');
    expect(formatDays([1, 3, 5])).toBe('Mon, Wed, Fri');
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('2 weeks')).toBeNull();
  });
});

describe('/standup parsing', () => {
  it('parses the example of the issue', () => {
    const c = parseStandup(
      'setup 09:30 mon-fri Europe/Berlin "What did you do yesterday?" "What will you do today?" "Blockers?"',
    );
    expect(c).toEqual({
      kind: 'setup',
      setup: {
        time: '09:30',
        days: [1, 2, 3, 4, 5],
        tz: 'Europe/Berlin',
        questions: ['What did you do yesterday?', 'What will you do today?', 'Blockers?'],
        window_ms: 3_600_000,
        summary_time: null,
        remind_ms: 15 * 60_000,
      },
    });
  });

  it('takes options, defaults and a summary time', () => {
    const s = parseSetup('9:05 weekdays america/new_york summary:10:35 remind:off');
    expect(s.time).toBe('09:05');
    expect(s.tz).toBe('America/New_York');
    expect(s.window_ms).toBe(90 * 60_000);
    expect(s.remind_ms).toBe(0);
    expect(s.questions).toHaveLength(3); // the default questions
    expect(parseSetup('10:00 daily UTC "Q" window:1m remind:30s')).toMatchObject({
      window_ms: 60_000,
      remind_ms: 30_000,
    });
    // A short window gets a reminder half-way by default.
    expect(parseSetup('10:00 daily UTC "Q" window:10m').remind_ms).toBe(5 * 60_000);
  });

  it('refuses bad input with a message that says what is wrong', () => {
    expect(err(() => parseSetup('25:00 mon-fri UTC "Q"'))).toMatch(/not a time HH:MM/);
    expect(err(() => parseSetup('09:30 mon-fri Mars/Olympus "Q"'))).toMatch(/not an IANA time zone/);
    expect(err(() => parseSetup('09:30 mon-fri'))).toMatch(/time, days and a time zone/);
    expect(err(() => parseSetup('09:30 mon-fri UTC What did you do'))).toMatch(/each question in quotes/);
    expect(err(() => parseSetup(`09:30 mon-fri UTC ${'"q" '.repeat(11)}`))).toMatch(/at most 10 questions/);
    expect(err(() => parseSetup(`09:30 mon-fri UTC "${'x'.repeat(301)}"`))).toMatch(/longer than 300/);
    expect(err(() => parseSetup('09:30 mon-fri UTC "Q" ""'))).toMatch(/Question 2 is empty/);
    expect(err(() => parseSetup('09:30 mon-fri UTC window:30s'))).toMatch(/between 1m and 12h/);
    expect(err(() => parseSetup('09:30 mon-fri UTC window:13h'))).toMatch(/between 1m and 12h/);
    expect(err(() => parseSetup('09:30 mon-fri UTC summary:09:00'))).toMatch(/later the same day/);
    expect(err(() => parseSetup('09:30 mon-fri UTC window:1h summary:11:00'))).toMatch(
      /either window: or summary:/,
    );
    expect(err(() => parseSetup('09:30 mon-fri UTC window:1h remind:1h'))).toMatch(/less than the window/);
    expect(err(() => parseSetup('09:30 mon-fri UTC remind:soon'))).toMatch(/not a duration/);
    expect(err(() => parseStandup('frobnicate'))).toMatch(/Unknown subcommand/);
    expect(err(() => parseStandup('skip someday'))).toMatch(/YYYY-MM-DD, today or tomorrow/);
    expect(err(() => parseStandup('skip 2026-02-30'))).toMatch(/YYYY-MM-DD/);
    expect(err(() => parseStandup('pause now'))).toMatch(/takes nothing/);
  });

  it('resolves today and tomorrow in the zone', () => {
    expect(resolveDate({ relative: 1 }, '2026-12-31')).toBe('2027-01-01');
    expect(resolveDate({ date: '2026-12-24' }, '2026-12-01')).toBe('2026-12-24');
    expect(parseStandup('skip tomorrow')).toEqual({ kind: 'skip', date: { relative: 1 } });
  });
});

describe('stand-up planning', () => {
  /** Follows a chain of starts the way the start jobs do (each plans the next from its own instant). */
  function chain(s: { time: string; days: number[]; tz: string }, from: string, n: number) {
    const out: { date: string; at: string }[] = [];
    let cur = nextStart(s, Date.parse(from));
    for (let i = 0; i < n; i++) {
      out.push(cur);
      // The job runs on time (now = its instant); it plans the following one.
      cur = followingStart(s, cur.at, Date.parse(cur.at));
    }
    return out;
  }
  const localTime = (at: string, tz: string) =>
    new Intl.DateTimeFormat('en-GB', {
      timeZone: tz,
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(new Date(at));

  it('keeps a daily 09:30 Europe/Berlin stand-up at 09:30 across both DST changes, once a day', () => {
    const s = { time: '09:30', days: [1, 2, 3, 4, 5, 6, 7], tz: 'Europe/Berlin' };
    for (const from of ['2026-03-25T00:00:00Z', '2026-10-21T00:00:00Z']) {
      const runs = chain(s, from, 10);
      expect(runs.map((r) => localTime(r.at, s.tz))).toEqual(Array(10).fill('09:30'));
      const dates = runs.map((r) => r.date);
      expect(new Set(dates).size).toBe(10); // no date twice
      // Consecutive days: none skipped either.
      for (let i = 1; i < dates.length; i++) {
        expect(Date.parse(dates[i]!) - Date.parse(dates[i - 1]!)).toBe(86_400_000);
      }
    }
    // The UTC instant moves by the offset change: 08:30Z before the spring change, 07:30Z after.
    const spring = chain(s, '2026-03-27T00:00:00Z', 3);
    expect(spring.map((r) => r.at)).toEqual([
      '2026-03-27T08:30:00.000Z',
      '2026-03-28T08:30:00.000Z',
      '2026-03-29T07:30:00.000Z',
    ]);
  });

  it('a time in the fall-back overlap happens once, a time in the spring-forward gap once (when the clocks jump)', () => {
    const ny = { time: '01:30', days: [1, 2, 3, 4, 5, 6, 7], tz: 'America/New_York' };
    const fall = chain(ny, '2026-10-31T12:00:00Z', 3); // 2026-11-01 is the fall-back day
    expect(fall.map((r) => r.date)).toEqual(['2026-11-01', '2026-11-02', '2026-11-03']);
    expect(fall[1]!.at).toBe('2026-11-02T06:30:00.000Z'); // 01:30 EST the day after
    expect(fall[0]!.at).toBe('2026-11-01T05:30:00.000Z'); // the first 01:30 (EDT), not the second
    const berlin = { time: '02:30', days: [1, 2, 3, 4, 5, 6, 7], tz: 'Europe/Berlin' };
    const gap = chain(berlin, '2026-03-28T12:00:00Z', 3); // 2026-03-29 02:00 → 03:00
    expect(gap.map((r) => r.date)).toEqual(['2026-03-29', '2026-03-30', '2026-03-31']);
    expect(localTime(gap[0]!.at, 'Europe/Berlin')).toBe('03:00');
    expect(localTime(gap[1]!.at, 'Europe/Berlin')).toBe('02:30');
  });

  it('mon-fri skips the weekend; a late start plans from the clock and keeps the whole window', () => {
    const s = { time: '09:30', days: [1, 2, 3, 4, 5], tz: 'Europe/Berlin' };
    const runs = chain(s, '2026-11-26T12:00:00Z', 3); // Thu
    expect(runs.map((r) => r.date)).toEqual(['2026-11-27', '2026-11-30', '2026-12-01']);
    // Ran 2 hours late: the next one is still the next working day, never today again.
    const late = followingStart(s, '2026-11-27T08:30:00.000Z', Date.parse('2026-11-27T10:30:00Z'));
    expect(late.date).toBe('2026-11-30');
    const t = runTimes('2026-11-27T08:30:00.000Z', Date.parse('2026-11-27T10:30:00Z'), 3_600_000, 900_000);
    expect(t).toEqual({
      started_at: '2026-11-27T10:30:00.000Z',
      summary_at: '2026-11-27T11:30:00.000Z',
      remind_at: '2026-11-27T11:15:00.000Z',
    });
    expect(
      runTimes('2026-11-27T08:30:00.000Z', Date.parse('2026-11-27T08:30:00Z'), 60_000, 0).remind_at,
    ).toBeNull();
    expect(heldOn({ paused: false, skip: ['2026-11-27'] }, '2026-11-27')).toBe(false);
    expect(heldOn({ paused: true, skip: [] }, '2026-11-30')).toBe(false);
    expect(futureSkips(['2026-11-01', '2026-12-24', '2026-12-24', '2026-11-27'], '2026-11-27')).toEqual([
      '2026-11-27',
      '2026-12-24',
    ]);
  });
});

describe('stand-up texts', () => {
  const run = {
    channel_name: 'team_*x*',
    date: '2026-11-23',
    questions: ['Yesterday?', 'Today?'],
    participants: ['a', 'b', 'c'],
    left_out: 0,
  };
  const p = (user: string, ...texts: string[]): Participant => ({
    user_id: user,
    closed: true,
    answers: texts.map((text, i) => ({ text, message_id: `${user}${i}`, at: '' })),
  });

  it('asks with an introduction first, then question by question', () => {
    expect(askText(run, 0)).toContain('Stand-up in #team\\_\\*x\\***');
    expect(askText(run, 0)).toContain('**1/2** Yesterday?');
    expect(askText(run, 1)).toBe('**2/2** Today?');
  });

  it('summarizes answers in order, quoting every line, and names who has not answered', () => {
    const text = summaryText(
      run,
      new Map([
        ['a', p('a', 'Fixed bugs\n# not a heading', 'Reviews')],
        ['b', p('b', 'Only one')],
      ]),
      new Map([
        ['a', 'Ann'],
        ['b', 'Bob'],
        ['c', 'Carl'],
      ]),
    );
    expect(text).toContain('2 of 3 answered · not answered: **Carl**');
    expect(text).toContain(
      '**Ann**\n> **Yesterday?**\n> Fixed bugs\n> # not a heading\n> **Today?**\n> Reviews',
    );
    expect(text).toContain('**Bob**\n> **Yesterday?**\n> Only one\n> **Today?**\n> _(no answer)_');
    expect(text).not.toContain('**Carl**\n>');
  });

  it('fits the message limit by shortening answers', () => {
    const many = Array.from({ length: 60 }, (_, i) => `u${i}`);
    const answers = new Map(many.map((u) => [u, p(u, 'x'.repeat(2000), 'y'.repeat(2000))]));
    const text = summaryText({ ...run, participants: many }, answers, new Map(), STANDUP_LIMITS.summaryChars);
    expect(text.length).toBeLessThanOrEqual(STANDUP_LIMITS.summaryChars);
    expect(text).toContain('60 of 60 answered · everyone answered');
    expect(text.match(/\*\*a former member\*\*/g)).toHaveLength(60); // every member is still there
  });

  it('fits the bot data limit too when answers are multi-byte', async () => {
    const { jsonBytes } = await import('../src/bots/platform-kit/text.js');
    const many = Array.from({ length: 100 }, (_, i) => `u${i}`);
    const answers = new Map(many.map((u) => [u, p(u, '漢'.repeat(2000), '字'.repeat(2000))]));
    const text = summaryText({ ...run, participants: many }, answers, new Map());
    expect(jsonBytes(text)).toBeLessThanOrEqual(STANDUP_LIMITS.summaryBytes);
    expect(text).toContain('100 of 100 answered');
  });

  it('shows a set-up', () => {
    const c: StandupConfig = {
      channel_id: 'c',
      time: '09:30',
      days: [1, 2, 3, 4, 5],
      tz: 'Europe/Berlin',
      questions: ['A?', 'B?'],
      window_ms: 3_600_000,
      remind_ms: 900_000,
      paused: false,
      skip: ['2026-12-24'],
      gen: 1,
      created_by: 'u',
      updated_by: 'u',
      updated_at: '',
      next: null,
      last_date: null,
    };
    const t = showText(c, 'Mon 23 Nov 2026, 09:30 (Europe/Berlin)', null);
    expect(t).toContain('09:30 Mon–Fri (Europe/Berlin); summary 1h later, reminder 15m before it');
    expect(t).toContain('Skipped: 2026-12-24');
    expect(showText({ ...c, paused: true }, null, null)).toContain('paused');
    expect(showText(null, null, null)).toContain('No stand-up is set up');
  });
});

describe('dates and instants', () => {
  it('are shown the same way everywhere', async () => {
    const { formatDate, formatInstant } = await import('../src/bots/platform-kit/time.js');
    expect(formatDate('2026-11-23')).toBe('Mon 23 Nov 2026');
    expect(formatInstant('2026-11-23T08:30:00Z', 'Europe/Berlin')).toBe(
      'Mon 23 Nov 2026, 09:30 (Europe/Berlin)',
    );
    expect(askText({ channel_name: 'team', date: '2026-11-23', questions: ['Q?'] }, 0)).toContain(
      '**Stand-up in #team** · Mon 23 Nov 2026\nOne question',
    );
  });
});
