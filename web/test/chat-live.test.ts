import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { Receiver } from '../../server/test/helpers/receiver.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * The composer's notes after a slash command say what really happened (docs/WEB.md): a bot's reply in
 * the room needs none, an ephemeral reply is the note (once), a failed delivery or a bot without a
 * webhook says so, and only a command still waiting for its answer says the reply will appear (and it
 * does). And read markers across tabs: a room read in one browser clears its unread count live in the
 * same person's other browser.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let receiver: Receiver;
let ann: UserHandle;
let bob: UserHandle;
let channel: string;
let random: string;
let randomName: string;
let quiet: string;
let responseUrl = '';
const PASSWORD = 'user-password-1';
const json = (body: unknown) => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

beforeAll(async () => {
  server = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
  browser = await launch();
  receiver = await Receiver.start();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  bob = await world.user({ display_name: 'Bob Stone' }, org.admin.api);
  channel = await world.channel(ann.api, { name: uniq('ops') });
  randomName = uniq('random');
  random = await world.channel(ann.api, { name: randomName });
  quiet = await world.channel(ann.api, { name: uniq('quiet') });
  for (const c of [random, quiet])
    expectStatus(await ann.api.post(`/api/channels/${c}/members`, { user_id: bob.id }), 201);

  // A webhook bot whose answer depends on the command, and a bot without a webhook URL.
  const hook = receiver.hook('echo', (r) => {
    const command = r.json.data?.command as string | undefined;
    if (command === 'pong') return json({ content: 'pong from Echo' });
    if (command === 'whisper') return json({ content: 'Only Ann reads this', ephemeral: true });
    if (command === 'broken') return { status: 500, body: 'down' };
    if (command === 'later') responseUrl = String(r.json.data.response_url);
    return { status: 200 }; // "ok": an acknowledgement, the answer comes later
  });
  const admin = org.admin.api;
  const echo = expectStatus(await admin.post('/api/bots', { name: 'Echo', webhook_url: hook }), 201)
    .bot_id as string;
  expectStatus(await admin.post(`/api/bots/${echo}/webhook-secret`), 201);
  const silent = expectStatus(await admin.post('/api/bots', { name: 'Silent' }), 201).bot_id as string;
  for (const [bot, command] of [
    [echo, 'pong'],
    [echo, 'whisper'],
    [echo, 'broken'],
    [echo, 'later'],
    [silent, 'nobody'],
  ] as const) {
    expectStatus(await admin.post(`/api/bots/${bot}/commands`, { command, description: command }), 201);
  }
  for (const bot of [echo, silent])
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot }), 201);
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.close();
});

async function open(user: UserHandle, path: string): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await newContext(browser);
  const page = await ctx.newPage();
  await signIn(page, server.url, user.email, PASSWORD);
  await page.goto(`${server.url}/${path}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return { ctx, page };
}

describe('the composer’s note after a command', () => {
  it('is true in every case', async () => {
    const { ctx, page } = await open(ann, `#/channel/${channel}`);
    const composer = page.getByRole('textbox', { name: 'Message' });
    const notes = page.getByRole('list', { name: 'Only visible to you' }).getByRole('listitem');
    const run = async (text: string) => {
      await composer.fill(`${text} `); // a space after the command: the palette stays closed
      await composer.press('Enter');
      await expect.poll(() => composer.inputValue()).toBe('');
    };

    // The reply is a message in the room: no note.
    await run('/pong');
    await page.getByRole('article').filter({ hasText: 'pong from Echo' }).waitFor();
    expect(await notes.count()).toBe(0);

    // An ephemeral reply is the note, once (it arrives live and in the command's answer).
    await run('/whisper');
    await notes.filter({ hasText: 'Echo: Only Ann reads this' }).waitFor();
    await page.waitForTimeout(500);
    expect(await notes.count()).toBe(1);
    expect(await page.getByRole('article').filter({ hasText: 'Only Ann reads this' }).count()).toBe(0);

    // The bot's webhook failed: said so, no promise of a reply.
    await run('/broken');
    await notes.filter({ hasText: 'Echo did not get /broken: The bot answered HTTP 500' }).waitFor();

    // A bot without a webhook URL cannot answer.
    await run('/nobody');
    await notes.filter({ hasText: 'Silent has no webhook URL' }).waitFor();

    // Acknowledged without an answer: the reply will appear — and it does, through the response URL.
    await run('/later');
    await notes.filter({ hasText: '/later sent to Echo; its reply will appear here.' }).waitFor();
    expect(await notes.filter({ hasText: 'will appear' }).count()).toBe(1);
    expect(responseUrl).toMatch(/^http/);
    // The URL names the server's public address (PORT 0 here): the same path on the test server.
    const res = await fetch(`${server.url}${new URL(responseUrl).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Deployed v1.4', ephemeral: true }),
    });
    expect(res.status).toBe(200);
    await notes.filter({ hasText: 'Echo: Deployed v1.4' }).waitFor();
    await screenshot(page, 'chat-command-notes');
    expect(await seriousViolations(page)).toEqual([]);
    await ctx.close();
  });
});

describe('read markers across browsers', () => {
  it('a room read in one browser clears its unread count live in the other', async () => {
    const link = (page: Page, name: RegExp) =>
      page.getByRole('navigation', { name: 'Conversations' }).getByRole('link', { name });
    // Bob, in two browsers, both in a room Ann's messages do not go to.
    const one = await open(bob, `#/channel/${quiet}`);
    const two = await open(bob, `#/channel/${quiet}`);

    for (const t of ['first', 'second'])
      expectStatus(await ann.api.post(`/api/channels/${random}/messages`, { content: t }), 201);
    for (const b of [one, two]) await link(b.page, new RegExp(`${randomName}\\s+2 unread`)).waitFor();
    // The second browser can learn it only from the live stream: its GET /api/unread now fails.
    await two.page.route('**/api/unread', (route) => route.abort());

    await link(one.page, new RegExp(randomName)).click();
    await one.page.getByRole('article').filter({ hasText: 'second' }).waitFor();
    await link(two.page, new RegExp(`^${randomName}$`)).waitFor({ timeout: 10_000 });
    expect(await link(two.page, /unread/).count()).toBe(0);
    await one.ctx.close();
    await two.ctx.close();
  });
});
