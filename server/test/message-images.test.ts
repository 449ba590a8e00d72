import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitizeMessageHtml } from '../src/domain/sanitize.js';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Tracking pixels (docs/WEB.md "Images"): a message image is shown only from this server (uploaded
 * files) and from WORKROOM_IMAGE_HOSTS; any other image becomes a plain link, in the stored content_html
 * (server sanitizer) and in the web app's CSP, so that reading a message asks no outside host anything.
 */
const PUBLIC = 'https://workroom.example.com';

let srv: TestServer;
let w: World;
let ann: UserHandle;
let bot: BotHandle;
let channel: string;
let fileId: string;

beforeAll(async () => {
  srv = await startTestServer({
    WORKROOM_IMAGE_HOSTS: 'cdn.example.com,*.example.org,img.example.net:8443',
    WORKROOM_PUBLIC_URL: PUBLIC,
  });
  w = await World.create(srv.url);
  const org = await w.org();
  ann = await w.user({ organization_id: org.id }, org.admin.api);
  channel = await w.channel(ann.api);
  bot = await w.bot(ann.api);
  expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
  const form = new FormData();
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'pic.png');
  const up = await fetch(`${srv.url}/api/channels/${channel}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ann.token}` },
    body: form,
  });
  expect(up.status).toBe(201);
  fileId = ((await up.json()) as { id: string }).id;
});
afterAll(async () => {
  await srv?.close();
});

/** The sources of the <img> elements of some HTML, and the targets of its links. */
const imgs = (html: string) => [...html.matchAll(/<img [^>]*src="([^"]*)"/g)].map((m) => m[1]);
const links = (html: string) =>
  [...html.matchAll(/<a [^>]*href="([^"]*)"[^>]*>([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]);

describe('the web app’s CSP', () => {
  it('allows images only from this server, data:, blob: and the configured hosts', async () => {
    for (const path of ['/', '/admin']) {
      const r = await fetch(`${srv.url}${path}`);
      expect(r.status).toBe(200);
      const csp = r.headers.get('content-security-policy')!;
      const imgSrc = csp
        .split(';')
        .map((d) => d.trim())
        .find((d) => d.startsWith('img-src'));
      expect(imgSrc).toBe("img-src 'self' data: blob: cdn.example.com *.example.org img.example.net:8443");
      expect(csp).not.toMatch(/https:(?!\/)/);
      // The page tells the app the same hosts (web/src/markdown.ts renders other images as links).
      expect(await r.text()).toContain(
        '<meta name="workroom-image-hosts" content="cdn.example.com *.example.org img.example.net:8443" />',
      );
    }
  });

  it('revalidates the page by its ETag', async () => {
    const first = await fetch(`${srv.url}/`);
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    const again = await fetch(`${srv.url}/`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });
});

describe('images in content_html', () => {
  const html = (fid: string) =>
    [
      '<p>outside <img src="https://tracker.example.com/p.gif?u=ann" alt="pixel"></p>',
      '<p>no alt <img src="http://203.0.113.9/p.gif"></p>',
      '<p>apex <img src="https://example.org/a.png" alt="apex"></p>',
      '<p>other port <img src="https://cdn.example.com:8443/a.png" alt="port"></p>',
      '<p>look-alike <img src="https://cdn.example.com.evil.test/a.png" alt="lookalike"></p>',
      '<p>protocol-relative <img src="//evil.test/a.png" alt="pr"></p>',
      '<p>backslash <img src="/\\evil.test/a.png" alt="bs"></p>',
      '<p>cdn <img src="https://cdn.example.com/a.png" alt="cdn"></p>',
      '<p>sub <img src="https://media.example.org/b.png" alt="sub"></p>',
      '<p>port <img src="https://img.example.net:8443/c.png" alt="withport"></p>',
      `<p>file <img src="/api/files/${fid}" alt="file"></p>`,
      `<p>own origin <img src="${PUBLIC}/api/files/${fid}" alt="own"></p>`,
    ].join('');

  const check = (out: string, fid: string) => {
    expect(imgs(out)).toEqual([
      'https://cdn.example.com/a.png',
      'https://media.example.org/b.png',
      'https://img.example.net:8443/c.png',
      `/api/files/${fid}`,
      `${PUBLIC}/api/files/${fid}`,
    ]);
    const l = links(out);
    expect(l).toContainEqual(['https://tracker.example.com/p.gif?u=ann', 'pixel']);
    expect(l).toContainEqual(['http://203.0.113.9/p.gif', 'http://203.0.113.9/p.gif']);
    expect(l).toContainEqual(['https://example.org/a.png', 'apex']);
    expect(l).toContainEqual(['https://cdn.example.com:8443/a.png', 'port']);
    expect(l).toContainEqual(['https://cdn.example.com.evil.test/a.png', 'lookalike']);
    // Neither the protocol-relative nor the backslash form is loaded or kept as a link target.
    expect(out).not.toMatch(/<img[^>]*evil\.test/);
    expect(out).toContain('>pr</a>');
    expect(out).toContain('>bs</a>');
    expect(out).toMatch(/<a [^>]*rel="noopener noreferrer nofollow"[^>]*>pixel<\/a>/);
  };

  it('a user message: outside images become links, allowed hosts and uploaded files stay images', async () => {
    const m = expectStatus(
      await ann.api.post(`/api/channels/${channel}/messages`, { content: 'x', content_html: html(fileId) }),
      201,
    );
    check(m.content_html, fileId);
    const listed = expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200);
    check(listed.items.find((x: any) => x.id === m.id).content_html, fileId);
  });

  it('an edited message and a bot DM are held to the same rule', async () => {
    const m = expectStatus(
      await bot.api.post(`/api/channels/${channel}/messages`, { content: 'x', content_html: '<b>x</b>' }),
      201,
    );
    const edited = expectStatus(
      await bot.api.put(`/api/messages/${m.id}`, { content: 'y', content_html: html(fileId) }),
      200,
    );
    check(edited.content_html, fileId);
    const dm = expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/dm-messages`, {
        user_id: ann.id,
        content: 'z',
        content_html: html(fileId),
      }),
      201,
    );
    check(dm.content_html, fileId);
  });

  it('with no image hosts configured, only this server’s images stay images', () => {
    const out = sanitizeMessageHtml(
      '<img src="/api/files/f1" alt="a"><img src="https://cdn.example.com/x.png" alt="b">',
    );
    expect(imgs(out)).toEqual(['/api/files/f1']);
    expect(links(out)).toEqual([['https://cdn.example.com/x.png', 'b']]);
  });
});
