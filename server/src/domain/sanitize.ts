import sanitizeHtml from 'sanitize-html';

/**
 * Message HTML is sanitized on the server with sanitize-html: formatting and links only, no scripts,
 * styles, event handlers, iframes or javascript: URLs. Links are forced to open safely.
 *
 * Images are shown only from this server (uploaded files: relative URLs or the server's own origin) and
 * from the configured image hosts (WORKROOM_IMAGE_HOSTS); any other image becomes a plain link to it,
 * so that reading a message tells no outside host who read it, when, or from where (docs/WEB.md
 * "Images"). The web app's CSP (`img-src 'self' data: blob:` plus those hosts) is the second line.
 */

/** Where message images may come from. */
export interface ImagePolicy {
  /** `name[:port]` or `*.name[:port]`, lower case (WORKROOM_IMAGE_HOSTS). */
  hosts: readonly string[];
  /** This server's origin (e.g. https://workroom.example.com); relative URLs count as it in any case. */
  origin?: string | undefined;
}

/** The policy of a server's configuration (WORKROOM_IMAGE_HOSTS, WORKROOM_PUBLIC_URL). */
export const imagePolicy = (c: { imageHosts: readonly string[]; publicUrl: string }): ImagePolicy => ({
  hosts: c.imageHosts,
  origin: c.publicUrl,
});

/** Images from this server only. */
export const OWN_IMAGES_ONLY: ImagePolicy = { hosts: [] };

const SELF = 'https://self.invalid';

/** Whether `host[:port]` of an http(s) URL matches an allow-list entry, as a CSP host source would. */
export function hostAllowed(url: URL, hosts: readonly string[]): boolean {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  const hostname = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return hosts.some((entry) => {
    const m = /^(\*\.)?([^:]+)(?::(\d+))?$/.exec(entry);
    if (!m) return false;
    const entryPort = m[3] ?? (url.protocol === 'https:' ? '443' : '80');
    if (entryPort !== port) return false;
    return m[1] ? hostname.endsWith(`.${m[2]!}`) : hostname === m[2];
  });
}

/** Whether an image at `src` (as written in the message) may be loaded under `policy`. */
export function imageAllowed(src: string, policy: ImagePolicy): boolean {
  let url: URL;
  let self: string;
  try {
    self = policy.origin ? new URL(policy.origin).origin : SELF;
    url = new URL(src, `${self}/`);
  } catch {
    return false;
  }
  if (url.origin === self) return true;
  return hostAllowed(url, policy.hosts);
}

const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [
    'p',
    'br',
    'hr',
    'b',
    'strong',
    'i',
    'em',
    'u',
    's',
    'del',
    'code',
    'pre',
    'blockquote',
    'ul',
    'ol',
    'li',
    'a',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'span',
    'div',
    'img',
    'mark',
    'sub',
    'sup',
  ],
  allowedAttributes: {
    a: ['href', 'title', 'rel', 'target'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    code: ['class'],
    span: ['class'],
    div: ['class'],
    th: ['align'],
    td: ['align'],
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['https', 'http'] },
  allowProtocolRelative: false,
  transformTags: {
    a: sanitizeHtml.simpleTransform('a', { rel: 'noopener noreferrer nofollow', target: '_blank' }),
  },
};

/** An image from a host that may not be asked becomes a link to it (its alt text, else its address). */
function imageTransform(policy: ImagePolicy): sanitizeHtml.Transformer {
  return (tagName, attribs) => {
    const src = attribs.src?.trim();
    if (src === undefined || src === '' || imageAllowed(src, policy)) return { tagName, attribs };
    const text = attribs.alt?.trim() || attribs.title?.trim() || src;
    return {
      tagName: 'a',
      attribs: { href: src, rel: 'noopener noreferrer nofollow', target: '_blank' },
      text,
    };
  };
}

const OPTIONS_BY_POLICY = new Map<string, sanitizeHtml.IOptions>();

export function sanitizeMessageHtml(html: string, images: ImagePolicy = OWN_IMAGES_ONLY): string {
  const key = `${images.origin ?? ''} ${images.hosts.join(',')}`;
  let options = OPTIONS_BY_POLICY.get(key);
  if (options === undefined) {
    options = { ...OPTIONS, transformTags: { ...OPTIONS.transformTags, img: imageTransform(images) } };
    if (OPTIONS_BY_POLICY.size > 16) OPTIONS_BY_POLICY.clear();
    OPTIONS_BY_POLICY.set(key, options);
  }
  return sanitizeHtml(html, options);
}
