import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, signIn } from './browser.js';

/**
 * Tracking pixels in real Chromium (docs/WEB.md "Images"): opening a message with an image from an
 * outside host makes no request to that host (it is shown as a link), while an image from a configured
 * image host is loaded. Both hosts are local servers on other loopback addresses that count the requests
 * they get: the outside one at https://127.0.0.2 (HTTPS, which the CSP before the fix let through, so the
 * test fails without the fix), the allowed one at http://127.0.0.3 (the page is served over plain HTTP,
 * and a CSP host source without a scheme matches the page's scheme). The allowed images' requests are
 * the sentinel that the messages have been rendered with their images.
 */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

interface Counter {
  server: Server;
  port: number;
  hits: string[];
}

let certDir: string;
let outside: Counter;
let allowed: Counter;
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let channelId: string;
const PASSWORD = 'user-password-1';

async function countingServer(host: string, tls: boolean): Promise<Counter> {
  const hits: string[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' });
    res.end(PNG);
  };
  const server = tls
    ? createHttpsServer(
        { key: readFileSync(join(certDir, 'key.pem')), cert: readFileSync(join(certDir, 'cert.pem')) },
        handler,
      )
    : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as { port: number }).port, hits };
}

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'workroom-img-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.2'].concat([
      '-keyout',
      join(certDir, 'key.pem'),
      '-out',
      join(certDir, 'cert.pem'),
    ]),
    { stdio: 'ignore' },
  );
  outside = await countingServer('127.0.0.2', true);
  allowed = await countingServer('127.0.0.3', false);
  server = await startTestServer({ WORKROOM_IMAGE_HOSTS: `127.0.0.3:${allowed.port}` });
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  channelId = await world.channel(ann.api, { name: uniq('images') });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  outside?.server.close();
  allowed?.server.close();
  rmSync(certDir, { recursive: true, force: true });
});

describe('images in messages', () => {
  it('an outside image is shown as a link and never requested; an allowed host’s image is loaded', async () => {
    const marker = uniq('img');
    const out = `https://127.0.0.2:${outside.port}`;
    const ok = `http://127.0.0.3:${allowed.port}`;
    // Markdown (rendered by the web app) and content_html (sanitized by the server, then by the app).
    expectStatus(
      await ann.api.post(`/api/channels/${channelId}/messages`, {
        content: `${marker} md ![pixel](${out}/md.png?reader=ann) and ![fine](${ok}/md.png)`,
      }),
      201,
    );
    const bot = await world.bot(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    expectStatus(
      await bot.api.post(`/api/channels/${channelId}/messages`, {
        content: `${marker} html`,
        content_html: `<p>${marker} html <img src="${out}/html.png" alt="tracker"><img src="${ok}/html.png" alt="fine"></p>`,
      }),
      201,
    );

    const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await ctx.newPage();
    await signIn(page, server.url, ann.email, PASSWORD);
    await page.goto(`${server.url}/#/channel/${channelId}`);
    const md = page.getByRole('article').filter({ hasText: `${marker} md` });
    const html = page.getByRole('article').filter({ hasText: `${marker} html` });
    await md.waitFor();
    await html.waitFor();
    // The sentinel: both allowed images were requested and loaded, so the messages are on screen with
    // their images; an outside image would have been requested by now too.
    await expect.poll(() => [...allowed.hits].sort()).toEqual(['/html.png', '/md.png']);
    await expect
      .poll(() =>
        page.evaluate(
          () =>
            [...document.querySelectorAll<HTMLImageElement>('article img')].filter(
              (i) => i.complete && i.naturalWidth === 1,
            ).length,
        ),
      )
      .toBe(2);
    expect(outside.hits).toEqual([]);
    expect(await page.locator(`article img[src^="${out}"]`).count()).toBe(0);
    // Shown as plain links instead, with their descriptions.
    await expect.poll(() => md.locator(`a[href="${out}/md.png?reader=ann"]`).textContent()).toBe('pixel');
    expect(await html.locator(`a[href="${out}/html.png"]`).textContent()).toBe('tracker');
    await ctx.close();
  });
});
