import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { rawMcp, rawSession } from '../../server/test/helpers/mcp.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * The administration pages added to the bots page: people, roles and departments (/admin/people), a
 * custom command's edit, and the MCP audit of a bot — in real Chromium against a real server.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let orgAdmin: UserHandle;
let member: UserHandle;
let orgId: string;
const PASSWORD = 'user-password-1';

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  orgId = org.id;
  orgAdmin = org.admin;
  member = await world.user({ organization_id: orgId, display_name: 'Mia Member', department: 'Support' });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function adminPage(user: UserHandle, path: string, opts: { dark?: boolean; phone?: boolean } = {}) {
  const ctx = await newContext(browser, opts);
  const page = await ctx.newPage();
  await signIn(page, server.url, user.email, PASSWORD);
  await page.goto(`${server.url}${path}`);
  await page.getByRole('heading', { name: 'Administration' }).waitFor();
  return { ctx, page };
}

const user = async (email: string) =>
  (expectStatus(await orgAdmin.api.get('/api/users', { query: { q: email } }), 200).items as any[])[0];

describe('people, roles and departments', () => {
  it('lets an org admin add a person, change role, department and state, and manage departments', async () => {
    const { ctx, page } = await adminPage(orgAdmin, '/admin');
    await page
      .getByRole('navigation', { name: 'Administration pages' })
      .getByRole('link', { name: /People/ })
      .click();
    expect(new URL(page.url()).pathname).toBe('/admin/people');
    const people = page.getByRole('region', { name: 'People' });
    await people.getByRole('row').filter({ hasText: 'Mia Member' }).waitFor();

    // Departments: add one, rename it.
    const departments = page.getByRole('region', { name: 'Departments' });
    await departments.getByLabel('New department').fill('Finance');
    await departments.getByRole('button', { name: 'Add department' }).click();
    await departments.getByRole('row').filter({ hasText: 'Finance' }).waitFor();
    await departments.getByRole('button', { name: 'Rename Finance' }).click();
    await departments.getByLabel('New name of Finance').fill('Accounting');
    await departments.getByRole('button', { name: 'Save' }).click();
    await departments.getByRole('row').filter({ hasText: 'Accounting' }).waitFor();

    // Add a person in it.
    const email = `${uniq('nina')}@test.local`;
    await people.getByRole('button', { name: 'Add a person' }).click();
    const form = people.getByRole('form', { name: 'Add a person' });
    await form.getByLabel('Email').fill(email);
    await form.getByLabel('Display name').fill('Nina Numbers');
    await form.getByLabel('Initial password').fill('nina-password-1');
    await form.getByLabel('Role').selectOption('dept_admin');
    await form.getByLabel('Department').selectOption('Accounting');
    // A system_admin role is not offered to an org admin.
    expect(await form.getByRole('option', { name: 'System admin' }).count()).toBe(0);
    await screenshot(page, 'admin-people-add');
    await form.getByRole('button', { name: 'Add person' }).click();
    const row = people.getByRole('row').filter({ hasText: 'Nina Numbers' });
    await row.waitFor();
    expect(await row.textContent()).toContain('Department admin');
    expect(await row.textContent()).toContain('Accounting');
    expect(await user(email)).toMatchObject({
      role: 'dept_admin',
      department: 'Accounting',
      status: 'active',
    });
    await departments.getByRole('row').filter({ hasText: 'Accounting' }).filter({ hasText: '1' }).waitFor();

    // Filters.
    const find = people.getByRole('search', { name: 'Find people' });
    await find.getByLabel('Role').selectOption('dept_admin');
    await expect.poll(() => people.getByRole('row').count()).toBe(2);
    await find.getByLabel('Role').selectOption('');
    await find.getByLabel('Name or email').fill('Mia');
    // The rows below the header: Mia's alone. (Waiting for two rows only could still see the role
    // filter's answer, Nina's row, before the name filter's came: it failed so in CI once.)
    await expect
      .poll(async () => (await people.getByRole('row').allTextContents()).slice(1))
      .toEqual([expect.stringContaining('Mia Member')]);
    await find.getByLabel('Name or email').fill('');
    await expect.poll(() => people.getByRole('row').count()).toBeGreaterThan(2);

    // Change Nina's role and state; she is signed out everywhere when deactivated.
    const nina = await world.anon.post('/api/auth/login', { email, password: 'nina-password-1' });
    const ninaToken = expectStatus(nina, 200).token as string;
    await row.getByRole('button', { name: 'Edit Nina Numbers' }).click();
    const edit = people.getByRole('form', { name: 'Edit Nina Numbers' });
    await edit.getByLabel('Role').selectOption('member');
    await edit.getByLabel('Department').selectOption('');
    await edit.getByLabel('State').selectOption('deactivated');
    await edit.getByText('signs them out everywhere').waitFor();
    await screenshot(page, 'admin-people-edit');
    await edit.getByRole('button', { name: 'Save' }).click();
    // The form (a row too, whose State list says "deactivated") closes once the server has saved.
    await edit.waitFor({ state: 'detached' });
    await people
      .getByRole('row')
      .filter({ hasText: 'Nina Numbers' })
      .filter({ hasText: 'deactivated' })
      .waitFor();
    expect(await user(email)).toMatchObject({ role: 'member', department: null, status: 'deactivated' });
    expect((await world.anon.get('/api/auth/me', { token: ninaToken })).status).toBe(401);

    // Delete the department, with a confirmation.
    await departments.getByRole('button', { name: 'Delete Accounting' }).click();
    await departments.getByRole('button', { name: 'Delete department' }).click();
    await departments.getByRole('row').filter({ hasText: 'Accounting' }).waitFor({ state: 'detached' });
    expect(
      (expectStatus(await orgAdmin.api.get('/api/departments'), 200).items as any[]).map((d) => d.name),
    ).toEqual(['Support']);
    await screenshot(page, 'admin-people');
    expect(await seriousViolations(page)).toEqual([]);
    await ctx.close();
  });

  it("shows the server's refusal, e.g. an email that is taken", async () => {
    const { ctx, page } = await adminPage(orgAdmin, '/admin/people');
    const people = page.getByRole('region', { name: 'People' });
    await people.getByRole('button', { name: 'Add a person' }).click();
    const form = people.getByRole('form', { name: 'Add a person' });
    await form.getByLabel('Email').fill(member.email); // taken
    await form.getByLabel('Display name').fill('Again');
    await form.getByLabel('Initial password').fill('again-password-1');
    await form.getByRole('button', { name: 'Add person' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: /already exists/ })
      .waitFor();
    await ctx.close();
  });

  it('is not offered to members, who see bots only', async () => {
    const { ctx, page } = await adminPage(member, '/admin/people');
    // Their navigation has Bots and Approvals (a member may own a bot), never People.
    const nav = page.getByRole('navigation', { name: 'Administration pages' });
    await nav.getByRole('link', { name: 'Approvals' }).waitFor();
    expect(await nav.getByRole('link', { name: /People/ }).count()).toBe(0);
    await page.getByRole('heading', { name: 'Bots', level: 2, exact: true }).waitFor();
    expect(await page.getByRole('region', { name: 'People' }).count()).toBe(0);
    await ctx.close();
  });

  it('has no serious accessibility violations, light and dark, desktop and phone', async () => {
    for (const dark of [false, true]) {
      for (const phone of [false, true]) {
        const { ctx, page } = await adminPage(orgAdmin, '/admin/people', { dark, phone });
        await page.getByRole('region', { name: 'People' }).getByRole('row').nth(1).waitFor();
        await page.getByRole('region', { name: 'Departments' }).getByRole('row').nth(1).waitFor();
        const name = `admin-people-${dark ? 'dark' : 'light'}-${phone ? 'phone' : 'desktop'}`;
        if (dark || phone) await screenshot(page, name);
        expect(await seriousViolations(page), name).toEqual([]);
        await ctx.close();
      }
    }
  });
});

async function manage(page: Page, bot: string) {
  await page.getByRole('button', { name: `Manage ${bot}` }).click();
  await page.getByRole('heading', { name: bot, level: 2 }).waitFor();
}

describe('bot administration additions', () => {
  it("edits a custom command's description and usage hint", async () => {
    const name = uniq('opsbot');
    const bot = expectStatus(await orgAdmin.api.post('/api/bots', { name }), 201);
    expectStatus(
      await orgAdmin.api.post(`/api/bots/${bot.bot_id}/commands`, {
        command: 'deploy',
        description: 'Deploy a service',
        usage_hint: '[service]',
      }),
      201,
    );
    const { ctx, page } = await adminPage(orgAdmin, '/admin');
    await manage(page, name);
    const commands = page.getByRole('region', { name: 'Slash commands' });
    await commands.getByRole('button', { name: 'Edit /deploy' }).click();
    const form = commands.getByRole('form', { name: 'Edit /deploy' });
    await form.getByLabel('Description').fill('Deploy a service to an environment');
    await form.getByLabel('Usage hint').fill('[service] [environment]');
    await screenshot(page, 'admin-command-edit');
    await form.getByRole('button', { name: 'Save command' }).click();
    await commands.getByText('Deploy a service to an environment').waitFor();
    expect(
      expectStatus(await orgAdmin.api.get(`/api/bots/${bot.bot_id}/commands`), 200).items[0],
    ).toMatchObject({
      description: 'Deploy a service to an environment',
      usage_hint: '[service] [environment]',
    });

    // Clearing the hint.
    await commands.getByRole('button', { name: 'Edit /deploy' }).click();
    await form.getByLabel('Usage hint').fill('');
    await form.getByRole('button', { name: 'Save command' }).click();
    await form.waitFor({ state: 'detached' });
    await expect
      .poll(
        async () =>
          expectStatus(await orgAdmin.api.get(`/api/bots/${bot.bot_id}/commands`), 200).items[0].usage_hint,
      )
      .toBeNull();
    await ctx.close();
  });

  it("shows the MCP audit of a bot's tool calls, filtered by tool", async () => {
    const name = uniq('mcpbot');
    const bot = await world.bot(orgAdmin.api, {}, { name });
    const session = await rawSession(server.url, bot.key);
    const call = (id: number, tool: string, args: Record<string, unknown>) =>
      rawMcp(server.url, {
        key: bot.key,
        session,
        body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } },
      });
    expect((await call(1, 'list_channels', {})).status).toBe(200);
    expect((await call(2, 'list_channels', {})).status).toBe(200);
    // A channel the bot is not in: the tool answers an error.
    expect(
      (await call(3, 'read_messages', { channel_id: '00000000-0000-4000-8000-000000000000' })).status,
    ).toBe(200);

    const { ctx, page } = await adminPage(orgAdmin, '/admin');
    await manage(page, name);
    const audit = page.getByRole('region', { name: 'MCP tool calls' });
    const rows = audit.getByRole('row');
    await expect.poll(() => rows.count()).toBe(4); // header + 3
    const failed = rows.filter({ hasText: 'read_messages' });
    expect(await failed.textContent()).toContain('tool error');
    expect(await failed.textContent()).toContain('not_found');
    expect(await rows.filter({ hasText: 'list_channels' }).first().textContent()).toContain('ok');
    expect(await audit.textContent()).toContain(bot.key.slice(0, 12));
    await audit.getByText('3 calls shown: 2 ok, 1 failed.').waitFor();
    await audit.getByLabel('Tool', { exact: true }).fill('list_channels');
    await audit.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => rows.count()).toBe(3);
    await audit.scrollIntoViewIfNeeded();
    await screenshot(page, 'admin-tool-calls');
    expect(await seriousViolations(page)).toEqual([]);
    await audit.getByRole('button', { name: 'All tools' }).click();
    await expect.poll(() => rows.count()).toBe(4);
    await ctx.close();
  });
});
