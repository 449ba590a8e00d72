import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';
import { sendJson } from './io.js';

/**
 * The web app (the `web/` workspace, built by `npm install` into web/dist) is served by the same
 * process at every path outside /api/: hashed assets with a year-long immutable cache, index.html
 * revalidated on every load, precompressed .br/.gz twins when the client accepts them, and the SPA
 * fallback (/, /admin, …) to index.html. Files are served by sirv, never by hand.
 */

// server/src/transports/http and server/dist/transports/http are both four levels below the root.
const DEFAULT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../web/dist');

/** The app's own scripts and styles only; bot HTML is sanitized too, this is the second line. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

export const isWebPath = (pathname: string): boolean => pathname !== '/api' && !pathname.startsWith('/api/');

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A handler for web paths; `dir` defaults to web/dist (WORKROOM_WEB_DIR in tests is not needed). */
export function createStaticHandler(dir: string = DEFAULT_DIR): Handler {
  let serve: ReturnType<typeof sirv> | undefined;
  return (req, res) => {
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
            r.setHeader('content-security-policy', CSP);
            r.setHeader('referrer-policy', 'no-referrer');
          }
        },
      });
    }
    serve(req, res, () =>
      sendJson(res, 404, { error: { code: 'not_found', message: `No file ${req.url ?? ''}` } }),
    );
  };
}

export const serveStatic: Handler = createStaticHandler();
