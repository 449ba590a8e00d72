/**
 * Slack's incoming-webhook payload rendered to Workroom's Markdown, as far as it maps (docs/WEBHOOKS.md,
 * "Slack-compatible incoming webhooks"). Pure: the caller looks up the user ids of `<@id>` mentions first
 * (`mentionIds`) and passes their names in.
 *
 * What maps:
 * - mrkdwn: `<url|label>` → `[label](url)`, `<url>` → the URL, `<@id>` / `<@id|name>` → `@Name`,
 *   `<!channel>` / `<!everyone>` → `@all`, `<!here>` → `@here`, `<#C1|general>` → `#general`,
 *   `<!subteam^ID|@team>` → `@team`, `<!date^…|fallback>` → the fallback; `*bold*` → `**bold**`,
 *   `~strike~` → `~~strike~~` (outside code); `&amp;` `&lt;` `&gt;` decoded.
 * - `text`; `blocks` (section text and fields, header, context, divider, image, actions' link buttons,
 *   rich_text's text); `attachments` (pretext, a colour mark, author, title with its link, text, fields,
 *   image, footer; `fallback` when nothing else). When blocks render, they are the message and `text` is
 *   only their notification fallback (as in Slack).
 * What does not: interactive elements other than link buttons, `thread_ts`, `channel` (the URL's container
 * wins), per-message avatars (`icon_url`; `icon_emoji` is shown as text when overrides are allowed).
 */

export interface SlackRenderOptions {
  /** Names of users by id, for `<@id>` (those found in the webhook's organization). */
  names: ReadonlyMap<string, string>;
  /** Show `username` / `icon_emoji` of the payload (the webhook allows overrides). */
  overrides: boolean;
}

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: Json): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const list = (v: Json): Json[] => (Array.isArray(v) ? v : []);

/** The user ids `<@U…>` mentions name in any text of the payload (at most 50). */
export function mentionIds(payload: Json): string[] {
  const ids = new Set<string>();
  const walk = (v: Json, depth: number): void => {
    if (depth > 12 || ids.size >= 50) return;
    if (typeof v === 'string') {
      for (const m of v.matchAll(/<@([A-Za-z0-9-]{1,64})(?:\|[^>]*)?>/g)) ids.add(m[1]!);
    } else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (isObject(v)) for (const x of Object.values(v)) walk(x, depth + 1);
  };
  walk(payload, 0);
  return [...ids].slice(0, 50);
}

/** Slack's escaping of `&`, `<`, `>`. */
const decodeEntities = (s: string): string =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** One `<…>` of mrkdwn, rendered. */
function special(inner: string, names: ReadonlyMap<string, string>): string {
  const bar = inner.indexOf('|');
  const target = bar >= 0 ? inner.slice(0, bar) : inner;
  const label = bar >= 0 ? inner.slice(bar + 1) : undefined;
  if (target.startsWith('@')) {
    const id = target.slice(1);
    return `@${names.get(id) ?? label ?? id}`;
  }
  if (target.startsWith('#')) return `#${label ?? target.slice(1)}`;
  if (target.startsWith('!')) {
    const cmd = target.slice(1);
    if (cmd === 'channel' || cmd === 'everyone') return '@all';
    if (cmd === 'here') return '@here';
    if (cmd.startsWith('subteam^')) return label ?? '@team';
    return label ?? '';
  }
  const url = decodeEntities(target);
  if (!/^(https?:|mailto:|tel:)/i.test(url)) return decodeEntities(inner);
  return label === undefined ? url : `[${decodeEntities(label)}](${url})`;
}

/** Slack mrkdwn → Markdown. Code spans and blocks are kept as they are (entities decoded). */
export function mrkdwn(text: string, names: ReadonlyMap<string, string>): string {
  // Split into code (``` … ``` and ` … `) and prose; only prose is rewritten.
  const parts = text.split(/(```[\s\S]*?```|`[^`\n]*`)/g);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return decodeEntities(part);
      let out = part.replace(/<([^<>\n]{1,2000})>/g, (_m, inner: string) => special(inner, names));
      // *bold* → **bold**, ~strike~ → ~~strike~~ (Slack's single markers; not inside words).
      out = out.replace(/(^|[\s([{>"'])\*(?!\s)([^*\n]+?)(?<!\s)\*(?=$|[\s).,;:!?\]}"'])/gm, '$1**$2**');
      out = out.replace(/(^|[\s([{>"'])~(?!\s)([^~\n]+?)(?<!\s)~(?=$|[\s).,;:!?\]}"'])/gm, '$1~~$2~~');
      return decodeEntities(out);
    })
    .join('');
}

/** A text object of Block Kit (`plain_text` or `mrkdwn`). */
function textObject(v: Json, names: ReadonlyMap<string, string>): string | undefined {
  if (!isObject(v)) return undefined;
  const t = str(v.text);
  if (t === undefined) return undefined;
  return v.type === 'mrkdwn' ? mrkdwn(t, names) : t;
}

function richText(v: Json, depth = 0): string {
  if (depth > 8) return '';
  if (isObject(v)) {
    if (typeof v.text === 'string') return v.text;
    if (v.type === 'link' && typeof v.url === 'string') return v.url;
    if (v.type === 'user' && typeof v.user_id === 'string') return `@${v.user_id}`;
    if (v.type === 'emoji' && typeof v.name === 'string') return `:${v.name}:`;
    const inner = list(v.elements).map((e) => richText(e, depth + 1));
    return v.type === 'rich_text_list' ? inner.map((l) => `- ${l}`).join('\n') : inner.join('');
  }
  return '';
}

function blockText(b: Json, names: ReadonlyMap<string, string>): string | undefined {
  if (!isObject(b)) return undefined;
  switch (b.type) {
    case 'header': {
      const t = textObject(b.text, names);
      return t && `### ${t.replace(/\n/g, ' ')}`;
    }
    case 'section': {
      const lines: string[] = [];
      const t = textObject(b.text, names);
      if (t) lines.push(t);
      const fields = list(b.fields)
        .map((f) => textObject(f, names))
        .filter((f): f is string => f !== undefined);
      if (fields.length > 0) lines.push(fields.map((f) => `- ${f.replace(/\n/g, ' ')}`).join('\n'));
      const acc = b.accessory;
      if (isObject(acc) && acc.type === 'button' && typeof acc.url === 'string') {
        lines.push(`[${textObject(acc.text, names) ?? acc.url}](${acc.url})`);
      }
      return lines.join('\n\n') || undefined;
    }
    case 'context': {
      const parts = list(b.elements)
        .map((e) => (isObject(e) && e.type === 'image' ? str(e.alt_text) : textObject(e, names)))
        .filter((p): p is string => p !== undefined);
      return parts.length > 0 ? `_${parts.join(' · ')}_` : undefined;
    }
    case 'divider':
      return '---';
    case 'image': {
      const url = str(b.image_url);
      if (!url) return undefined;
      const title = textObject(b.title, names);
      return `![${str(b.alt_text) ?? title ?? 'image'}](${url})`;
    }
    case 'actions': {
      const links = list(b.elements)
        .filter((e): e is Record<string, Json> => isObject(e) && typeof e.url === 'string')
        .map((e) => `[${textObject(e.text, names) ?? String(e.url)}](${String(e.url)})`);
      return links.length > 0 ? links.join(' · ') : undefined;
    }
    case 'rich_text':
      return richText(b) || undefined;
    default:
      return undefined;
  }
}

const COLOR_MARKS: Record<string, string> = { good: '🟢', warning: '🟠', danger: '🔴' };

/** A colour as a mark at the start of the attachment: its hue's nearest coloured circle. */
export function colorMark(color: string | undefined): string | undefined {
  if (!color) return undefined;
  const named = COLOR_MARKS[color.toLowerCase()];
  if (named) return named;
  const m = /^#?([0-9a-f]{6}|[0-9a-f]{3})$/i.exec(color.trim());
  if (!m) return undefined;
  const hex = m[1]!.length === 3 ? [...m[1]!].map((c) => c + c).join('') : m[1]!;
  const [r, g, b] = [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255) as [number, number, number];
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  if (max - min < 0.12) return max > 0.85 ? '⚪' : '⚫';
  let h: number;
  if (max === r) h = ((g - b) / (max - min)) % 6;
  else if (max === g) h = (b - r) / (max - min) + 2;
  else h = (r - g) / (max - min) + 4;
  h = (h * 60 + 360) % 360;
  if (h < 20 || h >= 330) return '🔴';
  if (h < 45) return '🟠';
  if (h < 70) return '🟡';
  if (h < 170) return '🟢';
  if (h < 260) return '🔵';
  return '🟣';
}

function attachmentText(a: Json, names: ReadonlyMap<string, string>): string | undefined {
  if (!isObject(a)) return undefined;
  const md = (v: Json) => {
    const s = str(v);
    return s === undefined ? undefined : mrkdwn(s, names);
  };
  const out: string[] = [];
  const pretext = md(a.pretext);
  if (pretext) out.push(pretext);
  const body: string[] = [];
  const author = str(a.author_name);
  if (author) {
    const link = str(a.author_link);
    body.push(link ? `[${author}](${link})` : author);
  }
  const title = md(a.title);
  const mark = colorMark(str(a.color));
  if (title) {
    const link = str(a.title_link);
    const t = link ? `[${title.replace(/\n/g, ' ')}](${link})` : title;
    body.push(`${mark ? `${mark} ` : ''}**${t}**`);
  }
  const text = md(a.text);
  if (text) body.push(!title && mark ? `${mark} ${text}` : text);
  const fields = list(a.fields)
    .filter(isObject)
    .map((f) => {
      const ft = str(f.title);
      const fv = md(f.value) ?? '';
      return ft ? `**${ft}**: ${fv}` : fv;
    })
    .filter((f) => f !== '');
  if (fields.length > 0) body.push(fields.map((f) => `- ${f}`).join('\n'));
  const buttons = list(a.actions)
    .filter((x): x is Record<string, Json> => isObject(x) && typeof x.url === 'string')
    .map((x) => `[${str(x.text) ?? String(x.url)}](${String(x.url)})`);
  if (buttons.length > 0) body.push(buttons.join(' · '));
  const image = str(a.image_url);
  if (image) body.push(`![${title ?? 'image'}](${image})`);
  const footer = md(a.footer);
  if (footer) body.push(`_${footer.replace(/\n/g, ' ')}_`);
  if (body.length === 0) {
    const fallback = md(a.fallback);
    if (fallback) body.push(mark ? `${mark} ${fallback}` : fallback);
  }
  if (body.length > 0) out.push(body.join('\n'));
  return out.length > 0 ? out.join('\n\n') : undefined;
}

/** The message Slack's payload renders to; '' when it has nothing to show (Slack's `no_text`). */
export function renderSlackPayload(p: Record<string, Json>, o: SlackRenderOptions): string {
  const parts: string[] = [];
  const blocks = list(p.blocks)
    .map((b) => blockText(b, o.names))
    .filter((b): b is string => b !== undefined);
  if (blocks.length > 0) parts.push(blocks.join('\n\n'));
  else {
    const text = str(p.text);
    if (text) parts.push(p.mrkdwn === false ? decodeEntities(text) : mrkdwn(text, o.names));
  }
  for (const a of list(p.attachments)) {
    const t = attachmentText(a, o.names);
    if (t) parts.push(t);
  }
  if (parts.length === 0) return '';
  let message = parts.join('\n\n');
  if (o.overrides) {
    const who = str(p.username);
    const emoji = str(p.icon_emoji);
    const head = [emoji, who && `**${who}**`].filter(Boolean).join(' ');
    if (head) message = `${head}\n${message}`;
  }
  return message;
}

/** Whether a JSON object looks like Slack's payload (any of its message fields). */
export const isSlackPayload = (p: Record<string, Json>): boolean =>
  'text' in p || 'blocks' in p || 'attachments' in p;
