import { AppError } from '../../domain/errors.js';

/**
 * Parsing of `/poll` and `/survey` (docs/bots/POLL.md): quoted arguments,
 * flags, and every limit with an error that says what to change. Pure: no I/O, no clock (the caller
 * passes `now`), so it is unit-tested as it is.
 */

export const POLL_LIMITS = {
  question: 300,
  /** Options of a poll (also what one message's actions allow: 10). */
  minOptions: 2,
  maxOptions: 10,
  /** An option is a button or select label (docs/ACTIONS.md: 75 characters). */
  option: 75,
  minClosesMs: 60_000,
  maxClosesMs: 30 * 86_400_000,
  /** A poll without --closes closes after this long (its votes are bot data: they must not stay forever). */
  defaultOpenMs: 30 * 86_400_000,
} as const;

export const SURVEY_LIMITS = {
  title: 300,
  minQuestions: 1,
  maxQuestions: 10,
  question: 300,
  minChoices: 2,
  maxChoices: 10,
  choice: 75,
  /** A text answer is kept up to this many characters (the rest is cut, with an ellipsis). */
  answer: 1000,
  /** A survey goes to at most this many members (each is a DM conversation and a bot data key). */
  maxParticipants: 500,
  defaultClosesMs: 86_400_000,
} as const;

const fail = (message: string) => new AppError('invalid_input', message);

/** One argument of a command line: its text, and whether it was quoted (a quoted "--x" is not a flag). */
export interface Arg {
  text: string;
  quoted: boolean;
}

/**
 * Double quotes, straight or the typographic ones phones substitute. Single quotes are not quotes
 * (apostrophes: "What's for lunch?").
 */
const QUOTES: Record<string, string> = { '"': '"', '“': '”', '„': '“', '”': '”' };

/**
 * Splits a command line into arguments: whitespace separates, "straight" or “curly” double quotes
 * group (a backslash escapes a quote inside). An unterminated quote is an error, not a guess.
 */
export function tokenize(line: string): Arg[] {
  const out: Arg[] = [];
  let i = 0;
  const n = line.length;
  while (i < n) {
    const ch = line[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const close = QUOTES[ch];
    // Only a quote at the start of an argument opens one (a"b is one word).
    if (close !== undefined) {
      let text = '';
      let j = i + 1;
      let closed = false;
      while (j < n) {
        const c = line[j]!;
        if (
          c === '\\' &&
          j + 1 < n &&
          (line[j + 1] === close || line[j + 1] === ch || line[j + 1] === '\\')
        ) {
          text += line[j + 1];
          j += 2;
          continue;
        }
        if (c === close || (close === '”' && c === '"') || (ch === '"' && c === '”')) {
          closed = true;
          j++;
          break;
        }
        text += c;
        j++;
      }
      if (!closed) {
        throw fail(
          `A quote is not closed: ${ch}${text.slice(0, 40)}${text.length > 40 ? '…' : ''} (close it with ${close})`,
        );
      }
      out.push({ text, quoted: true });
      i = j;
      continue;
    }
    let j = i;
    while (j < n && !/\s/.test(line[j]!)) j++;
    out.push({ text: line.slice(i, j), quoted: false });
    i = j;
  }
  return out;
}

/**
 * A duration such as `90m`, `2h`, `1h30m`, `3d`, `1w` (units s, m/min, h, d, w; several in a row add up).
 * Returns milliseconds; throws a clear error for anything else.
 */
export function parseDuration(text: string): number {
  const t = text.trim().toLowerCase();
  const units: Record<string, number> = {
    s: 1000,
    sec: 1000,
    m: 60_000,
    min: 60_000,
    h: 3_600_000,
    hr: 3_600_000,
    d: 86_400_000,
    w: 7 * 86_400_000,
  };
  const re = /(\d{1,6})\s*(sec|min|hr|s|m|h|d|w)/gy;
  let ms = 0;
  let end = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(t)) !== null) {
    ms += Number(m[1]) * units[m[2]!]!;
    end = re.lastIndex;
  }
  if (t === '' || end !== t.length) {
    throw fail(`--closes takes a duration such as 30m, 2h, 1h30m, 3d or 1w (not "${text}")`);
  }
  return ms;
}

/** Human text of a duration (for replies): "2 h 30 min", "3 d". */
export function formatDuration(ms: number): string {
  const parts: string[] = [];
  let rest = Math.round(ms / 60_000);
  const d = Math.floor(rest / 1440);
  rest -= d * 1440;
  const h = Math.floor(rest / 60);
  const min = rest - h * 60;
  if (d) parts.push(`${d} d`);
  if (h) parts.push(`${h} h`);
  if (min || parts.length === 0) parts.push(`${min} min`);
  return parts.join(' ');
}

function checkCloses(ms: number, what: string): void {
  if (ms < POLL_LIMITS.minClosesMs) throw fail(`--closes: ${what} must stay open at least 1 minute`);
  if (ms > POLL_LIMITS.maxClosesMs) throw fail(`--closes: ${what} may stay open at most 30 days`);
}

interface Flags {
  multiple: boolean;
  anonymous: boolean;
  closesMs: number | null;
  rest: Arg[];
}

/** Takes the flags out of the arguments; `allowed` are the flags this command knows. */
function takeFlags(args: Arg[], allowed: readonly string[], usage: string): Flags {
  const out: Flags = { multiple: false, anonymous: false, closesMs: null, rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    // Phones turn "--" into an en or em dash.
    const flag = a.quoted ? null : /^(?:--|—|–)([a-z-]+)(?:=(.*))?$/i.exec(a.text);
    if (!flag) {
      out.rest.push(a);
      continue;
    }
    const name = flag[1]!.toLowerCase();
    if (!allowed.includes(name)) {
      throw fail(`Unknown option --${name}; ${usage} takes ${allowed.map((f) => `--${f}`).join(', ')}`);
    }
    if (name === 'multiple') out.multiple = true;
    else if (name === 'anonymous') out.anonymous = true;
    else if (name === 'closes') {
      let value = flag[2];
      if (value === undefined) {
        const next = args[i + 1];
        if (!next) throw fail('--closes needs a duration, e.g. --closes 2h');
        value = next.text;
        i++;
      }
      out.closesMs = parseDuration(value);
    }
  }
  return out;
}

function checkText(text: string, max: number, what: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t === '') throw fail(`${what} must not be empty`);
  if (t.length > max) throw fail(`${what} is ${t.length} characters long; at most ${max} are allowed`);
  return t;
}

function checkOptions(raw: string[], min: number, max: number, maxLen: number, what: string): string[] {
  if (raw.length < min) throw fail(`${what}: give at least ${min} options (you gave ${raw.length})`);
  if (raw.length > max) throw fail(`${what}: at most ${max} options are allowed (you gave ${raw.length})`);
  const seen = new Set<string>();
  return raw.map((o, i) => {
    const t = checkText(o, maxLen, `Option ${i + 1}`);
    const k = t.toLowerCase();
    if (seen.has(k)) throw fail(`${what}: option "${t}" is given twice`);
    seen.add(k);
    return t;
  });
}

export interface PollSpec {
  question: string;
  options: string[];
  multiple: boolean;
  anonymous: boolean;
  /** null: no --closes (the poll closes after POLL_LIMITS.defaultOpenMs, or when its creator closes it). */
  closesMs: number | null;
}

export const POLL_USAGE = '/poll "Question" "Option A" "Option B" … [--multiple] [--anonymous] [--closes 2h]';

/** `/poll` arguments → a checked poll, or an error telling what is wrong. */
export function parsePoll(args: string): PollSpec {
  const f = takeFlags(tokenize(args), ['multiple', 'anonymous', 'closes'], '/poll');
  if (f.rest.length === 0) throw fail(`Ask a question: ${POLL_USAGE}`);
  const [q, ...opts] = f.rest.map((a) => a.text);
  const question = checkText(q!, POLL_LIMITS.question, 'The question');
  const options = checkOptions(
    opts,
    POLL_LIMITS.minOptions,
    POLL_LIMITS.maxOptions,
    POLL_LIMITS.option,
    'A poll',
  );
  if (f.closesMs !== null) checkCloses(f.closesMs, 'a poll');
  return { question, options, multiple: f.multiple, anonymous: f.anonymous, closesMs: f.closesMs };
}

export interface SurveyQuestion {
  text: string;
  /** null: answered in words (a DM reply); else answered with one of these buttons. */
  choices: string[] | null;
}

export interface SurveySpec {
  title: string;
  questions: SurveyQuestion[];
  anonymous: boolean;
  closesMs: number;
}

export const SURVEY_USAGE =
  '/survey "Title" "Question 1" "Question 2 [Yes|No|Maybe]" … [--anonymous] [--closes 1d]';

/** A survey question: `Text` (answered in words) or `Text [A|B|C]` (answered with a button). */
export function parseSurveyQuestion(raw: string, n: number): SurveyQuestion {
  const m = /^([\s\S]*?)\s*\[([^[\]]*)\]\s*$/.exec(raw);
  if (!m) return { text: checkText(raw, SURVEY_LIMITS.question, `Question ${n}`), choices: null };
  const text = checkText(m[1]!, SURVEY_LIMITS.question, `Question ${n}`);
  const choices = checkOptions(
    m[2]!.split('|'),
    SURVEY_LIMITS.minChoices,
    SURVEY_LIMITS.maxChoices,
    SURVEY_LIMITS.choice,
    `Question ${n}`,
  );
  return { text, choices };
}

/** `/survey` arguments → a checked survey, or an error telling what is wrong. */
export function parseSurvey(args: string): SurveySpec {
  const f = takeFlags(tokenize(args), ['anonymous', 'closes'], '/survey');
  if (f.rest.length === 0) throw fail(`Give the survey a title and questions: ${SURVEY_USAGE}`);
  const [t, ...qs] = f.rest.map((a) => a.text);
  const title = checkText(t!, SURVEY_LIMITS.title, 'The title');
  if (qs.length < SURVEY_LIMITS.minQuestions) throw fail(`Ask at least one question: ${SURVEY_USAGE}`);
  if (qs.length > SURVEY_LIMITS.maxQuestions) {
    throw fail(`A survey has at most ${SURVEY_LIMITS.maxQuestions} questions (you gave ${qs.length})`);
  }
  const questions = qs.map((q, i) => parseSurveyQuestion(q, i + 1));
  const closesMs = f.closesMs ?? SURVEY_LIMITS.defaultClosesMs;
  checkCloses(closesMs, 'a survey');
  return { title, questions, anonymous: f.anonymous, closesMs };
}
