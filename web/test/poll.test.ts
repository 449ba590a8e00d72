import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, signIn } from './browser.js';

/**
 * A live poll in the web app (docs/bots/POLL.md): Ann posts it from the composer with /poll, three
 * colleagues vote through the API while her page is open, she votes by clicking a button, and the
 * message updates in place without a reload. Screenshot: docs/screenshots/chat-live-poll.png.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let voters: UserHandle[];
let channelId: string;
const PASSWORD = 'user-password-1';

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  voters = [];
  for (const name of ['Bob Stone', 'Chen Wu', 'Dana Cruz']) {
    voters.push(await world.user({ display_name: name }, org.admin.api));
  }
  channelId = await world.channel(ann.api, { name: 'team' }); // a fresh organization: the name is free
  for (const v of voters) {
    expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { user_id: v.id }), 201);
  }
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('poll bot in the web app', () => {
  it('posts a poll from the composer; votes update it live; a click votes', async () => {
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await signIn(page, server.url, ann.email, PASSWORD);
    await page.goto(`${server.url}/#/channel/${channelId}`);
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.waitFor();

    await composer.fill(
      '/poll "Where should we have the team lunch on Friday?" "Thai place" Pizzeria "Salad bar" --closes 2h',
    );
    await composer.press('Enter');
    const poll = page
      .getByRole('article')
      .filter({ hasText: 'Where should we have the team lunch on Friday?' });
    await poll.getByRole('button', { name: 'Thai place' }).waitFor();
    expect(await poll.getByRole('button', { name: 'Retract my vote' }).count()).toBe(1);
    expect(await poll.getByRole('button', { name: 'Close poll (creator)' }).count()).toBe(1);

    // Colleagues vote through the API while the page is open.
    const messages = expectStatus(await ann.api.get(`/api/channels/${channelId}/messages`), 200).items as {
      id: string;
      actions: unknown[] | null;
    }[];
    const pollId = messages.find((m) => m.actions !== null)!.id;
    for (const [i, v] of voters.entries()) {
      expectStatus(
        await v.api.post(`/api/messages/${pollId}/actions`, { action_id: `vote-${i === 2 ? 1 : 0}` }),
        202,
      );
    }
    await poll.getByText('3 votes', { exact: true }).waitFor({ timeout: 20_000 });

    // Ann votes with a click; the message updates in place.
    await poll.getByRole('button', { name: 'Thai place' }).click();
    await poll.getByText('4 votes', { exact: true }).waitFor({ timeout: 20_000 });
    await expect
      .poll(async () => poll.textContent(), { timeout: 20_000 })
      .toMatch(/1\. Thai place · 3 votes · 75%/);
    // Names in the order the voters' accounts were made (their ids), not anonymous.
    expect(await poll.textContent()).toContain('Ann Lee, Bob Stone, Chen Wu');
    expect(await poll.textContent()).toMatch(/2\. Pizzeria · 1 vote · 25%\s*█*░*\s*Dana Cruz/);
    // The poll is the command's answer: the composer adds no note ("sent to Polls…" would be untrue).
    expect(await page.getByRole('list', { name: 'Only visible to you' }).count()).toBe(0);
    await screenshot(page, 'chat-live-poll');
    await ctx.close();
  });
});
