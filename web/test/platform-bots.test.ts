import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { TestClock } from '../../server/src/runtime/clock.js';
import {
  builtinBotId,
  channelMessages,
  dmToBot,
  jobsSettled,
  moveClockTo,
  waitFor,
  waitForDm,
} from '../../server/test/helpers/platform-bots.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, signIn } from './browser.js';

/**
 * The stand-up and task notification bots in the web app (docs/bots/STANDUP.md, TASK-NOTIFY.md):
 * - Ann sets a stand-up up from the composer for 09:00 UTC; her colleagues answer by DM through the API;
 *   the summary appears in the channel she has open. Screenshot: chat-standup-summary.png. Time is the
 *   server's test clock (server/src/runtime/clock.ts), moved on to the stand-up and to its summary: no
 *   real minute passes (the same bot on the real clock is server/test/standup-crash.test.ts).
 * - Ann subscribes #dev to a project's task events from the composer, creates a task and moves it on
 *   the topic's task board; the notifications appear in #dev. Screenshot: chat-task-notifications.png.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let team: UserHandle[];
const PASSWORD = 'user-password-1';
/** A Wednesday morning, a minute before the stand-up. */
const clock = new TestClock('2031-01-15T08:59:00.000Z');
const STANDUP_AT = Date.parse('2031-01-15T09:00:00.000Z');

beforeAll(async () => {
  server = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' }, { clock });
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  team = [];
  for (const name of ['Bob Stone', 'Chen Wu', 'Dana Cruz']) {
    team.push(await world.user({ display_name: name }, org.admin.api));
  }
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('platform bots in the web app', () => {
  it('shows a stand-up summary posted in the channel', async () => {
    const channel = await world.channel(ann.api, { name: 'team' });
    for (const u of team)
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { user_id: u.id }), 201);
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await signIn(page, server.url, ann.email, PASSWORD);
    await page.goto(`${server.url}/#/channel/${channel}`);
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.waitFor();
    await composer.fill(
      `/standup setup 09:00 mon-sun UTC "What did you do yesterday?" "What will you do today?" "Blockers?" window:1m remind:off`,
    );
    await composer.press('Enter');
    await page.getByRole('article').filter({ hasText: 'Stand-up set up for this channel' }).waitFor();

    const bot = await builtinBotId(ann.api, 'standup');
    await moveClockTo(server, clock, STANDUP_AT); // the questions go out
    const answers: [UserHandle, string[]][] = [
      [ann, ['Reviewed the importer PR and fixed two flaky tests', 'Ship 1.4 to staging', 'None']],
      [
        team[0]!,
        [
          'Wrote the migration for read markers',
          'Load test on PostgreSQL',
          'Waiting for the staging database',
        ],
      ],
      [team[1]!, ['Designed the new task board cards', 'Usability session with support']],
    ];
    await Promise.all(
      answers.map(async ([u, texts]) => {
        for (const [i, text] of texts.entries()) {
          await waitForDm(u, bot, `**${i + 1}/3**`, 1, 20_000);
          await dmToBot(u, bot, text);
        }
      }),
    );
    // Every answer is in (each got the thanks, or the question after their last answer): the window closes.
    for (const [u, texts] of answers)
      await waitForDm(u, bot, texts.length === 3 ? 'Thanks!' : `**${texts.length + 1}/3**`, 1, 20_000);
    await jobsSettled(server, clock, bot);
    await moveClockTo(server, clock, STANDUP_AT + 60_000);
    const summary = page.getByRole('article').filter({ hasText: 'Stand-up · #team' });
    await summary.waitFor({ timeout: 20_000 });
    expect(await summary.textContent()).toContain('3 of 4 answered · not answered: Dana Cruz');
    expect(await summary.textContent()).toContain('Waiting for the staging database');
    await screenshot(page, 'chat-standup-summary');
    await ctx.close();
  }, 120_000);

  it('shows task notifications of a project in a channel, as tasks move on the board', async () => {
    const project = expectStatus(await ann.api.post('/api/projects', { name: 'Website relaunch' }), 201)
      .id as string;
    expectStatus(await ann.api.post(`/api/projects/${project}/members`, { user_id: team[0]!.id }), 201);
    const topic = expectStatus(await ann.api.post(`/api/projects/${project}/topics`, { name: 'Design' }), 201)
      .id as string;
    const dev = await world.channel(ann.api, { name: 'dev' });
    expectStatus(await ann.api.post(`/api/channels/${dev}/members`, { user_id: team[0]!.id }), 201);

    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await signIn(page, server.url, ann.email, PASSWORD);
    await page.goto(`${server.url}/#/channel/${dev}`);
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.waitFor();
    await composer.fill('/tasknotify add "Website relaunch" created assigned status');
    await composer.press('Enter');
    await page.getByRole('article').filter({ hasText: 'gets the task events of project' }).waitFor();

    // Tasks are created and moved on the topic's board (in another page), by Ann and through the API.
    const board = await ctx.newPage();
    await board.goto(`${server.url}/#/topic/${topic}`);
    await board.getByRole('tab', { name: 'Task board' }).click();
    const form = board.getByRole('form', { name: 'New task' });
    await form.getByLabel('Title').fill('New hero banner');
    await form.getByLabel('Assignee').selectOption({ label: 'Bob Stone' });
    await form.getByLabel('Due date').fill('2030-01-31');
    await form.getByLabel('Priority').selectOption('high');
    await form.getByRole('button', { name: 'Add task' }).click();
    const column = (name: string) => board.getByRole('region', { name: new RegExp(`^${name}`) });
    const card = (name: string) => column(name).getByRole('article', { name: 'New hero banner' });
    await card('To do').waitFor();
    await card('To do').getByLabel('Move New hero banner').selectOption('in_progress');
    await card('In progress').waitFor();
    const t2 = expectStatus(
      await team[0]!.api.post(`/api/topics/${topic}/tasks`, { title: 'Footer links' }),
      201,
    );
    expectStatus(await team[0]!.api.patch(`/api/tasks/${t2.id}`, { assignee_id: ann.id }), 200);
    await board.close();

    await waitFor('four lines', async () => {
      const lines = (await channelMessages(ann.api, dev)).filter((m) =>
        m.content.includes('in [Website relaunch › Design]'),
      );
      return lines.length >= 4;
    });
    const lines = page.getByRole('article').filter({ hasText: 'Website relaunch › Design' });
    await expect.poll(async () => lines.count(), { timeout: 20_000 }).toBe(4);
    expect(
      await page.getByRole('article').filter({ hasText: 'Task created' }).first().textContent(),
    ).toContain('assigned to Bob Stone');
    await page.getByRole('article').filter({ hasText: 'todo → in progress' }).waitFor();
    await page.getByRole('article').filter({ hasText: 'Task assigned' }).waitFor();
    await screenshot(page, 'chat-task-notifications');
    await ctx.close();
  }, 90_000);
});
