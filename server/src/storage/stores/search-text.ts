/**
 * How search sees text, shared by the index (the PostgreSQL folding function does the same steps), the query parser and the ranking/snippet code, so that all three cut and fold words
 * the same way:
 * - a word is a run of letters, digits and combining marks (everything else separates words, as in
 *   SQLite FTS5's unicode61 tokenizer);
 * - folding lower-cases and takes the accents off Latin letters (é → e, Ü → u, ñ → n), as
 *   `remove_diacritics 2` does on SQLite (see `fold`).
 */

const WORD = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * Lower-cases and takes the accents off Latin letters: decomposed (NFD), the combining marks that
 * follow an ASCII letter go, the rest is composed again (NFC). Other scripts keep their marks (й stays
 * й), as SQLite's unicode61 does. PostgreSQL runs the same steps (`pgFold`).
 */
export function fold(text: string): string {
  return text.normalize('NFD').replace(LATIN_MARKS, '$1').normalize('NFC').toLowerCase();
}
const LATIN_MARKS = /([A-Za-z])[\u0300-\u036f]+/g;

const ASCII = /^[\u0020-\u007e\t\n\r]*$/; // printable ASCII and line breaks: no folding to do
const ASCII_WORD = /[a-z0-9]+/g;
const ASCII_WORD_ANY_CASE = /[A-Za-z0-9]+/g;

/** The folded words of a text, in order. (Plain ASCII, most text, takes a path ~3× faster.) */
export function words(text: string): string[] {
  if (ASCII.test(text)) return text.toLowerCase().match(ASCII_WORD) ?? [];
  return fold(text).match(WORD) ?? [];
}

/** The words of a text with where each one is in the original (for snippets). */
export function wordSpans(text: string): { word: string; start: number; end: number }[] {
  const out: { word: string; start: number; end: number }[] = [];
  if (ASCII.test(text)) {
    for (const m of text.matchAll(ASCII_WORD_ANY_CASE))
      out.push({ word: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length });
    return out;
  }
  for (const m of text.matchAll(WORD)) {
    for (const w of fold(m[0]).match(WORD) ?? [])
      out.push({ word: w, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

/**
 * One clause of a text query: words that must follow each other (a phrase; one word is a phrase of
 * one), the last of which may be a prefix. A query is the AND of its clauses.
 */
export interface TextClause {
  words: string[];
  prefix: boolean;
}

/**
 * Whether a message has every clause (its words next to each other, in order, the last one also as a
 * prefix when the clause says so): what the FTS5 query of the clauses finds, decided in code, for the
 * messages not indexed yet (migration 0007). Every search on SQLite checks them (up to a batch, the
 * same ones search after search until they are indexed), so the words of each are kept by message id
 * and a text is cut and folded once (folding non-ASCII text is what costs: ~10 µs a short message).
 * Bounded: it starts afresh past `max` messages.
 */
export class PendingMatcher {
  readonly #words = new Map<string, { content: string; words: string[] }>();
  constructor(private readonly max = 2048) {}

  matches(id: string, content: string, clauses: readonly TextClause[]): boolean {
    let entry = this.#words.get(id);
    if (!entry || entry.content !== content) {
      if (this.#words.size >= this.max) this.#words.clear();
      entry = { content, words: words(content) };
      this.#words.set(id, entry);
    }
    const ws = entry.words;
    return clauses.every((c) => hasClause(ws, c));
  }
}

function hasClause(ws: readonly string[], c: TextClause): boolean {
  const n = c.words.length;
  for (let i = 0; i + n <= ws.length; i++) {
    let j = 0;
    for (; j < n; j++) {
      const w = ws[i + j]!;
      const q = c.words[j]!;
      if (w !== q && !(c.prefix && j === n - 1 && w.startsWith(q))) break;
    }
    if (j === n) return true;
  }
  return false;
}

/** Searched columns of each table (SQLite: the FTS5 table `<table>_fts` indexes them). */
export const SEARCHED_COLUMNS = {
  messages: ['content'],
  users: ['display_name', 'email'],
  tasks: ['title', 'description'],
} as const;

/**
 * PostgreSQL: `fold` in SQL, for the text expression `text` (plain ASCII skips the accent steps), and
 * ASCII punctuation to spaces (PostgreSQL's parser would otherwise keep e-mails, URLs and hyphenated
 * words whole). Spelled out with built-in IMMUTABLE functions rather than wrapped in a function of ours:
 * a generated column does not inline a SQL function, and planning one on every INSERT cost more than
 * everything else the index adds (measured: 380 → 200 µs an insert under load; 45 without the index).
 */
export function pgFold(text: string): string {
  const unaccented = `normalize(regexp_replace(normalize(${text}, NFD), '([A-Za-z])[\\u0300-\\u036f]+', '\\1', 'g'), NFC)`;
  const folded = `case when octet_length(${text}) = char_length(${text}) then ${text} else ${unaccented} end`;
  return `lower(regexp_replace(${folded}, '[!-/:-@[-\`{-~]', ' ', 'g'))`;
}

/**
 * PostgreSQL: the indexed `tsvector` of a row (the GIN index of users and tasks is on this very
 * expression, so queries must spell it the same way; messages store it as `search_vector`).
 */
export function pgSearchVector(table: keyof typeof SEARCHED_COLUMNS, alias = ''): string {
  const p = alias ? `${alias}.` : '';
  const text = SEARCHED_COLUMNS[table].map((c) => `coalesce(${p}${c}, '')`).join(` || ' ' || `);
  return `to_tsvector('simple'::regconfig, ${pgFold(`(${text})`)})`;
}
