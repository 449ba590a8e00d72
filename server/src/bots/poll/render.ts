import type { MessageAction } from '../../domain/actions.js';
import { md, oneLine } from '../format.js';
import { tally as countVotes, type Tally, type Voter } from './model.js';

/**
 * What the poll bot shows (pure): the poll message (text with bars and counts, and its buttons), its
 * closed state, the result message posted when it closes; the survey's DMs and the creator's summary.
 * Every piece of user text is Markdown-escaped.
 */

/** A poll as stored in its bot data document `poll/<id>`. */
export interface PollDoc {
  v: 1;
  id: string;
  question: string;
  options: string[];
  multiple: boolean;
  anonymous: boolean;
  creator_id: string;
  creator_name: string;
  channel_id: string | null;
  topic_id: string | null;
  /** The poll message; null only between storing the poll and posting it. */
  message_id: string | null;
  created_at: string;
  closes_at: string;
  /** Whether the creator gave --closes (shown), or the poll closes after the default time. */
  closes_given: boolean;
  state: 'open' | 'closed';
  closed_at?: string;
  /** 'time' when it closed at closes_at, else the user who closed it. */
  closed_by?: string;
  /** The count, frozen when the poll closed. */
  result?: Tally;
}

/** Options up to this many are buttons; more (up to 10) are a select, so that both controls still fit. */
export const MAX_OPTION_BUTTONS = 8;
/** Names shown under an option (then "and N more"). */
export const NAMES_SHOWN = 15;
const BAR = 10;

export function bar(count: number, total: number): string {
  const filled = total === 0 ? 0 : Math.round((count / total) * BAR);
  return '█'.repeat(filled) + '░'.repeat(BAR - filled);
}

export const percent = (count: number, total: number): number =>
  total === 0 ? 0 : Math.round((count / total) * 100);

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "2025-06-01 14:00 UTC" (a bot does not know the reader's time zone). */
export function utc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** Up to NAMES_SHOWN names, then "and N more" (`total`: how many there are; a frozen result keeps 15). */
function nameList(names: string[], total = names.length): string {
  const shown = names.slice(0, NAMES_SHOWN).map(md).join(', ');
  const more = total - Math.min(names.length, NAMES_SHOWN);
  return more > 0 ? `${shown} and ${more} more` : shown;
}

/**
 * The count to keep in the poll's document when it closes: names only as many as are shown, none for
 * an anonymous poll (a document holds at most 64 KB).
 */
export function frozenResult(poll: Pick<PollDoc, 'anonymous'>, t: Tally): Tally {
  return { ...t, voters: t.voters.map((names) => (poll.anonymous ? [] : names.slice(0, NAMES_SHOWN))) };
}

/** The action value of a poll button: the poll id and what the click means. */
export const actionValue = (pollId: string, what: number | 'retract' | 'close'): string =>
  `${pollId}:${what}`;

/** A click's value → poll id and meaning; null for a value this bot did not make. */
export function parseActionValue(
  value: string,
): { pollId: string; what: number | 'retract' | 'close' } | null {
  const m = /^([0-9a-f-]{36}):(\d{1,2}|retract|close)$/.exec(value);
  if (!m) return null;
  const what = m[2] === 'retract' || m[2] === 'close' ? m[2] : Number(m[2]);
  return { pollId: m[1]!, what };
}

/** The poll message's actions: none once closed. */
export function pollActions(poll: PollDoc): MessageAction[] | null {
  if (poll.state === 'closed') return null;
  const actions: MessageAction[] = [];
  if (poll.options.length <= MAX_OPTION_BUTTONS) {
    poll.options.forEach((label, i) =>
      actions.push({
        type: 'button',
        id: `vote-${i}`,
        label,
        value: actionValue(poll.id, i),
        style: 'primary',
      }),
    );
  } else {
    actions.push({
      type: 'select',
      id: 'vote',
      placeholder: poll.multiple ? 'Add a choice…' : 'Vote…',
      options: poll.options.map((label, i) => ({ label, value: actionValue(poll.id, i) })),
    });
  }
  actions.push({
    type: 'button',
    id: 'retract',
    label: poll.multiple ? 'Retract my votes' : 'Retract my vote',
    value: actionValue(poll.id, 'retract'),
    style: 'default',
  });
  actions.push({
    type: 'button',
    id: 'close',
    label: 'Close poll (creator)',
    value: actionValue(poll.id, 'close'),
    style: 'danger',
  });
  return actions;
}

/** The summary line: "**100 votes** from 100 voters" (single choice: "**100 votes**"). */
export function totals(poll: Pick<PollDoc, 'multiple'>, t: Tally): string {
  const votes = `**${plural(t.voteCount, 'vote')}**`;
  return poll.multiple ? `${votes} from ${plural(t.voterCount, 'voter')}` : votes;
}

/** The poll message's text, open or closed. `voters` are the stored votes (ignored once closed). */
export function pollContent(poll: PollDoc, voters: readonly Voter[]): string {
  const t = poll.state === 'closed' && poll.result ? poll.result : countVotes(poll.options.length, voters);
  const lines: string[] = [];
  lines.push(`📊 **${md(poll.question)}**${poll.state === 'closed' ? ' — closed' : ''}`);
  const how = [
    poll.multiple ? 'Choose any number of options' : 'Choose one option',
    poll.anonymous ? 'votes are anonymous' : 'votes are shown with names',
  ];
  if (poll.state === 'open' && poll.closes_given) how.push(`closes ${utc(poll.closes_at)}`);
  lines.push(`_${how.join(' · ')}_`);
  const top = Math.max(0, ...t.counts);
  poll.options.forEach((label, i) => {
    const n = t.counts[i] ?? 0;
    const won = poll.state === 'closed' && n > 0 && n === top ? '🏆 ' : '';
    lines.push('');
    lines.push(`${won}**${i + 1}. ${md(label)}** · ${plural(n, 'vote')} · ${percent(n, t.voterCount)}%`);
    const who = !poll.anonymous && n > 0 ? ` ${nameList(t.voters[i] ?? [], n)}` : '';
    lines.push(`\`${bar(n, t.voterCount)}\`${who}`);
  });
  lines.push('');
  if (poll.state === 'closed') {
    lines.push(
      `🔒 Closed ${poll.closed_at ? utc(poll.closed_at) : ''} · ${totals(poll, t)} · poll by ${md(poll.creator_name)}`,
    );
  } else {
    lines.push(`${totals(poll, t)} · poll by ${md(poll.creator_name)}`);
  }
  return lines.join('\n');
}

/** The message posted in the poll's place when it closes. */
export function resultContent(poll: PollDoc, t: Tally): string {
  const lines = [`📊 Poll closed: **${md(poll.question)}**`, `${totals(poll, t)} in all.`];
  const top = Math.max(0, ...t.counts);
  if (t.voterCount === 0) lines.push('Nobody voted.');
  else {
    const winners = poll.options.filter((_, i) => t.counts[i] === top);
    lines.push(
      winners.length === 1
        ? `🏆 **${md(winners[0]!)}** with ${plural(top, 'vote')} (${percent(top, t.voterCount)}%)`
        : `🏆 A tie between ${winners.map((w) => `**${md(w)}**`).join(', ')} with ${plural(top, 'vote')} each`,
    );
    const order = poll.options.map((label, i) => ({ label, n: t.counts[i] ?? 0 })).sort((a, b) => b.n - a.n);
    for (const o of order) lines.push(`- ${md(o.label)}: ${o.n} (${percent(o.n, t.voterCount)}%)`);
  }
  return lines.join('\n');
}

// --- survey ------------------------------------------------------------------------------------

export interface SurveyQuestionDoc {
  text: string;
  choices: string[] | null;
}

/** A survey as stored in its bot data document `survey/<id>`. */
export interface SurveyDoc {
  v: 1;
  id: string;
  title: string;
  questions: SurveyQuestionDoc[];
  anonymous: boolean;
  creator_id: string;
  creator_name: string;
  channel_id: string | null;
  topic_id: string | null;
  /** Where it was started, for the DMs ("#general"). */
  place_name: string;
  /** The members asked (users, not bots), with their names. */
  participants: { id: string; name: string }[];
  created_at: string;
  closes_at: string;
  state: 'open' | 'closed';
  closed_at?: string;
}

/** One participant's answers, `survey/<id>/a/<user id>`: one per question, in order. */
export interface AnswerDoc {
  name: string;
  answers: (string | null)[];
  /** The DM message of each question asked (to mark it answered). */
  asked: string[];
}

export const SURVEY_SKIP = 'skip';

/** The DM asking question `q` (0-based) of a survey. */
export function surveyQuestionContent(s: SurveyDoc, q: number): string {
  const question = s.questions[q]!;
  const head =
    q === 0
      ? `📝 **${md(s.title)}** — a survey from ${md(s.creator_name)} in ${md(s.place_name)}, open until ${utc(s.closes_at)}` +
        (s.anonymous ? ' (anonymous: your name is not shown with your answers)' : '') +
        '\n\n'
      : '';
  const how = question.choices
    ? 'Choose an answer below.'
    : `Reply in this conversation with your answer (or \`${SURVEY_SKIP}\` to leave it out).`;
  return `${head}**Question ${q + 1} of ${s.questions.length}:** ${md(question.text)}\n_${how}_`;
}

/** The buttons of a choice question (value: survey id, question, choice). */
export function surveyQuestionActions(s: SurveyDoc, q: number): MessageAction[] | null {
  const question = s.questions[q]!;
  if (!question.choices) return null;
  return question.choices.map((label, c) => ({
    type: 'button' as const,
    id: `answer-${c}`,
    label,
    value: `${s.id}:${q}:${c}`,
    style: 'default' as const,
  }));
}

export function parseSurveyActionValue(value: string): { surveyId: string; q: number; c: number } | null {
  const m = /^([0-9a-f-]{36}):(\d{1,2}):(\d{1,2})$/.exec(value);
  return m ? { surveyId: m[1]!, q: Number(m[2]), c: Number(m[3]) } : null;
}

/** The question's DM once answered (buttons removed). */
export function surveyAnsweredContent(s: SurveyDoc, q: number, answer: string | null): string {
  const question = s.questions[q]!;
  const a = answer === null ? '_(left out)_' : `**${md(oneLine(answer, 200))}**`;
  return `${q === 0 ? `📝 **${md(s.title)}**\n` : ''}**Question ${q + 1} of ${s.questions.length}:** ${md(question.text)}\n✅ Your answer: ${a}`;
}

export const surveyThanksContent = (s: SurveyDoc): string =>
  `🙏 Thank you — your answers to **${md(s.title)}** are in. ${md(s.creator_name)} gets the results on ${utc(s.closes_at)}.`;

/** Text of the creator's summary at most this long (a message holds 50,000 characters). */
export const SUMMARY_MAX = 40_000;
const ANSWER_SHOWN = 300;

/** The summary DMed to the survey's creator when it closes. */
export function surveySummary(s: SurveyDoc, answers: ReadonlyMap<string, AnswerDoc>): string {
  const out: string[] = [`📝 **Survey results: ${md(s.title)}**`];
  const all = s.participants.length;
  const complete = s.participants.filter((p) => {
    const a = answers.get(p.id);
    return a !== undefined && a.answers.length >= s.questions.length;
  });
  const partial = s.participants.filter((p) => {
    const a = answers.get(p.id);
    return a !== undefined && a.answers.length > 0 && a.answers.length < s.questions.length;
  });
  out.push(
    `${complete.length} of ${all} ${all === 1 ? 'member' : 'members'} of ${md(s.place_name)} answered every question` +
      (partial.length ? `, ${partial.length} in part` : '') +
      ` · closed ${utc(s.closed_at ?? s.closes_at)}`,
  );
  let length = out.join('\n').length;
  let cut = 0;
  const push = (line: string) => {
    out.push(line);
    length += line.length + 1;
  };
  s.questions.forEach((q, i) => {
    push('');
    push(`**${i + 1}. ${md(q.text)}**`);
    const given = s.participants
      .map((p) => ({ p, a: answers.get(p.id)?.answers[i] }))
      .filter((x): x is { p: { id: string; name: string }; a: string } => typeof x.a === 'string');
    if (given.length === 0) {
      push('_No answers._');
    } else if (q.choices) {
      q.choices.forEach((c) => {
        const chose = given.filter((g) => g.a === c);
        const n = chose.length;
        const who = !s.anonymous && n > 0 ? ` · ${nameList(chose.map((g) => g.p.name))}` : '';
        push(`- ${md(c)} · ${n} · ${percent(n, given.length)}% \`${bar(n, given.length)}\`${who}`);
      });
    } else {
      for (const g of given) {
        const text = md(oneLine(g.a, ANSWER_SHOWN));
        const line = s.anonymous ? `- ${text}` : `- ${md(g.p.name)}: ${text}`;
        if (length + line.length + 1 > SUMMARY_MAX) cut++;
        else push(line);
      }
    }
  });
  if (cut > 0) out.push('', `_${plural(cut, 'text answer')} not shown (the summary is at its size limit)._`);
  if (!s.anonymous) {
    const missing = s.participants.filter((p) => !answers.get(p.id)?.answers.length).map((p) => p.name);
    if (missing.length) out.push('', `Not answered: ${nameList(missing)}`);
  }
  return out.join('\n');
}
