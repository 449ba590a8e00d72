import { describe, expect, it } from 'vitest';
import {
  applyClick,
  selection,
  selectionChanged,
  tally,
  voteKey,
  voterOf,
  type Click,
  type VoteDoc,
} from '../src/bots/poll/model.js';
import {
  formatDuration,
  parseDuration,
  parsePoll,
  parseSurvey,
  tokenize,
  POLL_LIMITS,
} from '../src/bots/poll/parse.js';

/**
 * The poll bot's pure parts (server/src/bots/poll/): command parsing and its limits, and the vote
 * model (last writer wins per register; what double clicks, redeliveries and out-of-order deliveries
 * do). Rendering is tested in poll-render.test.ts, the behaviour through the API in poll-bot.test.ts.
 */

const err = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected an error');
};

describe('tokenize', () => {
  it('splits on whitespace and groups straight and curly double quotes', () => {
    expect(tokenize(' a  "b c" “d e” „f g“ h"i ').map((a) => a.text)).toEqual([
      'a',
      'b c',
      'd e',
      'f g',
      'h"i',
    ]);
    expect(tokenize('"x \\" y"')[0]).toEqual({ text: 'x " y', quoted: true });
    expect(tokenize("What's up?").map((a) => a.text)).toEqual(["What's", 'up?']);
    expect(tokenize('""')).toEqual([{ text: '', quoted: true }]);
  });
  it('refuses an unterminated quote', () => {
    expect(err(() => tokenize('"Lunch? Pizza'))).toMatch(/A quote is not closed: "Lunch\? Pizza/);
    expect(err(() => tokenize('"Q" "A" “B'))).toMatch(/A quote is not closed: “B \(close it with ”\)/);
  });
});

describe('durations', () => {
  it('parses units and sums', () => {
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('90min')).toBe(5_400_000);
    expect(parseDuration('3d')).toBe(3 * 86_400_000);
    expect(parseDuration('1w')).toBe(7 * 86_400_000);
    expect(parseDuration('45s')).toBe(45_000);
  });
  it('refuses anything else', () => {
    for (const bad of ['', '2', 'h', '2 hours', '2x', '-1h', '1.5h', 'tomorrow']) {
      expect(err(() => parseDuration(bad))).toMatch(/--closes takes a duration/);
    }
  });
  it('formats', () => {
    expect(formatDuration(5_400_000)).toBe('1 h 30 min');
    expect(formatDuration(3 * 86_400_000)).toBe('3 d');
    expect(formatDuration(60_000)).toBe('1 min');
  });
});

describe('/poll arguments', () => {
  it('parses a question, options and flags in any order', () => {
    expect(parsePoll('"Lunch?" "Pizza" "Sushi" --multiple --closes 2h --anonymous')).toEqual({
      question: 'Lunch?',
      options: ['Pizza', 'Sushi'],
      multiple: true,
      anonymous: true,
      closesMs: 7_200_000,
    });
    expect(parsePoll('--closes=30m Where? Here There')).toMatchObject({
      question: 'Where?',
      options: ['Here', 'There'],
      closesMs: 1_800_000,
      multiple: false,
      anonymous: false,
    });
    // A phone's em dash for "--"; a quoted "--multiple" is an option, not a flag.
    expect(parsePoll('"Q" "A" "--multiple" —anonymous')).toMatchObject({
      options: ['A', '--multiple'],
      anonymous: true,
      multiple: false,
    });
    expect(parsePoll('"Q" A B').closesMs).toBeNull();
  });
  it('enforces every limit with a clear message', () => {
    expect(err(() => parsePoll(''))).toMatch(/Ask a question: \/poll "Question"/);
    expect(err(() => parsePoll('"Q" "A"'))).toMatch(/give at least 2 options \(you gave 1\)/);
    const eleven = Array.from({ length: 11 }, (_, i) => `"o${i}"`).join(' ');
    expect(err(() => parsePoll(`"Q" ${eleven}`))).toMatch(/at most 10 options are allowed \(you gave 11\)/);
    const ten = Array.from({ length: 10 }, (_, i) => `"o${i}"`).join(' ');
    expect(parsePoll(`"Q" ${ten}`).options).toHaveLength(10);
    expect(err(() => parsePoll(`"${'q'.repeat(301)}" A B`))).toMatch(/301 characters long; at most 300/);
    expect(parsePoll(`"${'q'.repeat(300)}" A B`).question).toHaveLength(300);
    expect(err(() => parsePoll(`Q A "${'o'.repeat(76)}"`))).toMatch(
      /Option 2 is 76 characters long; at most 75/,
    );
    expect(err(() => parsePoll('"  " A B'))).toMatch(/The question must not be empty/);
    expect(err(() => parsePoll('Q A "" '))).toMatch(/Option 2 must not be empty/);
    expect(err(() => parsePoll('Q Pizza pizza'))).toMatch(/option "pizza" is given twice/);
    expect(err(() => parsePoll('Q A B --closes 59s'))).toMatch(/at least 1 minute/);
    expect(parsePoll('Q A B --closes 1m').closesMs).toBe(POLL_LIMITS.minClosesMs);
    expect(parsePoll('Q A B --closes 30d').closesMs).toBe(POLL_LIMITS.maxClosesMs);
    expect(err(() => parsePoll('Q A B --closes 30d1m'))).toMatch(/at most 30 days/);
    expect(err(() => parsePoll('Q A B --closes'))).toMatch(/--closes needs a duration/);
    expect(err(() => parsePoll('Q A B --closes soon'))).toMatch(/not "soon"/);
    expect(err(() => parsePoll('Q A B --secret'))).toMatch(
      /Unknown option --secret; \/poll takes --multiple, --anonymous, --closes/,
    );
  });
});

describe('/survey arguments', () => {
  it('parses text and choice questions', () => {
    expect(parseSurvey('"Retro" "What went well?" "Mood? [Good | OK|Bad]" --anonymous --closes 2d')).toEqual({
      title: 'Retro',
      questions: [
        { text: 'What went well?', choices: null },
        { text: 'Mood?', choices: ['Good', 'OK', 'Bad'] },
      ],
      anonymous: true,
      closesMs: 2 * 86_400_000,
    });
    expect(parseSurvey('T Q').closesMs).toBe(86_400_000);
  });
  it('enforces its limits', () => {
    expect(err(() => parseSurvey(''))).toMatch(/Give the survey a title/);
    expect(err(() => parseSurvey('"Title"'))).toMatch(/Ask at least one question/);
    const eleven = Array.from({ length: 11 }, (_, i) => `"q${i}"`).join(' ');
    expect(err(() => parseSurvey(`T ${eleven}`))).toMatch(/at most 10 questions \(you gave 11\)/);
    expect(err(() => parseSurvey('T "Mood? [Good]"'))).toMatch(/Question 1: give at least 2 options/);
    expect(err(() => parseSurvey('T "Q1" "Mood? [a|a]"'))).toMatch(/Question 2: option "a" is given twice/);
    expect(err(() => parseSurvey('T "Mood? [a||b]"'))).toMatch(/Option 2 must not be empty/);
    expect(err(() => parseSurvey(`T "${'q'.repeat(301)}"`))).toMatch(/Question 1 is 301 characters/);
    expect(err(() => parseSurvey('T Q --multiple'))).toMatch(
      /Unknown option --multiple; \/survey takes --anonymous, --closes/,
    );
    expect(err(() => parseSurvey('T Q --closes 31d'))).toMatch(/at most 30 days/);
  });
});

const click = (at: number, inv: string, c: { option: number } | 'retract', name = 'Ann'): Click =>
  c === 'retract'
    ? { kind: 'retract', at: new Date(at).toISOString(), inv, name }
    : { kind: 'vote', option: c.option, at: new Date(at).toISOString(), inv, name };

/** Applies clicks in the given order, as the bot does (a null result keeps the document). */
function run(clicks: Click[], multiple: boolean): VoteDoc | null {
  let doc: VoteDoc | null = null;
  for (const c of clicks) doc = applyClick(doc, c, { multiple, optionCount: 4 }) ?? doc;
  return doc;
}

/** All orders of a list (for out-of-order delivery). */
function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

describe('vote model', () => {
  it('single choice: the latest click wins; a double click and a redelivery count once', () => {
    const a = click(1000, 'a', { option: 0 });
    const b = click(1001, 'b', { option: 0 }); // double click
    expect(selection(run([a, b], false))).toEqual([0]);
    const doc = run([a], false)!;
    expect(applyClick(doc, a, { multiple: false, optionCount: 4 })).toBeNull(); // redelivered
    expect(selection(run([a, click(2000, 'c', { option: 2 })], false))).toEqual([2]);
    expect(selection(run([a, click(2000, 'c', 'retract')], false))).toEqual([]);
  });

  it('single and multiple choice: every delivery order of the same clicks ends the same', () => {
    const clicks = [
      click(1000, 'a', { option: 0 }),
      click(1001, 'b', { option: 1 }),
      click(1002, 'c', 'retract'),
      click(1003, 'd', { option: 2 }),
      click(1003, 'e', { option: 3 }), // same millisecond: the invocation id orders
    ];
    for (const multiple of [false, true]) {
      const expected = selection(run(clicks, multiple));
      expect(expected).toEqual(multiple ? [2, 3] : [3]);
      for (const order of permutations(clicks)) expect(selection(run(order, multiple))).toEqual(expected);
    }
  });

  it('a retract delivered before the older vote it follows still wins', () => {
    const vote = click(1000, 'a', { option: 1 });
    const retract = click(2000, 'b', 'retract');
    expect(selection(run([retract, vote], false))).toEqual([]);
    expect(selection(run([retract, vote], true))).toEqual([]);
  });

  it('multiple choice: clicking adds, never toggles off (double clicks are harmless)', () => {
    const doc = run(
      [click(1, 'a', { option: 0 }), click(2, 'b', { option: 0 }), click(3, 'c', { option: 2 })],
      true,
    );
    expect(selection(doc)).toEqual([0, 2]);
  });

  it('ignores options out of range', () => {
    expect(applyClick(null, click(1, 'a', { option: 4 }), { multiple: false, optionCount: 4 })).toBeNull();
    expect(applyClick(null, click(1, 'a', { option: -1 }), { multiple: true, optionCount: 4 })).toBeNull();
  });

  it('selectionChanged tells a real change from a re-stamp', () => {
    const d1 = run([click(1, 'a', { option: 0 })], true)!;
    const d2 = applyClick(d1, click(2, 'b', { option: 0 }), { multiple: true, optionCount: 4 })!;
    expect(d2).not.toBeNull();
    expect(selectionChanged(d1, d2)).toBe(false);
    const d3 = applyClick(d2, click(3, 'c', { option: 1 }), { multiple: true, optionCount: 4 })!;
    expect(selectionChanged(d2, d3)).toBe(true);
    expect(selectionChanged(null, d1)).toBe(true);
  });

  it('tally counts each user once and skips empty selections', () => {
    const t = tally(3, [
      { userId: 'u1', name: 'Ann', options: [0] },
      { userId: 'u2', name: 'Bob', options: [0, 2] },
      { userId: 'u3', name: 'Cy', options: [] },
      { userId: 'u1', name: 'Ann', options: [1] }, // the same user twice: the first document only
      { userId: 'u4', name: 'Di', options: [7] }, // out of range
    ]);
    expect(t).toEqual({
      counts: [2, 0, 1],
      voters: [['Ann', 'Bob'], [], ['Bob']],
      voterCount: 2,
      voteCount: 3,
    });
  });

  it('keys', () => {
    const pid = '0190a6b2-0000-7000-8000-000000000001';
    expect(voterOf(pid, voteKey(pid, 'user-1'))).toBe('user-1');
    expect(voterOf(pid, `poll/${pid}`)).toBeNull();
  });
});
