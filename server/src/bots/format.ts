/** Small text helpers shared by the built-in bots' replies (Markdown). */

/** Escapes Markdown's inline markup in text that comes from users (names, titles). */
export function md(text: string): string {
  return text.replace(/([\\`*_[\]<>#|~])/g, '\\$1');
}

/** One line, at most `max` characters (an ellipsis marks a cut). */
export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

/**
 * A search snippet (HTML-escaped, matches in <mark>) as Markdown: the matched words in bold, the rest
 * unescaped and then Markdown-escaped.
 */
export function snippetToMarkdown(snippet: string): string {
  const unescape = (s: string) =>
    s
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&');
  return snippet
    .split(/(<mark>[\s\S]*?<\/mark>)/)
    .map((part) => {
      const m = /^<mark>([\s\S]*)<\/mark>$/.exec(part);
      return m ? `**${md(unescape(m[1]!))}**` : md(unescape(part));
    })
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The short reference of an id: its last 8 characters (ids are UUIDv7, whose first characters are a
 * timestamp and the same for everything created in the same minute; the end is random).
 */
export const shortId = (id: string): string => id.slice(-8);

/** Splits command arguments on whitespace, keeping "quoted parts" together (quotes removed). */
export function splitArgs(args: string): string[] {
  const out: string[] = [];
  for (const m of args.matchAll(/"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2]!);
  return out;
}
