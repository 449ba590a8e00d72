import { words, wordSpans, type TextClause } from '../../storage/stores/search-text.js';

/**
 * Checking, ranking and snippets, in code, over the candidates the index found. The index decides
 * what can match; this decides what does (the same rules on both databases, whatever their
 * tokenizers make of odd text), how well (BM25-like), and shows where.
 */

/** Occurrences of a clause in a list of folded words: exact ones count 1, prefix-only ones ½. */
function occurrences(ws: readonly string[], c: TextClause): { count: number; at: number[] } {
  const n = c.words.length;
  const at: number[] = [];
  let count = 0;
  for (let i = 0; i + n <= ws.length; i++) {
    let ok = true;
    let exact = true;
    for (let j = 0; j < n && ok; j++) {
      const w = ws[i + j]!;
      const q = c.words[j]!;
      if (w === q) continue;
      if (c.prefix && j === n - 1 && w.startsWith(q)) exact = false;
      else ok = false;
    }
    if (ok) {
      at.push(i);
      count += exact ? 1 : 0.5;
    }
  }
  return { count, at };
}

export interface Field<T> {
  text(row: T): string;
  /** How much a match in this field counts (a title more than a description). */
  weight: number;
}

const K1 = 1.2;
const B = 0.75;
/**
 * Ranking reads this much of a text at most (a message may be 50,000 characters). A longer text whose
 * match lies further on is kept, as the index found it, with the lowest score.
 */
export const RANKED_CHARS = 10_000;

/**
 * The rows that match every clause (in any one of the fields each), each with its score: for each
 * clause and field, BM25's saturating term frequency with length normalization, weighted; plus a
 * bonus when the clauses appear in the query's order right next to each other. No clause (filters
 * only): every row, score 0.
 */
export function scoreRows<T>(rows: readonly T[], fields: Field<T>[], clauses: TextClause[]) {
  const split = rows.map((r) => fields.map((f) => words(f.text(r).slice(0, RANKED_CHARS))));
  const long = rows.map((r) => fields.some((f) => f.text(r).length > RANKED_CHARS));
  const avg = fields.map((_, i) =>
    Math.max(1, split.reduce((s, ws) => s + ws[i]!.length, 0) / (rows.length || 1)),
  );
  const out: { row: T; score: number }[] = [];
  rows.forEach((row, r) => {
    let score = 0;
    for (const c of clauses) {
      let found = false;
      fields.forEach((f, i) => {
        const ws = split[r]![i]!;
        const { count } = occurrences(ws, c);
        if (count === 0) return;
        found = true;
        score += (f.weight * (count * (K1 + 1))) / (count + K1 * (1 - B + (B * ws.length) / avg[i]!));
      });
      if (!found) {
        if (long[r]) out.push({ row, score: 0 });
        return;
      }
    }
    if (clauses.length > 1) {
      const all = { words: clauses.flatMap((c) => c.words), prefix: clauses.at(-1)!.prefix };
      if (fields.some((_, i) => occurrences(split[r]![i]!, all).count > 0)) score += 1;
    }
    out.push({ row, score });
  });
  return out;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

const SNIPPET_CHARS = 200;
const SNIPPET_BEFORE = 60;

/**
 * Up to ~200 characters of `text` around its first match, HTML-escaped, with every word of a match
 * wrapped in <mark>…</mark>, and … where it was cut. Safe to insert as HTML.
 */
export function snippet(full: string, clauses: TextClause[]): string {
  const text = full.slice(0, RANKED_CHARS);
  const spans = wordSpans(text);
  const ws = spans.map((s) => s.word);
  const marked = new Set<number>();
  for (const c of clauses)
    for (const i of occurrences(ws, c).at) for (let j = 0; j < c.words.length; j++) marked.add(i + j);
  const first = Math.min(...marked);
  let start = 0;
  if (Number.isFinite(first) && spans[first]!.start > SNIPPET_BEFORE) {
    // Start at a word boundary some way before the first match.
    const from = spans[first]!.start - SNIPPET_BEFORE;
    start = spans.find((s) => s.start >= from)?.start ?? spans[first]!.start;
  }
  let end = Math.min(text.length, start + SNIPPET_CHARS);
  const cut = spans.find((s) => s.start < end && s.end > end); // do not cut a word in two
  if (cut) end = cut.start;
  let out = start > 0 ? '…' : '';
  let pos = start;
  spans.forEach((s, i) => {
    if (!marked.has(i) || s.start < pos || s.end > end) return;
    out += `${escapeHtml(text.slice(pos, s.start))}<mark>${escapeHtml(text.slice(s.start, s.end))}</mark>`;
    pos = s.end;
  });
  out += escapeHtml(text.slice(pos, end));
  return end < full.length ? `${out.trimEnd()}…` : out;
}
