import DOMPurify from 'dompurify';
import { marked } from 'marked';

/**
 * Message text → safe HTML. Markdown is rendered by marked (GitHub-flavoured, single newlines kept as
 * line breaks, no raw HTML passes unsanitized) and *everything* is sanitized on output by DOMPurify,
 * including a bot's `content_html` that the server already sanitized on input: no script, handler,
 * iframe or javascript: URL from message content ever reaches the page.
 */
marked.use({ gfm: true, breaks: true, async: false });

const PURIFY = {
  ALLOWED_TAGS: [
    'a',
    'b',
    'blockquote',
    'br',
    'code',
    'del',
    'em',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'hr',
    'i',
    'img',
    'li',
    'ol',
    'p',
    'pre',
    's',
    'span',
    'strong',
    'sub',
    'sup',
    'table',
    'tbody',
    'td',
    'th',
    'thead',
    'tr',
    'ul',
  ],
  ALLOWED_ATTR: ['href', 'title', 'alt', 'src', 'class'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|\/(?!\/)|#)/i,
};

// Links open in a new tab without giving it this window.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  // An image from message content without a description is announced as an image, not skipped.
  if (node.tagName === 'IMG' && !node.hasAttribute('alt')) node.setAttribute('alt', 'Image');
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/** What a `#name` of message text stands for (the chat sets the lookup from its directory). */
export interface HashtagTarget {
  type: 'channel' | 'project' | 'task';
  id: string;
}
let lookup: (name: string) => HashtagTarget | null = () => null;
export function setHashtagLookup(fn: (name: string) => HashtagTarget | null): void {
  lookup = fn;
}

/** A link to a channel, project or task of this app (what the composer inserts for names with spaces). */
const INTERNAL = /^\/#\/(channel|project|task)\/([0-9a-f-]{36})$/;
/** `#name` at the start or after a character that is not part of a word (so `C#` stays text). */
const HASHTAG = /(^|[^\p{L}\p{N}_&#/])#([\p{L}\p{N}][\p{L}\p{N}_-]*)/gu;

function hashtagLink(t: HashtagTarget, text: string): HTMLAnchorElement {
  const a = document.createElement('a');
  a.href = `/#/${t.type}/${t.id}`;
  a.className = 'hashtag';
  a.dataset.hashtag = `${t.type}:${t.id}`;
  a.textContent = text;
  return a;
}

/**
 * Hashtags in sanitized HTML become preview links (`a.hashtag[data-hashtag]`, opened as a card by the
 * chat): `#name` in text (not in code or links) naming a channel or project, and links to a channel,
 * project or task of the app. Works on the DOM of already sanitized HTML and adds only these anchors.
 */
function linkHashtags(html: string): string {
  if (!html.includes('#')) return html;
  const t = document.createElement('template');
  t.innerHTML = html;
  for (const a of t.content.querySelectorAll('a[href]')) {
    const m = INTERNAL.exec(a.getAttribute('href') ?? '');
    if (!m) continue;
    a.classList.add('hashtag');
    a.setAttribute('data-hashtag', `${m[1]}:${m[2]}`);
    a.removeAttribute('target');
  }
  const walker = document.createTreeWalker(t.content, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) =>
      n.parentElement?.closest('a, code, pre') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) texts.push(n as Text);
  for (const node of texts) {
    const text = node.data;
    if (!text.includes('#')) continue;
    const parts: (string | Node)[] = [];
    let last = 0;
    for (const m of text.matchAll(HASHTAG)) {
      const target = lookup(m[2]!);
      if (!target) continue;
      const start = m.index + m[1]!.length;
      parts.push(text.slice(last, start), hashtagLink(target, `#${m[2]!}`));
      last = start + 1 + m[2]!.length;
    }
    if (parts.length === 0) continue;
    parts.push(text.slice(last));
    node.replaceWith(...parts);
  }
  return t.innerHTML;
}

/**
 * Hosts images may come from besides this server (WORKROOM_IMAGE_HOSTS): the server puts them in a meta
 * element of the page, next to the same list in its CSP (server/src/transports/http/static.ts).
 */
let imageHosts: readonly string[] | undefined;
function configuredImageHosts(): readonly string[] {
  imageHosts ??= (document.querySelector<HTMLMetaElement>('meta[name="workroom-image-hosts"]')?.content ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((h) => h.toLowerCase());
  return imageHosts;
}

/** Whether an image URL's host matches an allowed host as a CSP host source would (`name[:port]`, `*.name`). */
function hostAllowed(url: URL, hosts: readonly string[]): boolean {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  const port = url.port || defaultPort;
  return hosts.some((entry) => {
    const m = /^(\*\.)?([^:]+)(?::(\d+))?$/.exec(entry);
    if (!m || (m[3] ?? defaultPort) !== port) return false;
    return m[1] ? url.hostname.endsWith(`.${m[2]!}`) : url.hostname === m[2];
  });
}

/**
 * Images only from this server (uploaded files) and the configured hosts; any other image becomes a
 * plain link to it, never requested, so that reading a message tells no outside host anything. Works on
 * the inert DOM of a template: nothing is loaded before the result is put in the page.
 */
function linkOutsideImages(html: string): string {
  if (!html.includes('<img')) return html;
  const t = document.createElement('template');
  t.innerHTML = html;
  const hosts = configuredImageHosts();
  for (const img of t.content.querySelectorAll('img')) {
    const src = img.getAttribute('src') ?? '';
    let url: URL | null = null;
    try {
      url = new URL(src, location.href);
    } catch {
      url = null;
    }
    if (url && (url.origin === location.origin || hostAllowed(url, hosts))) continue;
    const a = document.createElement('a');
    if (url && (url.protocol === 'https:' || url.protocol === 'http:')) {
      a.href = url.href;
      a.target = '_blank';
      a.rel = 'noopener noreferrer nofollow';
    }
    a.className = 'outside-image';
    const alt = img.getAttribute('alt');
    a.textContent = alt && alt !== 'Image' ? alt : src;
    img.replaceWith(a);
  }
  return t.innerHTML;
}

export function renderMessage(content: string, contentHtml: string | null): string {
  const html = contentHtml ?? (marked.parse(content) as string);
  return linkHashtags(linkOutsideImages(DOMPurify.sanitize(html, PURIFY)));
}
