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

export function renderMessage(content: string, contentHtml: string | null): string {
  const html = contentHtml ?? (marked.parse(content) as string);
  return DOMPurify.sanitize(html, PURIFY);
}
