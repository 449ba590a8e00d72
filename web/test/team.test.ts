import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { Receiver } from '../../server/test/helpers/receiver.js';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  startTestServer,
  type TestServer,
} from '../../server/test/helpers/server.js';
import { launch, newContext, seriousViolations, signIn } from './browser.js';

/**
 * Issue 17, "what must be shown": from an empty install, only through the UI — sign in, create a
 * channel and a project with a topic, create a second user, register a bot with a slash command, add
 * the user and the bot, start a DM, post, react, edit, delete, run the bot's command; the second
 * user's sidebar follows live (a channel appears when they are added, disappears when removed); own
 * password change with the current one. axe-core (default rules) on every screen and dialog.
 */
let server: TestServer;
let browser: Browser;
let receiver: Receiver;
let hookUrl: string;
let a: Page;
let b: Page;
const BOB_EMAIL = 'bob.stone@example.test';
const BOB_PASSWORD = 'bob-password-1';
const checked: string[] = [];

async function axe(page: Page, where: string) {
  const v = await seriousViolations(page);
  expect(v, `${where}: ${JSON.stringify(v, null, 1)}`).toEqual([]);
  checked.push(where);
}

const sidebar = (p: Page) => p.getByRole('navigation', { name: 'Conversations' });
const composer = (p: Page) => p.getByRole('textbox', { name: 'Message' });
const message = (p: Page, text: string) =>
  p.getByRole('log', { name: 'Messages' }).getByRole('article').filter({ hasText: text });

beforeAll(async () => {
  server = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
  browser = await launch();
  receiver = await Receiver.start();
  hookUrl = receiver.hook('deployer', (r) => {
    const d = r.json.data as { command?: string; args?: string } | undefined;
    if (d?.command === 'deploy')
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: `Deploying ${d.args || 'main'} to staging` }),
      };
    return { status: 200 };
  });
  a = await (await newContext(browser)).newPage();
  b = await (await newContext(browser)).newPage();
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.close();
});

describe('a team starts in the app, from an empty install', () => {
  it('the admin is led from the empty state to a channel, a project with a topic, a person and a bot', async () => {
    await signIn(a, server.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    const welcome = a.getByRole('region', { name: 'Welcome to Workroom' });
    await welcome.waitFor();
    await axe(a, 'first run');

    await welcome.getByRole('button', { name: 'Create channel' }).click();
    const dialog = a.getByRole('dialog', { name: 'New channel' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill('general');
    await dialog.getByRole('textbox', { name: /Description/ }).fill('Everything about the team');
    await axe(a, 'new channel dialog');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await a.getByRole('heading', { name: '#general', level: 1 }).waitFor();
    await sidebar(a)
      .getByRole('link', { name: /general/ })
      .waitFor();

    await sidebar(a).getByRole('button', { name: 'New project' }).click();
    const project = a.getByRole('dialog', { name: 'New project' });
    await project.getByRole('textbox', { name: 'Name' }).fill('Launch');
    await project.getByRole('textbox', { name: /First topic/ }).fill('Planning');
    await axe(a, 'new project dialog');
    await project.getByRole('button', { name: 'Create' }).click();
    await a.getByRole('heading', { name: 'Launch › Planning', level: 1 }).waitFor();
    await sidebar(a).getByRole('button', { name: 'New topic in Launch' }).click();
    const topic = a.getByRole('dialog', { name: 'New topic in Launch' });
    await topic.getByRole('textbox', { name: 'Name' }).fill('Retro');
    await topic.getByRole('button', { name: 'Create' }).click();
    await a.getByRole('heading', { name: 'Launch › Retro', level: 1 }).waitFor();

    // A second person, through the people page.
    await a.getByRole('link', { name: 'Admin' }).click();
    await a
      .getByRole('navigation', { name: 'Administration pages' })
      .getByRole('link', { name: /People/ })
      .click();
    const people = a.getByRole('region', { name: 'People' });
    await people.getByRole('button', { name: 'Add a person' }).click();
    const form = people.getByRole('form', { name: 'Add a person' });
    await form.getByLabel('Email').fill(BOB_EMAIL);
    await form.getByLabel('Display name').fill('Bob Stone');
    await form.getByLabel('Initial password').fill(BOB_PASSWORD);
    await form.getByRole('button', { name: 'Add person' }).click();
    await people.getByRole('row').filter({ hasText: 'Bob Stone' }).waitFor();

    // A bot with a webhook, its secret and a /deploy command; added to #general from its page.
    await a
      .getByRole('navigation', { name: 'Administration pages' })
      .getByRole('link', { name: /Bots/ })
      .click();
    await a.getByRole('button', { name: 'Register a bot' }).click();
    const reg = a.getByRole('form', { name: 'Register a bot' });
    await reg.getByLabel('Name').fill('Deployer');
    await reg.getByLabel('Webhook URL').fill(hookUrl);
    await reg.getByRole('button', { name: 'Register' }).click();
    await a.getByRole('heading', { name: 'Deployer', level: 2 }).waitFor();
    // "Manage" brought the panel into view and moved the focus to it.
    expect(await a.evaluate(() => document.activeElement?.textContent)).toBe('Deployer');
    await a
      .getByRole('region', { name: 'Webhook secret' })
      .getByRole('button', { name: /secret/ })
      .click();
    const commands = a.getByRole('region', { name: 'Slash commands' });
    await commands.getByLabel('Command', { exact: true }).fill('deploy');
    await commands.getByLabel('Description').fill('Deploy a version to staging');
    await commands.getByLabel('Usage hint').fill('[version]');
    await commands.getByRole('button', { name: 'Add command' }).click();
    await commands.getByRole('button', { name: 'Delete /deploy' }).waitFor();
    const channels = a.getByRole('region', { name: 'Channels' });
    await channels.getByLabel('Channel').selectOption({ label: '#general' });
    await channels.getByRole('button', { name: 'Add to channel' }).click();
    await channels.getByText('Deployer added to #general.').waitFor();
    await axe(a, 'bot page with channels');
  });

  it("the second person's sidebar follows live: added to a channel, a new channel, removed", async () => {
    await signIn(b, server.url, BOB_EMAIL, BOB_PASSWORD);
    await sidebar(b).getByText('No conversations').waitFor();
    expect(
      await sidebar(b)
        .getByRole('link', { name: /general/ })
        .count(),
    ).toBe(0);

    await a.getByRole('link', { name: 'Chat' }).click();
    await sidebar(a)
      .getByRole('link', { name: /general/ })
      .click();
    await a.getByRole('button', { name: 'Channel settings' }).click();
    const settings = a.getByRole('dialog', { name: 'Settings of #general' });
    await settings.getByRole('listitem').filter({ hasText: 'Deployer' }).waitFor();
    await settings.getByRole('combobox', { name: 'Add a person or bot' }).fill('Bob');
    await settings.getByRole('option', { name: /Bob Stone/ }).click();
    await settings.getByText('Bob Stone added to #general.').waitFor();
    await axe(a, 'channel settings dialog');
    await settings.getByRole('button', { name: 'Close' }).click();
    // Live, without a reload.
    await sidebar(b)
      .getByRole('link', { name: /general/ })
      .waitFor();

    // A channel created in A and Bob added: it appears in B.
    await sidebar(a).getByRole('button', { name: 'New channel' }).click();
    const dialog = a.getByRole('dialog', { name: 'New channel' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill('releases');
    await dialog.getByRole('textbox', { name: 'Name' }).press('Enter');
    await a.getByRole('heading', { name: '#releases', level: 1 }).waitFor();
    // The bot is not in #releases: its command offers to add it, then runs.
    await composer(a).fill('/deploy v3');
    await composer(a).press('Enter');
    await a.getByRole('button', { name: 'Add Deployer and run it' }).click();
    await message(a, 'Deploying v3 to staging').waitFor();
    await a.getByRole('button', { name: 'Channel settings' }).click();
    const rs = a.getByRole('dialog', { name: 'Settings of #releases' });
    await rs.getByRole('combobox', { name: 'Add a person or bot' }).fill('bob');
    await rs.getByRole('combobox', { name: 'Add a person or bot' }).press('ArrowDown');
    await rs.getByRole('option', { name: /Bob Stone/ }).waitFor();
    await rs.getByRole('combobox', { name: 'Add a person or bot' }).press('Enter');
    await rs.getByText('Bob Stone added to #releases.').waitFor();
    await sidebar(b)
      .getByRole('link', { name: /releases/ })
      .waitFor();

    // Removed: it disappears from B's sidebar, and B's open room closes.
    await sidebar(b)
      .getByRole('link', { name: /releases/ })
      .click();
    await b.getByRole('heading', { name: '#releases', level: 1 }).waitFor();
    await rs.getByRole('button', { name: 'Remove Bob Stone' }).click();
    await rs.getByText('Bob Stone removed.').waitFor();
    await sidebar(b)
      .getByRole('link', { name: /releases/ })
      .waitFor({ state: 'detached' });
    await b.getByRole('heading', { name: '#releases', level: 1 }).waitFor({ state: 'detached' });
    await rs.getByRole('button', { name: 'Close' }).click();
  });

  it('chat: post, group, react, edit, delete, the bot’s slash command, a DM', async () => {
    await sidebar(a)
      .getByRole('link', { name: /general/ })
      .click();
    await a.getByRole('heading', { name: '#general', level: 1 }).waitFor();
    for (const text of ['Morning all', 'The release is on Thursday', 'typo here']) {
      await composer(a).fill(text);
      await composer(a).press('Enter');
      await message(a, text).waitFor();
    }
    // One author in a row: one header (the later ones are grouped under it).
    expect(await a.locator('article.message.grouped').count()).toBe(2);

    // React: the count appears for both people, live for Bob.
    await sidebar(b)
      .getByRole('link', { name: /general/ })
      .click();
    await message(b, 'Morning all').waitFor();
    const morning = message(a, 'Morning all');
    await morning.hover();
    await morning.getByRole('button', { name: 'Add reaction' }).click();
    await axe(a, 'reaction menu');
    await morning.getByRole('button', { name: 'React with 👍' }).click();
    await morning.getByRole('button', { name: '👍 1' }).waitFor();
    await message(b, 'Morning all').getByRole('button', { name: '👍 1' }).waitFor();
    await message(b, 'Morning all').getByRole('button', { name: '👍 1' }).click();
    await morning.getByRole('button', { name: '👍 2' }).waitFor();

    // Edit and delete one's own.
    const release = message(a, 'The release is on Thursday');
    await release.hover();
    await release.getByRole('button', { name: 'Edit' }).click();
    // (While edited, the text is in the textbox, not the article's text: found on the page.)
    await a.getByRole('textbox', { name: 'Edit message' }).fill('The release is on Friday');
    await a.getByRole('textbox', { name: 'Edit message' }).press('Enter');
    await message(b, 'The release is on Friday').getByText('(edited)').waitFor();
    const typo = message(a, 'typo here');
    await typo.hover();
    await typo.getByRole('button', { name: 'Delete' }).click();
    await typo.getByRole('button', { name: 'Delete' }).click();
    await message(b, 'typo here').waitFor({ state: 'detached' });

    // The bot's command from the palette: the option shows (and is named by) command, hint and bot.
    await composer(a).fill('/dep');
    const palette = a.getByRole('listbox', { name: 'Commands' });
    const option = palette.getByRole('option', { name: '/deploy [version] · Deployer' });
    await option.waitFor();
    await axe(a, 'slash palette open');
    await composer(a).press('Enter');
    await composer(a).pressSequentially('v2.1');
    await composer(a).press('Enter');
    await message(a, 'Deploying v2.1 to staging').waitFor();
    await message(b, 'Deploying v2.1 to staging').waitFor();

    // A DM with Bob.
    await sidebar(a).getByRole('button', { name: 'New direct message' }).click();
    const dm = a.getByRole('dialog', { name: 'New direct message' });
    await dm.getByRole('combobox', { name: 'Person or bot' }).fill('Bob');
    await axe(a, 'new DM dialog');
    await dm.getByRole('option', { name: /Bob Stone/ }).click();
    await a.getByRole('heading', { name: 'Bob Stone', level: 1 }).waitFor();
    await composer(a).fill('Can you check the release notes?');
    await composer(a).press('Enter');
    await sidebar(b)
      .getByRole('link', { name: /System Admin|Admin/ })
      .waitFor();
  });

  it('browse and join, settings, the theme button, the account: own password with the current one', async () => {
    // The DM Bob has not read yet: opening it offers a jump to the first unread message, marked "New".
    await sidebar(b)
      .getByRole('link', { name: /System Admin|Admin/ })
      .click();
    await b.getByRole('button', { name: '1 unread · Jump to first unread' }).click();
    await b.locator('.unread-line').getByText('New').waitFor();
    await message(b, 'Can you check the release notes?').waitFor();

    // Bob browses the public channels; general is his, releases he may join again.
    await sidebar(b).getByRole('button', { name: 'Browse channels' }).click();
    const browse = b.getByRole('dialog', { name: 'Browse channels' });
    await axe(b, 'browse channels dialog');
    await browse.getByRole('button', { name: 'Join releases' }).click();
    await b.getByRole('heading', { name: '#releases', level: 1 }).waitFor();
    // A member who did not create it: no archive and no "Remove" for others, but Leave.
    await b.getByRole('button', { name: 'Channel settings' }).click();
    const s = b.getByRole('dialog', { name: 'Settings of #releases' });
    await s.getByRole('button', { name: 'Leave' }).waitFor();
    expect(await s.getByRole('button', { name: /Archive|Remove/ }).count()).toBe(0);
    await s.getByRole('button', { name: 'Leave' }).click();
    await sidebar(b)
      .getByRole('link', { name: /releases/ })
      .waitFor({ state: 'detached' });

    // The theme button names the theme it switches to.
    await b.getByRole('button', { name: 'Dark theme' }).click();
    await b.getByRole('button', { name: 'Light theme' }).waitFor();
    await axe(b, 'chat, dark');

    await b.getByRole('button', { name: 'Bob Stone' }).click();
    const account = b.getByRole('dialog', { name: 'Your account' });
    await axe(b, 'account dialog');
    await account.getByLabel('Current password').fill('not-my-password');
    await account.getByLabel('New password', { exact: true }).fill('bob-password-2');
    await account.getByLabel('New password again').fill('bob-password-2');
    await account.getByRole('button', { name: 'Change password' }).click();
    await account.getByRole('alert').filter({ hasText: 'current password is not correct' }).waitFor();
    await account.getByLabel('Current password').fill(BOB_PASSWORD);
    await account.getByLabel('New password', { exact: true }).fill('bob-password-2');
    await account.getByLabel('New password again').fill('bob-password-2');
    await account.getByRole('button', { name: 'Change password' }).click();
    await account.getByText('Password changed.').waitFor();
    await account.getByRole('button', { name: 'Close' }).click();
    // Still signed in (with a new session) and the chat still works.
    await sidebar(b)
      .getByRole('link', { name: /general/ })
      .click();
    await sidebar(a)
      .getByRole('link', { name: /general/ })
      .click();
    await composer(b).fill('Password changed, still here');
    await composer(b).press('Enter');
    await message(b, 'Password changed, still here').waitFor();
    await message(a, 'Password changed, still here').waitFor();

    // Archive: the creator archives #releases; it leaves the sidebar.
    await sidebar(a)
      .getByRole('link', { name: /releases/ })
      .click();
    await a.getByRole('button', { name: 'Channel settings' }).click();
    const rs = a.getByRole('dialog', { name: 'Settings of #releases' });
    await rs.getByRole('button', { name: 'Archive channel' }).click();
    await axe(a, 'archive confirmation');
    await rs.getByRole('button', { name: 'Archive', exact: true }).click();
    await sidebar(a)
      .getByRole('link', { name: /releases/ })
      .waitFor({ state: 'detached' });

    // Sign out everywhere.
    await b.getByRole('button', { name: 'Bob Stone' }).click();
    await b
      .getByRole('dialog', { name: 'Your account' })
      .getByRole('button', { name: 'Sign out everywhere' })
      .click();
    await b.getByRole('button', { name: 'Sign in' }).waitFor();
    console.log(`axe (default rules, 0 serious/critical) on: ${checked.join('; ')}`);
  });
});
