import { invalid } from '../../domain/errors.js';
import { words, type TextClause } from '../../storage/stores/search-text.js';

/**
 * The search syntax (docs/SEARCH.md):
 *   deploy failed          every word, in any order
 *   "deploy failed"        a phrase: these words, in this order, next to each other
 *   depl                   the last word of the query also matches as a prefix (search while typing);
 *                          `word*` asks for a prefix anywhere (2 characters at least)
 *   in:#general in:<id>    only this channel (by name) or channel/topic/DM room (by id)
 *   from:@Ada from:@"Ada L" only messages of this user or bot (display name, e-mail or bot name), from:<id>
 *   before:2025-01-31      sent before that day (UTC); after:2025-01-01 sent after that day
 *   has:file               messages that link an uploaded file
 * Case and the accents of Latin letters never matter.
 */
export interface ParsedQuery {
  clauses: TextClause[];
  in: string[];
  from: string[];
  /** YYYY-MM-DD: created before that day starts / after that day ends (UTC). */
  before?: string;
  after?: string;
  hasFile: boolean;
}

const MAX_CLAUSES = 16;
/** A prefix shorter than this would match too much of the index to be useful (and be slow). */
const MIN_PREFIX = 2;
const FILTERS = new Set(['in', 'from', 'before', 'after', 'has']);
// A filter (key:value or key:"value"), a quoted phrase (closed or not: typing), or a bare word.
const LEXEME = /([a-z]+):(@?"[^"]*"?|\S*)|"([^"]*)"?|(\S+)/gi;

export function parseQuery(text: string): ParsedQuery {
  const out: ParsedQuery = { clauses: [], in: [], from: [], hasFile: false };
  let lastBare: TextClause | undefined;
  for (const m of text.matchAll(LEXEME)) {
    const [, key, rawValue, phrase, bare] = m;
    lastBare = undefined;
    if (key !== undefined && rawValue !== undefined && FILTERS.has(key.toLowerCase())) {
      filter(
        out,
        key.toLowerCase(),
        rawValue
          .replace(/^(@?)"/, '$1')
          .replace(/"$/, '')
          .trim(),
      );
      continue;
    }
    if (phrase !== undefined) {
      addClause(out, { words: words(phrase), prefix: false });
      continue;
    }
    const token = bare ?? m[0];
    const w = words(token);
    const starred = token.endsWith('*') && (w.at(-1)?.length ?? 0) >= MIN_PREFIX;
    const clause = { words: w, prefix: starred };
    if (addClause(out, clause)) lastBare = clause;
  }
  // Search while typing: the last word typed may not be finished yet.
  if (lastBare && lastBare.words.at(-1)!.length >= MIN_PREFIX) lastBare.prefix = true;
  if (
    out.clauses.length === 0 &&
    !out.in.length &&
    !out.from.length &&
    !out.before &&
    !out.after &&
    !out.hasFile
  )
    throw invalid('query', 'has no words to search for (letters or digits) and no filter');
  return out;
}

function addClause(out: ParsedQuery, clause: TextClause): boolean {
  if (clause.words.length === 0) return false;
  if (out.clauses.length >= MAX_CLAUSES)
    throw invalid('query', `has more than ${MAX_CLAUSES} words or phrases; quote a phrase or narrow it`);
  out.clauses.push(clause);
  return true;
}

function filter(out: ParsedQuery, key: string, value: string): void {
  if (value === '') throw invalid('query', `${key}: needs a value`);
  switch (key) {
    case 'in':
      out.in.push(value);
      return;
    case 'from':
      out.from.push(value);
      return;
    case 'has':
      if (value.toLowerCase() !== 'file') throw invalid('query', `has:${value} is not known; use has:file`);
      out.hasFile = true;
      return;
    default: {
      if (!isDate(value)) throw invalid('query', `${key}:${value} is not a date such as 2025-01-31`);
      if (key === 'before') out.before = value;
      else out.after = value;
    }
  }
}

function isDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
}

/** The first instant after the given day (UTC), as the start of an ISO timestamp. */
export function dayAfter(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}
