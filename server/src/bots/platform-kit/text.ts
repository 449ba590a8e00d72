/** Text helpers of the platform bots' messages (Markdown). */

/** Escapes Markdown's inline markup in text that comes from users (names, titles, questions). */
export function md(text: string): string {
  return text.replace(/([\\`*_[\]<>#|~])/g, '\\$1');
}

/** One line, at most `max` characters (an ellipsis marks a cut). */
export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

/** Every line of a member's text inside a quote block, so that it cannot break out of its place. */
export function quoteBlock(text: string): string {
  return text
    .split(/\r?\n/)
    .map((l) => `> ${l}`)
    .join('\n');
}

/** Cuts to at most `max` characters (an ellipsis marks a cut), never inside a surrogate pair. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** UTF-8 bytes of a value as JSON (what bot data counts against its 64 KB per document). */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Cuts to at most `maxBytes` UTF-8 bytes as JSON text (an ellipsis marks a cut). */
export function cutBytes(text: string, maxBytes: number): string {
  if (jsonBytes(text) <= maxBytes) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (jsonBytes(cut(text, mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  return cut(text, Math.max(1, lo));
}
