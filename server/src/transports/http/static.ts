import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';
import { sendJson } from '../kit/io.js';

/**
 * The web app (the `web/` workspace, built by `npm install` into web/dist) is served by the same
 * process at every path outside /api/: hashed assets with a year-long immutable cache, index.html
 * revalidated on every load, precompressed .br/.gz twins when the client accepts them, and the SPA
 * fallback (/, /admin, …) to index.html. Files are served by sirv, never by hand.
 */

// server/src/transports/http and server/dist/transports/http are both four levels below the root.
const DEFAULT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../web/dist');

/**
 * The app's own scripts and styles only; bot HTML is sanitized too, this is the second line. Images only
 * from this server (uploaded files; data: and blob: made by the app) and the configured image hosts
 * (WORKROOM_IMAGE_HOSTS): an image anywhere else in a message is never requested, so reading a message
 * tells no outside host anything (docs/WEB.md "Images").
 */
export function contentSecurityPolicy(imageHosts: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self' data: blob:", ...imageHosts].join(' '),
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
  ].join('; ');
}

/** The name of the meta element that tells the web app the image hosts (web/src/markdown.ts). */
export const IMAGE_HOSTS_META = 'workroom-image-hosts';

/** index.html as served: with the image hosts in a meta element, its ETag, per list of hosts. */
interface IndexPage {
  body: Buffer;
  etag: string;
  csp: string;
}

function indexPage(template: string, imageHosts: readonly string[]): IndexPage {
  // Hosts are validated (config.ts: letters, digits, '-', '.', '*', ':'): nothing to escape in them.
  const meta = `<meta name="${IMAGE_HOSTS_META}" content="${imageHosts.join(' ')}" />`;
  const html = template.includes('</head>') ? template.replace('</head>', `  ${meta}\n  </head>`) : template;
  const body = Buffer.from(html, 'utf8');
  const etag = `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, etag, csp: contentSecurityPolicy(imageHosts) };
}

export const isWebPath = (pathname: string): boolean => pathname !== '/api' && !pathname.startsWith('/api/');

type Handler = (req: IncomingMessage, res: ServerResponse, imageHosts?: readonly string[]) => void;

/**
 * A handler for web paths; `dir` defaults to web/dist (WORKROOM_WEB_DIR in tests is not needed). The app's
 * page (index.html, at / and every app route) is answered here, with the image hosts in it; every other
 * file of the build by sirv.
 */
export function createStaticHandler(dir: string = DEFAULT_DIR): Handler {
  let serve: ReturnType<typeof sirv> | undefined;
  let template: string | undefined;
  /** Files at the top of the build other than index.html (sirv serves them as they are). */
  let topFiles = new Set<string>();
  const pages = new Map<string, IndexPage>();
  return (req, res, imageHosts = []) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      sendJson(res, 405, {
        error: { code: 'method_not_allowed', message: `${req.method} is not allowed here` },
      });
      return;
    }
    // sirv lists the directory once, when made: made at the first request, after the build.
    if (serve === undefined) {
      if (!existsSync(join(dir, 'index.html'))) {
        sendJson(res, 404, {
          error: { code: 'not_found', message: 'The web app is not built: run `npm run build -w web`' },
        });
        return;
      }
      template = readFileSync(join(dir, 'index.html'), 'utf8');
      topFiles = new Set(
        readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isFile() && e.name !== 'index.html')
          .map((e) => `/${e.name}`),
      );
      serve = sirv(dir, {
        single: true,
        etag: true,
        gzip: true,
        brotli: true,
        setHeaders(r, pathname) {
          if (pathname.startsWith('/assets/')) {
            r.setHeader('cache-control', 'public, max-age=31536000, immutable');
          } else {
            r.setHeader('cache-control', 'no-cache');
            r.setHeader('content-security-policy', contentSecurityPolicy());
            r.setHeader('referrer-policy', 'no-referrer');
          }
        },
      });
    }
    const pathname = (req.url ?? '/').split('?')[0]!;
    if (!pathname.startsWith('/assets/') && !topFiles.has(pathname)) {
      const key = imageHosts.join(' ');
      let page = pages.get(key);
      if (page === undefined) {
        page = indexPage(template!, imageHosts);
        pages.set(key, page);
      }
      res.setHeader('cache-control', 'no-cache');
      res.setHeader('content-security-policy', page.csp);
      res.setHeader('referrer-policy', 'no-referrer');
      res.setHeader('etag', page.etag);
      res.setHeader('vary', 'Accept-Encoding');
      if (req.headers['if-none-match'] === page.etag) {
        res.statusCode = 304;
        res.end();
        return;
      }
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.setHeader('content-length', page.body.length);
      res.statusCode = 200;
      res.end(req.method === 'HEAD' ? undefined : page.body);
      return;
    }
    serve(req, res, () =>
      sendJson(res, 404, { error: { code: 'not_found', message: `No file ${req.url ?? ''}` } }),
    );
  };
}

export const serveStatic: Handler = createStaticHandler();
