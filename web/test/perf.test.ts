import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { newId } from '../../server/src/domain/ids.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { login, uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, WEB_DIST } from './browser.js';

/**
 * Performance, measured: the chat's initial JavaScript (gzipped), a cold load to a usable composer,
 * and opening a channel of 10,000 messages with a bounded number of message nodes in the DOM.
 * The figures are printed; docs/WEB.md records them.
 */
let server: TestServer;
let browser: Browser;
let ann: UserHandle;
let small: string;
let big: string;
const BIG = 10_000;
// The figures are taken on SQLite (the browser suite's database) unless asked.
const skip = process.env.DATABASE_URL !== undefined && process.env.WORKROOM_PERF_PG !== '1';
/**
 * The goals are 1 s and 500 ms on this machine at rest. CI runs other suites beside this one on two
 * cores, so the assertion allows WORKROOM_PERF_SLACK times the goal (default 2); the figures printed
 * are the real ones, and docs/WEB.md reports them.
 */
const SLACK = Number(process.env.WORKROOM_PERF_SLACK ?? 2);

beforeAll(async () => {
  if (skip) return;
  server = await startTestServer();
  browser = await launch();
  const world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  small = await world.channel(ann.api, { name: uniq('a-small') });
  big = await world.channel(ann.api, { name: uniq('b-big') });
  expectStatus(await ann.api.post(`/api/channels/${small}/messages`, { content: 'hello' }), 201);
  // The big channel's newest message through the API; the 9,999 before it written straight into the
  // message store in one transaction (rows as the send operation writes them: Ann's, plain text, a
  // millisecond apart just before now): a second instead of the ~30 s of 10,000 POSTs. What is measured
  // is the read path, the page's load.
  const t0 = Date.now() - BIG;
  await server.app.services.storage.transaction(async (s) => {
    for (let i = 0; i < BIG - 1; i++) {
      await s.messages.insert({
        id: newId(),
        org_id: org.id,
        channel_id: big,
        topic_id: null,
        dm_room_id: null,
        sender_type: 'user',
        sender_id: ann.id,
        bot_id: null,
        content: `message number ${i} of the big channel`,
        content_html: null,
        actions: null,
        created_at: new Date(t0 + i).toISOString(),
        edited_at: null,
        deleted_at: null,
      });
    }
  });
  expectStatus(
    await ann.api.post(`/api/channels/${big}/messages`, {
      content: `message number ${BIG - 1} of the big channel`,
    }),
    201,
  );
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** A browser context that is already signed in (the token in localStorage), with a cold cache. */
async function signedInPage(token: string) {
  const ctx = await newContext(browser);
  const me = await ann.api.get('/api/auth/me');
  await ctx.addInitScript(
    ([t, u]) => localStorage.setItem('workroom.session', JSON.stringify({ token: t, user: u })),
    [token, me.body] as const,
  );
  // Notes, in the page, the first frame in which the composer and a message are both there.
  await ctx.addInitScript(() => {
    const w = window as unknown as { __usableAt?: number };
    const check = () => {
      if (document.querySelector('textarea[aria-label="Message"]') && document.querySelector('article'))
        w.__usableAt = performance.now();
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
  return { ctx, page: await ctx.newPage() };
}

describe.skipIf(skip)('performance', () => {
  it('ships at most 150 KB of gzipped JavaScript on the chat screen', () => {
    const html = readFileSync(join(WEB_DIST, 'index.html'), 'utf8');
    const initial = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(initial.length).toBeGreaterThan(0);
    const gz = initial.reduce(
      (n, f) => n + gzipSync(readFileSync(join(WEB_DIST, f)), { level: 9 }).length,
      0,
    );
    const raw = initial.reduce((n, f) => n + statSync(join(WEB_DIST, f)).size, 0);
    console.log(
      `initial JS: ${initial.join(', ')}: ${(raw / 1024).toFixed(1)} KB, ${(gz / 1024).toFixed(1)} KB gzipped`,
    );
    expect(gz).toBeLessThanOrEqual(150 * 1024);
  });

  it('loads the chat cold to a usable composer within 1 s', async () => {
    const token = await login(server.url, ann.email, 'user-password-1');
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { ctx, page } = await signedInPage(token);
      await page.goto(`${server.url}/#/channel/${small}`);
      await page.getByRole('article').filter({ hasText: 'hello' }).waitFor();
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      // Milliseconds from the start of the navigation to that frame, measured in the page.
      times.push(await page.evaluate(() => (window as unknown as { __usableAt: number }).__usableAt));
      if (i === 0)
        console.log(
          'cold load, resources (start → end ms):',
          await page.evaluate(() =>
            performance
              .getEntriesByType('resource')
              .map(
                (e) =>
                  `${new URL(e.name).pathname.slice(0, 40)} ${Math.round(e.startTime)}→${Math.round((e as PerformanceResourceTiming).responseEnd)}`,
              )
              .join('; '),
          ),
        );
      await ctx.close();
    }
    times.sort((a, b) => a - b);
    console.log(
      `cold load to usable composer: ${times.map((t) => Math.round(t)).join(', ')} ms (median ${Math.round(times[1]!)})`,
    );
    expect(times[1]!).toBeLessThanOrEqual(1000 * SLACK);
  });

  it('opens a channel of 10,000 messages within 500 ms, with a bounded number of message nodes', async () => {
    const token = await login(server.url, ann.email, 'user-password-1');
    const { ctx, page } = await signedInPage(token);
    await page.goto(`${server.url}/#/channel/${small}`);
    await page.getByRole('article').filter({ hasText: 'hello' }).waitFor();
    // Timed in the page: from the click to the frame that shows the newest message.
    const opened = await page.evaluate(
      async (text) => {
        const link = [...document.querySelectorAll<HTMLAnchorElement>('nav a')].find((a) =>
          a.textContent?.includes('b-big'),
        )!;
        const t0 = performance.now();
        link.click();
        return new Promise<number>((resolve) => {
          const check = () => {
            if ([...document.querySelectorAll('article')].some((a) => a.textContent?.includes(text)))
              resolve(performance.now() - t0);
            else requestAnimationFrame(check);
          };
          check();
        });
      },
      `message number ${BIG - 1} `,
    );
    await page
      .getByRole('article')
      .filter({ hasText: `message number ${BIG - 1} ` })
      .waitFor();
    const nodes = await page.getByRole('article').count();
    const api = await page.evaluate(
      (id) =>
        performance
          .getEntriesByType('resource')
          .filter((e) => e.name.includes(`/api/channels/${id}/messages`))
          .map((e) => Math.round(e.duration)),
      big,
    );
    console.log(
      `open a 10,000-message channel: ${Math.round(opened)} ms (of which the API answer ${api.join(', ')} ms), ${nodes} message nodes in the DOM`,
    );
    expect(opened).toBeLessThanOrEqual(500 * SLACK);
    expect(nodes).toBeLessThanOrEqual(40);

    // Scrolling back loads older pages; the DOM still holds only what is in view. Each scroll to the top
    // waits for the list to grow by the page it loads (no pause, no wait for a node that virtual
    // scrolling may never attach).
    const log = page.getByRole('log', { name: 'Messages' });
    const height = () =>
      page.evaluate(() => document.querySelector('.messages-inner')?.getBoundingClientRect().height ?? 0);
    for (let i = 0; i < 6; i++) {
      const before = await height();
      await log.evaluate((el) => (el.scrollTop = 0));
      await expect.poll(height, { timeout: 15_000 }).toBeGreaterThan(before);
    }
    const loaded = await height();
    const after = await page.getByRole('article').count();
    console.log(
      `after scrolling back: list height ${Math.round(loaded)} px, ${after} message nodes in the DOM`,
    );
    expect(loaded).toBeGreaterThan(64 * 200); // several older pages were loaded
    expect(after).toBeLessThanOrEqual(40);
    await ctx.close();
  });
});
