import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  startTestServer,
  type TestServer,
} from '../../server/test/helpers/server.js';
import { World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * Built-in bots on the administration screen (docs/WEB.md, docs/BUILTIN-BOTS.md), in real Chromium:
 * a system administrator sees them marked System / Platform, disables the poll bot in one
 * organization (the server then refuses /poll there) and in every organization, and enables it again;
 * an org admin sees them read-only, without a control the server would refuse.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let orgAdmin: UserHandle;
let otherOrgId: string;
let myOrgName: string;
let myChannel: string;
let otherChannel: string;
const POLL = '/poll "Lunch on Friday?" Thai Pizza';

interface BotRow {
  id: string;
  org_id: string;
  name: string;
  status: string;
  builtin: string | null;
  type: string;
}

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  otherOrgId = org.id;
  orgAdmin = org.admin;
  const me = expectStatus(await world.admin.api.get('/api/auth/me'), 200);
  const orgs = expectStatus(await world.admin.api.get('/api/organizations'), 200).items as {
    id: string;
    name: string;
  }[];
  myOrgName = orgs.find((o) => o.id === me.org_id)!.name;
  myChannel = await world.channel(world.admin.api);
  otherChannel = await world.channel(orgAdmin.api);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const pollRow = async (orgId?: string): Promise<BotRow> => {
  const me = expectStatus(await world.admin.api.get('/api/auth/me'), 200);
  const rows = expectStatus(await world.admin.api.get('/api/bots'), 200).items as BotRow[];
  return rows.find((b) => b.builtin === 'poll' && b.org_id === (orgId ?? me.org_id))!;
};
const runPoll = async (user: UserHandle, channel: string) =>
  (await user.api.post('/api/commands/execute', { text: POLL, channel_id: channel })).status;

async function openAdmin(page: Page, email: string, password: string): Promise<void> {
  await signIn(page, server.url, email, password);
  await page.goto(`${server.url}/admin`);
  await page.getByRole('region', { name: 'Built-in bots' }).getByRole('row').nth(1).waitFor();
}

describe('built-in bots on the administration screen', () => {
  it('a system admin disables the poll bot here and everywhere, the server refuses /poll, and enables it', async () => {
    const admin = world.admin;
    const catalogue = expectStatus(await admin.api.get('/api/builtin-bots'), 200).items as {
      key: string;
      type: string;
    }[];
    const count = (type: string) => catalogue.filter((b) => b.type === type).length;
    expect(await runPoll(admin, myChannel)).toBe(202);
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await openAdmin(page, ADMIN_EMAIL, ADMIN_PASSWORD);
    const list = page.getByRole('region', { name: 'Built-in bots' });

    // Every built-in bot, marked System or Platform; the registered bots' table does not list them.
    const rows = list.getByRole('row');
    await expect.poll(() => rows.count()).toBe(catalogue.length + 1); // a header and every bot
    const text = (await list.textContent())!;
    for (const name of ['Search', 'Polls']) expect(text).toContain(name);
    expect(count('system')).toBeGreaterThanOrEqual(3);
    expect(await list.getByText('System', { exact: true }).count()).toBe(count('system'));
    expect(await list.getByText('Platform', { exact: true }).count()).toBe(count('platform'));
    const registered = page.getByRole('region', { name: 'Bots', exact: true });
    expect(await registered.getByText('Polls').count()).toBe(0);
    // The organization picker (a system admin sees every organization's rows).
    expect(await list.getByLabel('Organization').inputValue()).toBe((await pollRow()).org_id);

    // Disable Polls in this organization, with a confirmation first.
    const polls = list.getByRole('row').filter({ has: page.getByRole('rowheader', { name: /^Polls/ }) });
    await polls.getByRole('button', { name: `Disable Polls in ${myOrgName}` }).click();
    const confirm = list.getByRole('group', { name: 'Confirm the change' });
    expect(await confirm.textContent()).toContain(`Disable Polls in ${myOrgName}?`);
    // The confirmation takes the focus: Enter confirms.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Disable here');
    await page.keyboard.press('Enter');
    await polls.getByText('Disabled', { exact: true }).waitFor();
    await polls.getByText('Mixed: active in 1, disabled in 1').waitFor();
    expect((await pollRow()).status).toBe('disabled');
    expect((await pollRow(otherOrgId)).status).toBe('active');
    // The server refuses the command here, not in the other organization.
    const refused = await admin.api.post('/api/commands/execute', { text: POLL, channel_id: myChannel });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/disabled by the system administrator/);
    expect(await runPoll(orgAdmin, otherChannel)).toBe(202);
    // …and its commands left this organization's palette.
    const commands = expectStatus(await admin.api.get('/api/commands'), 200).items as { command: string }[];
    expect(commands.map((c) => c.command)).not.toContain('poll');
    await screenshot(page, 'admin-builtin-bots');
    expect(await seriousViolations(page)).toEqual([]);

    // Its details: what it does, and none of the controls the server refuses for a built-in bot.
    await polls.getByRole('button', { name: 'Details of Polls' }).click();
    const detail = page.getByRole('region', { name: 'Polls', exact: true });
    await detail
      .getByRole('region', { name: 'Commands' })
      .locator('code', { hasText: /^\/poll / })
      .waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('bot-title');
    const about = (await detail.textContent())!;
    expect(about).toContain('Polls with live buttons');
    expect(about).toContain('/survey');
    expect(about).toContain('message.created');
    expect(about).toContain('It has no webhook URL, API keys, webhook secret or incoming webhook');
    for (const region of ['API keys', 'Webhook secret', 'Webhook deliveries', 'MCP tool calls'])
      expect(await page.getByRole('region', { name: region }).count()).toBe(0);
    for (const button of [/^Delete/, 'Edit bot', 'Issue key', /secret/, 'Add command'])
      expect(await detail.getByRole('button', { name: button }).count()).toBe(0);
    expect(await detail.getByLabel('Webhook URL').count()).toBe(0);

    // Enable it here again, then disable it in every organization.
    await detail.getByRole('button', { name: `Enable in ${myOrgName}` }).click();
    await detail.getByRole('button', { name: 'Enable here' }).click();
    await detail.getByText('Active in all 2').waitFor();
    expect(await runPoll(admin, myChannel)).toBe(202);

    await detail.getByRole('button', { name: 'Disable in every organization' }).click();
    expect(await detail.getByRole('group', { name: 'Confirm the change' }).textContent()).toContain(
      'Disable Polls in every organization (2)?',
    );
    await screenshot(page, 'admin-builtin-bot-detail');
    expect(await seriousViolations(page)).toEqual([]);
    await detail.getByRole('button', { name: 'Disable everywhere' }).click();
    await detail.getByText('Disabled in all 2').waitFor();
    expect((await pollRow(otherOrgId)).status).toBe('disabled');
    expect(await runPoll(orgAdmin, otherChannel)).toBe(403);
    expect(await runPoll(admin, myChannel)).toBe(403);
    // A cancelled confirmation changes nothing.
    await detail.getByRole('button', { name: 'Enable in every organization' }).click();
    await detail.getByRole('button', { name: 'Cancel' }).click();
    expect((await pollRow()).status).toBe('disabled');

    await detail.getByRole('button', { name: 'Enable in every organization' }).click();
    await detail.getByRole('button', { name: 'Enable everywhere' }).click();
    await detail.getByText('Active in all 2').waitFor();
    expect(await runPoll(orgAdmin, otherChannel)).toBe(202);
    expect(await runPoll(admin, myChannel)).toBe(202);

    // Rename (name and description only; the server keeps webhook and events to the code).
    await detail.getByRole('button', { name: 'Rename or describe' }).click();
    const form = detail.getByRole('form', { name: 'Rename or describe Polls' });
    await form.getByLabel('Description').fill('Team polls with live buttons');
    await form.getByRole('button', { name: 'Save' }).click();
    await list.getByText('Team polls with live buttons').waitFor();
    await ctx.close();
  });

  it('works at phone width in the dark theme', async () => {
    const ctx = await newContext(browser, { dark: true, phone: true });
    const page = await ctx.newPage();
    await openAdmin(page, ADMIN_EMAIL, ADMIN_PASSWORD);
    const list = page.getByRole('region', { name: 'Built-in bots' });
    await list.getByRole('button', { name: 'Details of Search' }).click();
    await page
      .getByRole('region', { name: 'Search', exact: true })
      .getByRole('region', { name: 'Commands' })
      .waitFor();
    // Nothing widens the page beyond the phone's screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(page, 'admin-builtin-dark-phone');
    expect(await seriousViolations(page)).toEqual([]);
    await ctx.close();
  });

  it('an org admin sees the built-in bots read-only', async () => {
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await openAdmin(page, orgAdmin.email, 'user-password-1');
    const list = page.getByRole('region', { name: 'Built-in bots' });
    const all = expectStatus(await world.admin.api.get('/api/builtin-bots'), 200).items as unknown[];
    await expect.poll(() => list.getByRole('row').count()).toBe(all.length + 1);
    expect(await list.getByText('Only a system administrator can change them.').count()).toBe(1);
    // Only "Details" buttons: no enable/disable, no organization picker.
    const buttons = await list.getByRole('button').allTextContents();
    expect(new Set(buttons)).toEqual(new Set(['Details']));
    expect(await list.getByLabel('Organization').count()).toBe(0);

    await list.getByRole('button', { name: 'Details of Polls' }).click();
    const detail = page.getByRole('region', { name: 'Polls', exact: true });
    await detail
      .getByRole('region', { name: 'Commands' })
      .locator('code', { hasText: /^\/poll / })
      .waitFor();
    expect(await detail.getByRole('button').count()).toBe(0);
    expect(await detail.textContent()).toContain(
      'Only a system administrator can rename, enable or disable it.',
    );
    expect(await page.getByRole('region', { name: 'API keys' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    // The registered bots' table and its Register button are still there for its own bots.
    await page.getByRole('button', { name: 'Register a bot' }).waitFor();
    await ctx.close();
  });
});
