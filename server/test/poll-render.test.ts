import { describe, expect, it } from 'vitest';
import { MessageActionsInput } from '../src/domain/actions.js';
import { tally } from '../src/bots/poll/model.js';
import {
  parseActionValue,
  parseSurveyActionValue,
  pollActions,
  pollContent,
  resultContent,
  surveyQuestionActions,
  surveySummary,
  SUMMARY_MAX,
  type AnswerDoc,
  type PollDoc,
  type SurveyDoc,
} from '../src/bots/poll/render.js';

/**
 * What the poll bot shows (server/src/bots/poll/render.ts): the poll message (bars, counts, names or
 * not, closing time), its actions (valid as the platform checks them), the closed state and result
 * message, and the survey's DMs and summary.
 */

const POLL_ID = '0190a6b2-0000-7000-8000-0000000000aa';
const poll = (over: Partial<PollDoc> = {}): PollDoc => ({
  v: 1,
  id: POLL_ID,
  question: 'Lunch *today*?',
  options: ['Pizza', 'Sushi', 'Salad'],
  multiple: false,
  anonymous: false,
  creator_id: 'c',
  creator_name: 'Ann',
  channel_id: 'ch',
  topic_id: null,
  message_id: 'm',
  created_at: '2025-06-01T10:00:00.000Z',
  closes_at: '2025-06-01T12:00:00.000Z',
  closes_given: true,
  state: 'open',
  ...over,
});

describe('rendering', () => {
  const voters = [
    { userId: 'u1', name: 'Bob', options: [0] },
    { userId: 'u2', name: 'Cy_', options: [0] },
    { userId: 'u3', name: 'Di', options: [1] },
  ];

  it('an open poll: bars, counts, percentages, names, the closing time; valid actions', () => {
    const text = pollContent(poll(), voters);
    expect(text).toContain('📊 **Lunch \\*today\\*?**');
    expect(text).toContain('closes 2025-06-01 12:00 UTC');
    expect(text).toContain('**1. Pizza** · 2 votes · 67%\n`███████░░░` Bob, Cy\\_');
    expect(text).toContain('**2. Sushi** · 1 vote · 33%\n`███░░░░░░░` Di');
    expect(text).toContain('**3. Salad** · 0 votes · 0%\n`░░░░░░░░░░`');
    expect(text).toContain('**3 votes** · poll by Ann');
    const actions = pollActions(poll())!;
    expect(actions.map((a) => a.id)).toEqual(['vote-0', 'vote-1', 'vote-2', 'retract', 'close']);
    expect(MessageActionsInput.safeParse(actions).success).toBe(true);
    expect(parseActionValue((actions[1] as { value: string }).value)).toEqual({ pollId: POLL_ID, what: 1 });
    expect(parseActionValue(`${POLL_ID}:close`)).toEqual({ pollId: POLL_ID, what: 'close' });
    expect(parseActionValue('nonsense')).toBeNull();
  });

  it('anonymous hides the voters; multiple choice counts voters apart from votes', () => {
    const text = pollContent(poll({ anonymous: true, multiple: true }), [
      ...voters,
      { userId: 'u4', name: 'Ed', options: [0, 1, 2] },
    ]);
    expect(text).not.toMatch(/Bob|Di|Ed/);
    expect(text).toContain('votes are anonymous');
    expect(text).toContain('**6 votes** from 4 voters');
    expect(text).toContain('**1. Pizza** · 3 votes · 75%');
  });

  it('9 or 10 options are a select (with both controls, 3 actions in all)', () => {
    const options = Array.from({ length: 10 }, (_, i) => `Option ${i}`);
    const actions = pollActions(poll({ options }))!;
    expect(actions.map((a) => a.type)).toEqual(['select', 'button', 'button']);
    expect(MessageActionsInput.safeParse(actions).success).toBe(true);
    const eight = pollActions(poll({ options: options.slice(0, 8) }))!;
    expect(eight).toHaveLength(10);
    expect(MessageActionsInput.safeParse(eight).success).toBe(true);
  });

  it('a closed poll shows the frozen result, no buttons, and a result message', () => {
    const result = tally(3, voters);
    const closed = poll({ state: 'closed', closed_at: '2025-06-01T12:00:00.000Z', result });
    expect(pollActions(closed)).toBeNull();
    const text = pollContent(closed, []); // the stored result, not the (now deleted) votes
    expect(text).toContain('— closed');
    expect(text).toContain('🏆 **1. Pizza** · 2 votes');
    expect(text).toContain('🔒 Closed 2025-06-01 12:00 UTC · **3 votes**');
    const msg = resultContent(closed, result);
    expect(msg).toContain('📊 Poll closed: **Lunch \\*today\\*?**\n**3 votes** in all.');
    expect(msg).toContain('🏆 **Pizza** with 2 votes (67%)');
    expect(resultContent(closed, tally(3, []))).toContain('Nobody voted.');
    expect(resultContent(closed, tally(3, [voters[0]!, voters[2]!]))).toContain(
      'A tie between **Pizza**, **Sushi**',
    );
  });

  it('lists at most 15 names under an option', () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ userId: `u${i}`, name: `N${i}`, options: [0] }));
    expect(pollContent(poll(), many)).toContain('N14 and 5 more');
  });
});

describe('survey rendering', () => {
  const SID = '0190a6b2-0000-7000-8000-0000000000bb';
  const survey = (over: Partial<SurveyDoc> = {}): SurveyDoc => ({
    v: 1,
    id: SID,
    title: 'Retro',
    questions: [
      { text: 'What went well?', choices: null },
      { text: 'Mood?', choices: ['Good', 'Bad'] },
    ],
    anonymous: false,
    creator_id: 'c',
    creator_name: 'Ann',
    channel_id: 'ch',
    topic_id: null,
    place_name: '#team',
    participants: [
      { id: 'u1', name: 'Bob' },
      { id: 'u2', name: 'Cy' },
      { id: 'u3', name: 'Di' },
    ],
    created_at: '2025-06-01T10:00:00.000Z',
    closes_at: '2025-06-02T10:00:00.000Z',
    state: 'closed',
    closed_at: '2025-06-02T10:00:00.000Z',
    ...over,
  });

  it('choice questions have buttons whose values name survey, question and choice', () => {
    expect(surveyQuestionActions(survey(), 0)).toBeNull();
    const a = surveyQuestionActions(survey(), 1)!;
    expect(MessageActionsInput.safeParse(a).success).toBe(true);
    expect(parseSurveyActionValue((a[1] as { value: string }).value)).toEqual({ surveyId: SID, q: 1, c: 1 });
  });

  it('summarizes answers with counts, names and who did not answer; anonymous hides names', () => {
    const answers = new Map<string, AnswerDoc>([
      ['u1', { name: 'Bob', answers: ['Shipping *fast*', 'Good'], asked: [] }],
      ['u2', { name: 'Cy', answers: [null], asked: [] }],
    ]);
    const text = surveySummary(survey(), answers);
    expect(text).toContain('1 of 3 members of \\#team answered every question, 1 in part');
    expect(text).toContain('- Bob: Shipping \\*fast\\*');
    expect(text).toContain('- Good · 1 · 100% `██████████` · Bob');
    expect(text).toContain('- Bad · 0 · 0%');
    expect(text).toContain('Not answered: Di');
    const anon = surveySummary(survey({ anonymous: true }), answers);
    expect(anon).not.toMatch(/Bob|Cy|Di/);
    expect(anon).toContain('- Shipping \\*fast\\*');
  });

  it('stays under the size limit, saying how many answers it left out', () => {
    const participants = Array.from({ length: 500 }, (_, i) => ({ id: `u${i}`, name: `User ${i}` }));
    const answers = new Map<string, AnswerDoc>(
      participants.map((p) => [p.id, { name: p.name, answers: ['x'.repeat(1000), 'Good'], asked: [] }]),
    );
    const text = surveySummary(survey({ participants }), answers);
    expect(text.length).toBeLessThanOrEqual(SUMMARY_MAX + 500);
    expect(text).toMatch(/_\d+ text answers not shown \(the summary is at its size limit\)\._/);
    expect(text).toContain('- Good · 500 · 100%');
  });
});
