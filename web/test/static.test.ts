import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { WEB_DIST } from './browser.js';

/** The built app as the server serves it: over plain HTTP, no browser needed. */
let server: TestServer;
let asset: string;

beforeAll(async () => {
  server = await startTestServer();
  asset = readdirSync(join(WEB_DIST, 'assets')).find((f) => /^index-.*\.js$/.test(f))!;
});
afterAll(() => server?.close());

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers });

describe('static web app', () => {
  it('serves index.html at / and at app routes (SPA fallback), revalidated on every load, with a CSP', async () => {
    for (const path of ['/', '/admin', '/admin/bots']) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await r.text()).toContain('<div id="app"></div>');
    }
  });

  it('answers hashed assets with a year-long immutable cache, precompressed, and 304 on a matching ETag', async () => {
    const plain = await get(`/assets/${asset}`, { 'accept-encoding': 'identity' });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-type')).toMatch(/javascript/);
    const body = await plain.text();
    expect(body).toBe(readFileSync(join(WEB_DIST, 'assets', asset), 'utf8'));

    const br = await fetch(`${server.url}/assets/${asset}`, { headers: { 'accept-encoding': 'br' } });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(await br.text()).toBe(body); // fetch decodes it
    const gz = await get(`/assets/${asset}`, { 'accept-encoding': 'gzip' });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.headers.get('vary')).toBe('Accept-Encoding');

    const etag = plain.headers.get('etag')!;
    const again = await get(`/assets/${asset}`, { 'if-none-match': etag, 'accept-encoding': 'identity' });
    expect(again.status).toBe(304);
  });

  it('never falls back to the app for /api paths or missing files', async () => {
    for (const path of ['/api', '/api/', '/api/nothing-here']) {
      const r = await get(path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect((await r.json()).error.code).toBe('not_found');
    }
    const missing = await get('/assets/nope-123.js');
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe('not_found');
    // No path outside the build is reachable.
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json']) {
      const r = await get(path);
      expect(await r.text(), path).not.toContain('"workspaces"');
    }
  });

  it('refuses other methods than GET and HEAD with 405', async () => {
    const r = await fetch(`${server.url}/admin`, { method: 'POST', body: 'x' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${server.url}/`, { method: 'HEAD' })).status).toBe(200);
  });

  it('has a build with precompressed twins', () => {
    expect(existsSync(join(WEB_DIST, 'assets', `${asset}.br`))).toBe(true);
    expect(existsSync(join(WEB_DIST, 'assets', `${asset}.gz`))).toBe(true);
  });
});
