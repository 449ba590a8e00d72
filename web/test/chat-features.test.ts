import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * The chat's server-side unread counts, hashtag links and preview cards, bookmarks and channel files,
 * and the phone-width layout, in real Chromium against a real server.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let bob: UserHandle;
let general: string;
let generalName: string;
let random: string;
let topic: string;
const PASSWORD = 'user-password-1';

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  bob = await world.user({ display_name: 'Bob Stone' }, org.admin.api);
  generalName = uniq('general');
  general = await world.channel(ann.api, { name: generalName, description: 'Where the team talks' });
  random = await world.channel(ann.api, { name: uniq('random') });
  for (const c of [general, random])
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { user_id: bob.id }), 201);
  const project = expectStatus(await ann.api.post('/api/projects', { name: uniq('Launch') }), 201)
    .id as string;
  expectStatus(await ann.api.post(`/api/projects/${project}/members`, { user_id: bob.id }), 201);
  topic = expectStatus(await ann.api.post(`/api/projects/${project}/topics`, { name: 'Release' }), 201)
    .id as string;
  expectStatus(await ann.api.post(`/api/channels/${general}/messages`, { content: 'Good morning' }), 201);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function open(
  user: UserHandle,
  path: string,
  opts: { dark?: boolean; phone?: boolean } = {},
): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await newContext(browser, opts);
  const page = await ctx.newPage();
  await signIn(page, server.url, user.email, PASSWORD);
  await page.goto(`${server.url}/${path}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return { ctx, page };
}

const link = (page: Page, name: RegExp) =>
  page.getByRole('navigation', { name: 'Conversations' }).getByRole('link', { name });
const unreadOf = async (user: UserHandle) =>
  (
    expectStatus(await user.api.get('/api/unread'), 200).items as { container_id: string; unread: number }[]
  ).reduce((m, i) => m.set(i.container_id, i.unread), new Map<string, number>());

describe('unread counts', () => {
  it('come from the server, grow live, and are cleared on the server by opening the room', async () => {
    const randomName = (expectStatus(await bob.api.get(`/api/channels/${random}`), 200).name as string)!;
    // Two messages before Bob's browser opens: the count comes from GET /api/unread.
    for (const t of ['one', 'two'])
      expectStatus(await ann.api.post(`/api/channels/${random}/messages`, { content: `before ${t}` }), 201);
    expectStatus(await ann.api.post(`/api/topics/${topic}/messages`, { content: 'topic news' }), 201);
    const { ctx, page } = await open(bob, `#/channel/${general}`);
    await link(page, new RegExp(`${randomName}\\s+2 unread`)).waitFor();
    await link(page, /Release\s+1 unread/).waitFor();
    // The open room was marked read on the server.
    await expect.poll(async () => (await unreadOf(bob)).get(general) ?? 0).toBe(0);

    // A live message adds one.
    expectStatus(await ann.api.post(`/api/channels/${random}/messages`, { content: 'live three' }), 201);
    await link(page, new RegExp(`${randomName}\\s+3 unread`)).waitFor();
    await screenshot(page, 'chat-unread');

    // Opening the room clears it, here and on the server; a reload keeps it cleared.
    await link(page, new RegExp(randomName)).click();
    await page.getByRole('article').filter({ hasText: 'live three' }).waitFor();
    await link(page, new RegExp(`^${randomName}$`)).waitFor();
    await expect.poll(async () => (await unreadOf(bob)).has(random)).toBe(false);
    expect((await unreadOf(bob)).get(topic)).toBe(1);
    await page.reload();
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    await link(page, /Release\s+1 unread/).waitFor();
    expect(await link(page, new RegExp(`${randomName}.*unread`)).count()).toBe(0);

    // A message while the room is open is read at once.
    expectStatus(await ann.api.post(`/api/channels/${random}/messages`, { content: 'seen at once' }), 201);
    await page.getByRole('article').filter({ hasText: 'seen at once' }).waitFor();
    await expect.poll(async () => (await unreadOf(bob)).has(random)).toBe(false);

    // Over 99: "99+".
    for (let i = 0; i < 101; i++)
      expectStatus(await ann.api.post(`/api/topics/${topic}/messages`, { content: `flood ${i}` }), 201);
    await page.reload();
    await link(page, /Release\s+99\+ unread/).waitFor();
    await ctx.close();
  });
});

describe('hashtags', () => {
  it('link channels and tasks in messages and open preview cards', async () => {
    const task = expectStatus(
      await ann.api.post(`/api/topics/${topic}/tasks`, {
        title: 'Write the release notes',
        priority: 'high',
        assignee_id: bob.id,
        due_date: '2030-01-31',
      }),
      201,
    );
    const marker = uniq('tags');
    expectStatus(
      await ann.api.post(`/api/channels/${random}/messages`, {
        content: `${marker}: talk in #${generalName}, see [#Write the release notes](/#/task/${task.id}); C# and #nothing-here stay text; \`#${generalName}\` in code too`,
      }),
      201,
    );
    const { ctx, page } = await open(bob, `#/channel/${random}`);
    const msg = page.getByRole('article').filter({ hasText: marker });
    await msg.waitFor();
    expect(await msg.locator('a.hashtag').count()).toBe(2);
    expect(await msg.locator('code a').count()).toBe(0);

    const chan = msg.getByRole('link', { name: `#${generalName}` });
    await chan.click();
    const card = page.getByRole('dialog', { name: new RegExp(`#${generalName}`) });
    await card.getByText('Where the team talks').waitFor();
    expect(await card.textContent()).toMatch(/Members\s*2/);
    await screenshot(page, 'chat-hashtag-card');
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await card.waitFor({ state: 'detached' });
    expect(await chan.evaluate((el) => el === document.activeElement)).toBe(true);

    // By keyboard: Enter on the focused link opens it too; the task's card leads to its board.
    await msg.getByRole('link', { name: '#Write the release notes' }).focus();
    await page.keyboard.press('Enter');
    const taskCard = page.getByRole('dialog', { name: /Write the release notes/ });
    await taskCard.getByText('Bob Stone').waitFor();
    expect(await taskCard.textContent()).toContain('2030-01-31');
    await taskCard.getByRole('button', { name: 'Open task board' }).click();
    await page.getByRole('tab', { name: 'Task board', selected: true }).waitFor();
    await page.getByRole('article', { name: 'Write the release notes' }).waitFor();

    // The composer suggests hashtags.
    await link(page, new RegExp(generalName)).click();
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill('see ');
    await composer.pressSequentially(`#${generalName.slice(0, 9)}`);
    const list = page.getByRole('listbox', { name: 'Hashtag suggestions' });
    await list.getByRole('option', { name: new RegExp(`#${generalName}`) }).waitFor();
    await composer.press('Enter');
    expect(await composer.inputValue()).toBe(`see #${generalName} `);
    await composer.pressSequentially('#Write');
    await list.getByRole('option', { name: /Write the release notes/ }).waitFor();
    await composer.press('Enter');
    expect(await composer.inputValue()).toBe(
      `see #${generalName} [#Write the release notes](/#/task/${task.id}) `,
    );

    // Suggestions that come back after the caret left the hashtag open nothing (the answer is held
    // here until then): picking from them would replace text typed since.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/api/hashtags/search?*', async (route) => {
      await held;
      await route.continue();
    });
    await composer.fill('');
    const answered = page.waitForResponse((r) => r.url().includes('/api/hashtags/search'));
    await composer.pressSequentially('#');
    await composer.pressSequentially(' x');
    release();
    await answered;
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));
    expect(await list.count()).toBe(0);
    expect(await composer.inputValue()).toBe('# x');
    await page.unrouteAll();
    await ctx.close();
  });
});

describe('bookmarks', () => {
  it('are added from a message and listed with filters; your own can be removed', async () => {
    const m1 = expectStatus(
      await ann.api.post(`/api/channels/${general}/messages`, { content: 'Remember the **deadline**' }),
      201,
    );
    const m2 = expectStatus(
      await ann.api.post(`/api/channels/${general}/messages`, { content: 'Budget is approved' }),
      201,
    );
    expectStatus(await ann.api.post(`/api/channels/${general}/bookmarks`, { message_id: m2.id }), 201);
    const { ctx, page } = await open(bob, `#/channel/${general}`);
    const msg = page.getByRole('article').filter({ hasText: 'Remember the deadline' });
    await msg.hover();
    await msg.getByRole('button', { name: 'Bookmark' }).click();
    await page.getByRole('list', { name: 'Only visible to you' }).getByText('Message bookmarked').waitFor();
    const mine = (
      expectStatus(await bob.api.get(`/api/channels/${general}/bookmarks`), 200).items as any[]
    ).filter((b) => b.user_id === bob.id);
    expect(mine.map((b) => b.message_id)).toEqual([m1.id]);

    await page.getByRole('tab', { name: 'Bookmarks' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Bookmarks' });
    const items = panel.getByRole('article');
    await expect.poll(() => items.count()).toBe(2);
    expect(await items.first().textContent()).toContain('Remember the deadline'); // newest first
    await screenshot(page, 'chat-bookmarks');
    expect(await seriousViolations(page)).toEqual([]);

    const filters = panel.getByRole('form', { name: 'Filter bookmarks' });
    await filters.getByLabel('Bookmarked by').selectOption({ label: 'Ann Lee' });
    await expect.poll(() => items.count()).toBe(1);
    expect(await items.first().textContent()).toContain('Budget is approved');
    await filters.getByLabel('Bookmarked by').selectOption({ label: 'Everyone' });
    await filters.getByLabel('Order').selectOption('asc');
    await expect.poll(async () => (await items.first().textContent()) ?? '').toContain('Budget is approved');
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await filters.getByLabel('From').fill(tomorrow);
    await panel.getByText('No bookmarks match these filters').waitFor();
    await filters.getByLabel('From').fill('');
    await expect.poll(() => items.count()).toBe(2);

    // Only Bob's own bookmark has a Remove button.
    expect(await panel.getByRole('button', { name: /^Remove/ }).count()).toBe(1);
    await panel.getByRole('button', { name: /^Remove your bookmark/ }).click();
    await expect.poll(() => items.count()).toBe(1);
    expect(
      (expectStatus(await bob.api.get(`/api/channels/${general}/bookmarks`), 200).items as any[]).map(
        (b) => b.user_id,
      ),
    ).toEqual([ann.id]);
    await ctx.close();
  });
});

// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

describe('channel files', () => {
  it('uploads, searches by name, filters by type, sorts, and downloads', async () => {
    // One file uploaded through the API first.
    const form = new FormData();
    form.append('file', new Blob([PNG]), 'diagram.png');
    const up = await fetch(`${server.url}/api/channels/${general}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ann.token}` },
      body: form,
    });
    expect(up.status).toBe(201);

    const { ctx, page } = await open(bob, `#/channel/${general}`);
    await page.getByRole('tab', { name: 'Files' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Files' });
    const rows = panel.getByRole('row');
    await panel.getByRole('button', { name: 'diagram.png' }).waitFor();

    // Upload from the browser: a text file.
    await panel.getByLabel('File', { exact: true }).setInputFiles({
      name: 'release-notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('Version 2.0: faster, calmer.\n'),
    });
    await panel.getByRole('button', { name: 'Upload' }).click();
    await panel.getByRole('button', { name: 'release-notes.txt' }).waitFor();
    expect(await rows.count()).toBe(3); // header + 2
    const txtRow = rows.filter({ hasText: 'release-notes.txt' });
    expect(await txtRow.textContent()).toContain('document');
    expect(await txtRow.textContent()).toContain('Bob Stone');
    await screenshot(page, 'chat-files');
    expect(await seriousViolations(page)).toEqual([]);

    const find = panel.getByRole('search', { name: 'Find files' });
    await find.getByLabel('Name contains').fill('diag');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain('diagram.png');
    await find.getByLabel('Name contains').fill('');
    await find.getByLabel('Type').selectOption('document');
    await expect.poll(async () => (await rows.nth(1).textContent()) ?? '').toContain('release-notes.txt');
    expect(await rows.count()).toBe(2);
    await find.getByLabel('Type').selectOption('');
    await find.getByLabel('Sort').selectOption({ label: 'Name, A to Z' });
    await expect.poll(async () => (await rows.nth(1).textContent()) ?? '').toContain('diagram.png');
    await find.getByLabel('Sort').selectOption({ label: 'Name, Z to A' });
    await expect.poll(async () => (await rows.nth(1).textContent()) ?? '').toContain('release-notes.txt');

    // Download: the bytes, under the file's name.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      panel.getByRole('button', { name: 'release-notes.txt' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('release-notes.txt');
    const path = await download.path();
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(path, 'utf8')).toBe('Version 2.0: faster, calmer.\n');
    await ctx.close();
  });
});

describe('phone width', () => {
  it('keeps the top bar on one line above the room and the drawer, down to 360 px', async () => {
    for (const width of [360, 390]) {
      const ctx = await browser.newContext({
        viewport: { width, height: 740 },
        deviceScaleFactor: 1,
        isMobile: true,
        hasTouch: true,
      });
      const page = await ctx.newPage();
      await signIn(page, server.url, bob.email, PASSWORD);
      await page.goto(`${server.url}/#/channel/${general}`);
      await page.getByRole('textbox', { name: 'Message' }).waitFor();
      const bar = (await page.locator('header.topbar').boundingBox())!;
      const head = (await page.locator('.room-head').boundingBox())!;
      expect(bar.height, `top bar at ${width}px`).toBeLessThanOrEqual(50);
      expect(head.y, `room header at ${width}px`).toBeGreaterThanOrEqual(bar.y + bar.height - 1);
      for (const name of ['Sign out', 'Dark theme'])
        expect(await page.getByRole('button', { name }).isVisible(), name).toBe(true);
      const signOut = (await page.getByRole('button', { name: 'Sign out' }).boundingBox())!;
      expect(signOut.x + signOut.width, 'sign out inside the screen').toBeLessThanOrEqual(width);
      if (width === 360) {
        await screenshot(page, 'chat-light-phone-360');
        await page.getByRole('button', { name: 'Conversations' }).click();
        await page.getByRole('navigation', { name: 'Conversations' }).getByRole('link').first().waitFor();
        await page.waitForTimeout(400);
        const drawer = (await page.locator('#sidebar').boundingBox())!;
        expect(drawer.y).toBeGreaterThanOrEqual(bar.y + bar.height - 1);
        await screenshot(page, 'chat-light-phone-360-sidebar');
      }
      expect(await seriousViolations(page)).toEqual([]);
      await ctx.close();
    }
  });

  it('has no serious accessibility violations in the new panels, dark and on a phone', async () => {
    for (const [dark, phone] of [
      [true, false],
      [true, true],
      [false, true],
    ] as const) {
      const { ctx, page } = await open(bob, `#/channel/${general}`, { dark, phone });
      for (const tab of ['Bookmarks', 'Files']) {
        await page.getByRole('tab', { name: tab }).click();
        await page
          .getByRole('tabpanel', { name: tab })
          .getByRole(tab === 'Files' ? 'table' : 'list')
          .first()
          .waitFor();
        const name = `chat-${tab.toLowerCase()}-${dark ? 'dark' : 'light'}-${phone ? 'phone' : 'desktop'}`;
        if (dark && !phone) await screenshot(page, name);
        expect(await seriousViolations(page), name).toEqual([]);
      }
      await ctx.close();
    }
  });
});
