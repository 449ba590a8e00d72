import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * The chat in real Chromium against a real server (SQLite, or PostgreSQL with DATABASE_URL):
 * sign-in, a message seen in a second browser, its deletion seen there too, the slash palette with a
 * command a bot registered a moment earlier, mention suggestions, sanitized content, accessibility.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let bob: UserHandle;
let channelId: string;
const PASSWORD = 'user-password-1';

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  bob = await world.user({ display_name: 'Bob Stone' }, org.admin.api);
  channelId = await world.channel(ann.api, { name: uniq('general') });
  expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { user_id: bob.id }), 201);
  expectStatus(
    await ann.api.post(`/api/channels/${channelId}/messages`, { content: 'Welcome to the **team** channel' }),
    201,
  );
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function signedIn(
  user: UserHandle,
  opts: { dark?: boolean; phone?: boolean } = {},
): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await newContext(browser, opts);
  const page = await ctx.newPage();
  await signIn(page, server.url, user.email, PASSWORD);
  await page.goto(`${server.url}/#/channel/${channelId}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return { ctx, page };
}

describe('sign-in', () => {
  it('refuses a wrong password with a clear message, then signs in and out', async () => {
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await page.goto(server.url);
    await page.getByLabel('Email').fill(ann.email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Message' }).count()).toBe(0);
    await screenshot(page, 'signin-wrong-password');

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    const token = await page.evaluate(
      () => JSON.parse(localStorage.getItem('workroom.session')!).token as string,
    );

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    // Signing out revoked the token on the server.
    expect((await world.anon.get('/api/auth/me', { token })).status).toBe(401);
    await ctx.close();
  });

  it('says so when the server cannot be reached', async () => {
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await page.goto(server.url);
    await page.route('**/api/**', (route) => route.abort('connectionrefused'));
    await page.getByLabel('Email').fill(ann.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The server cannot be reached' }).waitFor();
    await ctx.close();
  });

  it('says so when the session has expired', async () => {
    const { ctx, page } = await signedIn(ann);
    const token = await page.evaluate(
      () => JSON.parse(localStorage.getItem('workroom.session')!).token as string,
    );
    expectStatus(await world.anon.post('/api/auth/logout', {}, { token }), 200);
    await page.reload();
    await page.getByText('Your session has expired').waitFor();
    await page.getByLabel('Email').waitFor();
    await ctx.close();
  });
});

describe('chat', () => {
  it('shows a message in a second browser and its deletion there too', async () => {
    const a = await signedIn(ann);
    const b = await signedIn(bob);
    const text = `Hello from Ann ${uniq('m')}`;
    const composer = a.page.getByRole('textbox', { name: 'Message' });
    await composer.fill(`${text} with **bold**`);
    await composer.press('Enter');
    const mine = a.page.getByRole('article').filter({ hasText: text });
    await mine.waitFor();
    expect(await mine.locator('strong').textContent()).toBe('bold');
    expect(await composer.inputValue()).toBe('');

    const theirs = b.page.getByRole('article').filter({ hasText: text });
    await theirs.waitFor({ timeout: 15_000 });

    await mine.hover();
    await mine.getByRole('button', { name: 'Delete' }).click();
    await mine.getByRole('button', { name: 'Delete' }).click(); // the confirmation
    await mine.waitFor({ state: 'detached' });
    await theirs.waitFor({ state: 'detached', timeout: 15_000 });
    await a.ctx.close();
    await b.ctx.close();
  });

  it('resumes after a dropped connection: messages missed meanwhile arrive once, in order', async () => {
    const ctx = await newContext(browser);
    // Lets the test cut the page's WebSocket and keep it from reconnecting, like a network outage.
    await ctx.addInitScript(() => {
      const w = window as unknown as {
        WebSocket: typeof WebSocket;
        __sockets: WebSocket[];
        __blockWs: boolean;
      };
      const Native = w.WebSocket;
      w.__sockets = [];
      w.__blockWs = false;
      w.WebSocket = class extends Native {
        constructor(url: string | URL, protocols?: string | string[]) {
          if (w.__blockWs) throw new DOMException('The network is down (test)', 'NetworkError');
          super(url, protocols);
          w.__sockets.push(this);
        }
      };
    });
    const page = await ctx.newPage();
    await signIn(page, server.url, bob.email, PASSWORD);
    await page.goto(`${server.url}/#/channel/${channelId}`);
    const status = page.getByRole('status').filter({ hasText: /^(Live|Connecting…|Offline — retrying)$/ });
    await status.filter({ hasText: 'Live' }).waitFor();

    // The outage: the socket drops and HTTP polling fails too (each refused request is counted).
    let refused = 0;
    await page.route('**/api/**', (route) => {
      refused++;
      return route.abort('internetdisconnected');
    });
    await page.evaluate(() => {
      const w = window as unknown as { __sockets: WebSocket[]; __blockWs: boolean };
      w.__blockWs = true;
      for (const s of w.__sockets) s.close();
    });
    await status.filter({ hasText: 'Offline' }).waitFor();
    const tag = uniq('missed');
    for (let i = 1; i <= 3; i++)
      expectStatus(
        await ann.api.post(`/api/channels/${channelId}/messages`, { content: `${tag} ${i}` }),
        201,
      );
    // The page has tried the network since (its poll, every 3 s offline) and could not get them.
    const refusedBefore = refused;
    await expect.poll(() => refused, { timeout: 10_000 }).toBeGreaterThan(refusedBefore);
    expect(await page.getByRole('article').filter({ hasText: tag }).count()).toBe(0);

    // Back online: the socket resumes from its last position and the server replays the three.
    await page.unroute('**/api/**');
    await page.evaluate(() => {
      (window as unknown as { __blockWs: boolean }).__blockWs = false;
      window.dispatchEvent(new Event('online'));
    });
    await status.filter({ hasText: 'Live' }).waitFor();
    await page
      .getByRole('article')
      .filter({ hasText: `${tag} 3` })
      .waitFor();
    // The sentinel: a message sent after the resume comes on the same socket after the replay, so
    // once it is shown a replayed duplicate would be too.
    expectStatus(await ann.api.post(`/api/channels/${channelId}/messages`, { content: `${tag} 4` }), 201);
    await page
      .getByRole('article')
      .filter({ hasText: `${tag} 4` })
      .waitFor();
    const texts = await page.getByRole('article').filter({ hasText: tag }).allTextContents();
    expect(texts.map((t) => /missed-\w+ (\d)/.exec(t)?.[1])).toEqual(['1', '2', '3', '4']);
    await ctx.close();
  });

  it('never runs script from message content, Markdown or bot HTML', async () => {
    const bot = await world.bot(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    const marker = uniq('xss');
    expectStatus(
      await ann.api.post(`/api/channels/${channelId}/messages`, {
        content: `${marker} <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [link](javascript:window.__xss=3)`,
      }),
      201,
    );
    expectStatus(
      await bot.api.post(`/api/channels/${channelId}/messages`, {
        content: `${marker} bot`,
        content_html: `<p>${marker} bot <b>html</b><img src="x" onerror="window.__xss=4"></p>`,
      }),
      201,
    );
    const { ctx, page } = await signedIn(bob);
    const botMessage = page.getByRole('article').filter({ hasText: `${marker} bot` });
    await botMessage.waitFor();
    expect(await botMessage.getByText('BOT', { exact: true }).count()).toBe(1);
    expect(await botMessage.locator('b').textContent()).toBe('html');
    await page
      .getByRole('article')
      .filter({ hasText: `${marker} ` })
      .first()
      .waitFor();
    // Every image of these messages has loaded or failed (a broken image's error event fires in the
    // same task that marks it complete): an onerror that survived would have run by now.
    await page.waitForFunction(
      (m) =>
        [...document.querySelectorAll<HTMLImageElement>('.messages img')]
          .filter((i) => i.closest('article')?.textContent?.includes(m))
          .every((i) => i.complete),
      marker,
    );
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(
      await page.locator('.messages [onerror], .messages script, .messages a[href^="javascript"]').count(),
    ).toBe(0);
    await ctx.close();
  });

  it('lists a command a bot registered a moment ago in the slash palette, and runs /help', async () => {
    const { ctx, page } = await signedIn(ann);
    const composer = page.getByRole('textbox', { name: 'Message' });
    // The page is already open when the bot registers its command.
    const bot = await world.bot(ann.api, { scopes: ['bots:commands:write'] });
    const command = uniq('deploy').toLowerCase();
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, {
        command,
        description: 'Deploy a service',
        usage_hint: '[service]',
      }),
      201,
    );
    await composer.fill('/');
    const palette = page.getByRole('listbox', { name: 'Commands' });
    await palette.getByRole('option', { name: `/${command}` }).waitFor();
    expect(await palette.getByRole('option', { name: '/help' }).count()).toBe(1);
    await screenshot(page, 'chat-slash-palette');

    // Filtered as you type; keyboard picks.
    await composer.pressSequentially('hel');
    await palette.getByRole('option', { name: '/help' }).waitFor();
    expect(await palette.getByRole('option', { name: `/${command}` }).count()).toBe(0);
    await composer.press('Enter');
    expect(await composer.inputValue()).toBe('/help ');
    await composer.press('Enter');
    await page.getByRole('list', { name: 'Only visible to you' }).getByText(`/${command}`).waitFor();
    await ctx.close();
  });

  it('suggests mentions as you type @', async () => {
    const { ctx, page } = await signedIn(ann);
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill('hi ');
    await composer.pressSequentially('@Bob');
    const list = page.getByRole('listbox', { name: 'Mention suggestions' });
    await list.getByRole('option', { name: /Bob Stone/ }).waitFor();
    await composer.press('Enter');
    expect(await composer.inputValue()).toBe('hi @Bob Stone ');
    await ctx.close();
  });

  it("moves a task on a topic's board by keyboard and by dragging", async () => {
    const project = expectStatus(await ann.api.post('/api/projects', { name: uniq('Launch') }), 201)
      .id as string;
    expectStatus(await ann.api.post(`/api/projects/${project}/members`, { user_id: bob.id }), 201);
    const topic = expectStatus(
      await ann.api.post(`/api/projects/${project}/topics`, { name: 'Release' }),
      201,
    ).id as string;
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await signIn(page, server.url, ann.email, PASSWORD);
    await page.goto(`${server.url}/#/topic/${topic}`);
    await page.getByRole('tab', { name: 'Task board' }).click();
    const form = page.getByRole('form', { name: 'New task' });
    await form.getByLabel('Title').fill('Write the release notes');
    await form.getByLabel('Assignee').selectOption({ label: 'Bob Stone' });
    await form.getByLabel('Due date').fill('2030-01-31');
    await form.getByLabel('Priority').selectOption('high');
    await form.getByRole('button', { name: 'Add task' }).click();

    const column = (name: string) => page.getByRole('region', { name: new RegExp(`^${name}`) });
    const card = (name: string) => column(name).getByRole('article', { name: 'Write the release notes' });
    await card('To do').waitFor();
    expect(await card('To do').textContent()).toContain('Bob Stone');
    expect(await card('To do').textContent()).toContain('due 2030-01-31');
    const taskStatus = async () =>
      ((await ann.api.get(`/api/topics/${topic}/tasks`)).body.items as { status: string }[])[0]!.status;

    // Keyboard: the card's Move select.
    await card('To do').getByLabel('Move Write the release notes').focus();
    await card('To do').getByLabel('Move Write the release notes').selectOption('in_progress');
    await card('In progress').waitFor();
    await expect.poll(taskStatus).toBe('in_progress');
    await screenshot(page, 'chat-task-board');
    expect(await seriousViolations(page)).toEqual([]);

    // Mouse: drag the card to Done.
    await page.getByRole('listitem').filter({ hasText: 'Write the release notes' }).dragTo(column('Done'));
    await card('Done').waitFor();
    await expect.poll(taskStatus).toBe('done');
    await ctx.close();
  });

  it('searches messages and people, opens the room of a result and a DM with a person', async () => {
    const word = uniq('zebra');
    expectStatus(
      await ann.api.post(`/api/channels/${channelId}/messages`, { content: `the ${word} crossed` }),
      201,
    );
    const { ctx, page } = await signedIn(bob);
    const box = page.getByRole('searchbox', { name: 'Search' });
    await box.fill(word);
    await box.press('Enter');
    const results = page.getByRole('region', { name: `Results for “${word}”` });
    const hit = results.getByRole('button', { name: new RegExp(`the ${word} crossed`) });
    await hit.waitFor();
    expect(await hit.locator('mark').count()).toBeGreaterThan(0);
    await screenshot(page, 'chat-search');
    expect(await seriousViolations(page)).toEqual([]);
    await hit.click();
    await page
      .getByRole('article')
      .filter({ hasText: `the ${word} crossed` })
      .waitFor();

    await box.fill('Ann Lee');
    await box.press('Enter');
    await page.getByRole('button', { name: 'Message Ann Lee' }).click();
    await page.getByRole('heading', { name: 'Ann Lee', level: 1 }).waitFor();
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill('a direct hello');
    await composer.press('Enter');
    await page.getByRole('article').filter({ hasText: 'a direct hello' }).waitFor();
    await page
      .getByRole('navigation', { name: 'Conversations' })
      .getByRole('link', { name: /Ann Lee/ })
      .waitFor();
    await ctx.close();
  });

  it('has no serious accessibility violations, in light and dark, desktop and phone', async () => {
    for (const dark of [false, true]) {
      for (const phone of [false, true]) {
        const { ctx, page } = await signedIn(ann, { dark, phone });
        await page.getByRole('article').first().waitFor();
        const name = `chat-${dark ? 'dark' : 'light'}-${phone ? 'phone' : 'desktop'}`;
        await screenshot(page, name);
        expect(await seriousViolations(page), name).toEqual([]);
        if (phone && !dark) {
          await page.getByRole('button', { name: 'Conversations' }).click();
          await page.getByRole('navigation', { name: 'Conversations' }).getByRole('link').first().waitFor();
          // The drawer's slide-in has ended: no finite animation or transition is still running.
          await page.waitForFunction(() =>
            document
              .getAnimations()
              .every((a) => a.playState !== 'running' || a.effect?.getComputedTiming().endTime === Infinity),
          );
          await screenshot(page, 'chat-light-phone-sidebar');
        }
        await ctx.close();
      }
    }
  });
});
