import { AppError } from '../../domain/errors.js';

/**
 * Command arguments of the platform bots: words, "quoted texts" (straight or typographic quotes, as
 * phones and macOS type them) and `name:value` options. A quoted text keeps its spaces and may contain
 * a colon; an unquoted `name:value` word is an option.
 */

export interface Token {
  text: string;
  quoted: boolean;
}

const OPEN = '"“”„«»';

export function tokenize(args: string): Token[] {
  const out: Token[] = [];
  const s = args;
  let i = 0;
  /** The index of the quote closing the one at `at`. */
  const closing = (at: number): number => {
    let j = at + 1;
    while (j < s.length && !OPEN.includes(s[j]!)) j++;
    if (j >= s.length) throw new AppError('invalid_input', `A quote is not closed: ${s.slice(at, at + 40)}`);
    return j;
  };
  while (i < s.length) {
    if (/\s/.test(s[i]!)) {
      i++;
      continue;
    }
    if (OPEN.includes(s[i]!)) {
      const j = closing(i);
      out.push({ text: s.slice(i + 1, j).trim(), quoted: true });
      i = j + 1;
      continue;
    }
    // A word; an option's value may be quoted (name:"a b c").
    let text = '';
    while (i < s.length && !/\s/.test(s[i]!)) {
      if (OPEN.includes(s[i]!) && text.endsWith(':')) {
        const j = closing(i);
        text += s.slice(i + 1, j).trim();
        i = j + 1;
      } else {
        text += s[i];
        i++;
      }
    }
    out.push({ text, quoted: false });
  }
  return out;
}

/** An unquoted `name:value` token as [name (lower case), value]; null otherwise. */
export function option(t: Token): [string, string] | null {
  if (t.quoted) return null;
  const m = /^([a-zA-Z][a-zA-Z_-]*):(.*)$/s.exec(t.text);
  return m ? [m[1]!.toLowerCase(), m[2]!] : null;
}

/** The first word and the rest of a command's arguments ("setup 09:30 …" → ["setup", "09:30 …"]). */
export function subcommand(args: string): [string, string] {
  const m = /^(\S+)\s*([\s\S]*)$/.exec(args.trim());
  return m ? [m[1]!.toLowerCase(), m[2]!.trim()] : ['', ''];
}
