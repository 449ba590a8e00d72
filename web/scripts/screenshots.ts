/**
 * `npm run screenshots`: the documentation's screenshots (docs/screenshots/), taken in Debian's Chromium
 * from a demo workspace seeded here through the public API — a small product team with channels, a
 * project with topics and tasks, a conversation with reactions, a bot with a slash command. Tests no
 * longer write into docs/screenshots/ (web/test/browser.ts); only this command does.
 *
 * Needs the built app (the npm script builds it first). Run: npm run screenshots
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { Api, expectStatus } from '../../server/test/helpers/client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startTestServer } from '../../server/test/helpers/server.js';
import { login } from '../../server/test/helpers/world.js';
import { DESKTOP, DOCS_SCREENSHOTS, launch, PHONE, signIn } from '../test/browser.js';

const PASSWORD = 'demo-password-1';

interface Person {
  id: string;
  email: string;
  api: Api;
}

async function main(): Promise<void> {
  mkdirSync(DOCS_SCREENSHOTS, { recursive: true });
  const server = await startTestServer();
  const browser = await launch();
  try {
    const anon = new Api(server.url);
    const root = anon.as(await login(server.url, ADMIN_EMAIL, ADMIN_PASSWORD));
    const org = expectStatus(await root.post('/api/organizations', { name: 'Northwind Labs' }), 201) as {
      id: string;
    };
    const person = async (display_name: string, email: string, role = 'member'): Promise<Person> => {
      const u = expectStatus(
        await root.post('/api/users', {
          email,
          display_name,
          password: PASSWORD,
          role,
          organization_id: org.id,
        }),
        201,
      ) as { id: string };
      return { id: u.id, email, api: anon.as(await login(server.url, email, PASSWORD)) };
    };
    const maya = await person('Maya Patel', 'maya@northwind.example', 'org_admin');
    const leo = await person('Leo Martins', 'leo@northwind.example');
    const sara = await person('Sara Kim', 'sara@northwind.example');
    const tom = await person('Tom Becker', 'tom@northwind.example');
    const team = [leo, sara, tom];

    const channel = async (name: string, description: string, members: Person[]) => {
      const c = expectStatus(await maya.api.post('/api/channels', { name, description }), 201) as {
        id: string;
      };
      for (const m of members) await maya.api.post(`/api/channels/${c.id}/members`, { user_id: m.id });
      return c.id;
    };
    const general = await channel('general', 'Company-wide news and questions', team);
    const releases = await channel('releases', 'Release planning and deploy notes', team);
    await channel('design', 'Design reviews and critiques', [sara]);

    // A bot with a slash command, in #releases and #general.
    const bot = expectStatus(
      await maya.api.post('/api/bots', {
        name: 'Deployer',
        description: 'Deploys builds to staging and production',
      }),
      201,
    ) as { bot_id: string };
    for (const [command, description, usage_hint] of [
      ['deploy', 'Deploy a version to an environment', '<version> [staging|production]'],
      ['rollback', 'Roll the last deploy back', '[environment]'],
    ])
      await maya.api.post(`/api/bots/${bot.bot_id}/commands`, { command, description, usage_hint });
    for (const c of [general, releases])
      await maya.api.post(`/api/channels/${c}/members`, { bot_id: bot.bot_id });
    const key = expectStatus(await maya.api.post(`/api/bots/${bot.bot_id}/api-keys`, {}), 201) as {
      key: string;
    };
    const botApi = anon.as(key.key);

    const say = async (who: Api, where: string, content: string) =>
      (expectStatus(await who.post(`/api/channels/${where}/messages`, { content }), 201) as { id: string })
        .id;
    const react = (who: Person, id: string, emoji: string) =>
      who.api.post(`/api/messages/${id}/reactions`, { emoji });

    const hello = await say(
      maya.api,
      general,
      'Good morning, everyone! Quick reminder: all-hands is at **3 pm** today.',
    );
    await say(maya.api, general, 'Agenda is in the doc pinned in #releases — add your questions there.');
    await react(leo, hello, '👍');
    await react(sara, hello, '👍');
    await react(tom, hello, '☕');
    const q = await say(
      leo.api,
      general,
      'Will the session be recorded? I am on a customer call until 3:30.',
    );
    await react(maya, q, '✅');
    await say(maya.api, general, 'Yes, the recording goes out tonight.');
    const ship = await say(
      sara.api,
      general,
      'The new onboarding screens are live on staging 🎉\n\n- fewer steps (5 → 3)\n- dark theme support\n- screen reader labels everywhere',
    );
    for (const p of [maya, leo, tom]) await react(p, ship, '🎉');
    await react(leo, ship, '❤️');
    await say(tom.api, general, 'Looks great. I will run the accessibility checks this afternoon.');
    await say(botApi, general, 'Deployed **web 2.14.0** to staging in 3 m 12 s. All 412 checks passed.');
    await say(leo.api, releases, 'Release 2.14 freeze is Thursday noon.');

    // A project with topics and tasks.
    const project = expectStatus(
      await maya.api.post('/api/projects', { name: 'Website relaunch', description: 'New site by Q3' }),
      201,
    ) as { id: string };
    for (const m of team) await maya.api.post(`/api/projects/${project.id}/members`, { user_id: m.id });
    const planning = expectStatus(
      await maya.api.post(`/api/projects/${project.id}/topics`, { name: 'Planning' }),
      201,
    ) as { id: string };
    await maya.api.post(`/api/projects/${project.id}/topics`, { name: 'Content' });
    for (const [title, status, assignee] of [
      ['Write the launch announcement', 'todo', leo],
      ['Migrate the blog posts', 'in_progress', tom],
      ['Accessibility review', 'review', sara],
      ['Choose the hosting plan', 'done', maya],
    ] as const) {
      const t = expectStatus(
        await maya.api.post(`/api/topics/${planning.id}/tasks`, { title, assignee_id: assignee.id }),
        201,
      ) as { id: string };
      if (status !== 'todo') await maya.api.patch(`/api/tasks/${t.id}`, { status });
    }
    await maya.api.post('/api/dm-rooms', { user_ids: [leo.id] });

    const shot = async (page: Page, name: string, fullPage = false) => {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.waitForTimeout(150); // let the last frame settle (no test here: documentation only)
      await page.screenshot({ path: join(DOCS_SCREENSHOTS, `${name}.png`), fullPage });
      process.stdout.write(`wrote docs/screenshots/${name}.png\n`);
    };
    const open = async (dark: boolean, phone: boolean) => {
      const ctx = await browser.newContext({
        viewport: phone ? PHONE : DESKTOP,
        deviceScaleFactor: 1,
        colorScheme: dark ? 'dark' : 'light',
        ...(phone ? { isMobile: true, hasTouch: true } : {}),
      });
      const page = await ctx.newPage();
      await signIn(page, server.url, maya.email, PASSWORD);
      await page.goto(`${server.url}/#/channel/${general}`);
      await page.getByRole('log', { name: 'Messages' }).getByText('All 412 checks passed').waitFor();
      return page;
    };

    const light = await open(false, false);
    await shot(light, 'chat-light-desktop');
    await light.getByRole('textbox', { name: 'Message' }).fill('/');
    await light
      .getByRole('listbox', { name: 'Commands' })
      .getByRole('option', { name: /deploy/ })
      .waitFor();
    await shot(light, 'chat-slash-palette');
    await light.getByRole('textbox', { name: 'Message' }).fill('');
    await light.getByRole('button', { name: 'Channel settings' }).click();
    await light.getByRole('dialog', { name: 'Settings of #general' }).getByText('Tom Becker').waitFor();
    await shot(light, 'chat-channel-settings');
    await light.keyboard.press('Escape');
    await light.goto(`${server.url}/#/topic/${planning.id}`);
    await light.getByRole('tab', { name: 'Task board' }).click();
    await light.getByText('Migrate the blog posts', { exact: true }).waitFor();
    await shot(light, 'chat-task-board');
    await light.goto(`${server.url}/admin`);
    await light.getByRole('heading', { name: 'Administration' }).waitFor();
    await shot(light, 'admin-light-desktop', true);
    await light.goto(`${server.url}/admin/people`);
    await light.getByRole('region', { name: 'People' }).getByText('Sara Kim').waitFor();
    await shot(light, 'admin-people', true);

    // A live poll in #releases (the poll bot, built in): posted from the composer, three votes by API.
    await light.goto(`${server.url}/#/channel/${releases}`);
    const composer = light.getByRole('textbox', { name: 'Message' });
    await composer.fill('/poll "Which day do we ship 2.14?" Tuesday Wednesday Thursday --closes 1d');
    await composer.press('Enter');
    const poll = light.getByRole('article').filter({ hasText: 'Which day do we ship 2.14?' });
    await poll.getByRole('button', { name: 'Wednesday' }).waitFor();
    const posted = expectStatus(await maya.api.get(`/api/channels/${releases}/messages`), 200).items as {
      id: string;
      actions: unknown[] | null;
    }[];
    const pollId = posted.find((m) => m.actions !== null)!.id;
    for (const [who, choice] of [
      [leo, 1],
      [sara, 1],
      [tom, 2],
    ] as const)
      await who.api.post(`/api/messages/${pollId}/actions`, { action_id: `vote-${choice}` });
    await poll.getByText('3 votes', { exact: true }).waitFor();
    await shot(light, 'chat-live-poll');

    await shot(await open(true, false), 'chat-dark-desktop');
    await shot(await open(false, true), 'chat-light-phone');

    // The first run of a new organization's admin.
    const fresh = expectStatus(await root.post('/api/organizations', { name: 'Fresh Start' }), 201) as {
      id: string;
    };
    expectStatus(
      await root.post('/api/users', {
        email: 'admin@fresh.example',
        display_name: 'Riley Admin',
        password: PASSWORD,
        role: 'org_admin',
        organization_id: fresh.id,
      }),
      201,
    );
    const ctx = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1, colorScheme: 'light' });
    const first = await ctx.newPage();
    await signIn(first, server.url, 'admin@fresh.example', PASSWORD);
    await first.getByRole('region', { name: 'Welcome to Workroom' }).waitFor();
    await shot(first, 'chat-first-run');
  } finally {
    await browser.close();
    await server.close();
  }
}

await main();
