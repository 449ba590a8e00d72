import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { rawMcp, rawSession } from '../../server/test/helpers/mcp.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, seriousViolations, signIn } from './browser.js';

/**
 * Agent grants in the administration screen (issue 21), in real Chromium: issue a key with grants,
 * see them on the key's row and in the API, and see MCP list only the granted tools.
 */
let server: TestServer;
let browser: Browser;
let admin: UserHandle;
let world: World;

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  admin = (await world.org()).admin;
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('administration screen: agent grants', () => {
  it('issues a key with grants, shows them on the key, and MCP lists only the granted tools', async () => {
    const name = uniq('agentbot');
    const bot = expectStatus(await admin.api.post('/api/bots', { name }), 201);
    const channel = await world.channel(admin.api);
    expectStatus(await admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.bot_id }), 201);

    const ctx = await newContext(browser, {});
    const page = await ctx.newPage();
    await signIn(page, server.url, admin.email, 'user-password-1');
    await page.goto(`${server.url}/admin`);
    await page.getByRole('heading', { name: 'Administration' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: name });
    await row.getByRole('button', { name: /Manage/ }).click();
    await page.getByRole('heading', { name, level: 2 }).waitFor();

    const keys = page.getByRole('region', { name: 'API keys' });
    await keys.getByText('Agent grants (optional)').click();
    const tools = keys.getByRole('group', { name: /MCP tools the key may call/ });
    await tools.getByRole('checkbox', { name: 'send_message' }).check();
    await tools.getByRole('checkbox', { name: 'read_messages' }).check();
    await keys.getByRole('checkbox', { name: 'May mention @all and @here' }).uncheck();
    // The issue form has the grants editor's fields: containers picked from the bot's memberships,
    // both budgets, approval, confirmation and the guard rails.
    const channelName = expectStatus(await admin.api.get(`/api/channels/${channel}`), 200).name as string;
    const where = keys.getByRole('group', { name: /Only in these/ });
    await where.getByRole('checkbox', { name: `#${channelName}` }).check();
    await keys.getByLabel('Writes per hour').fill('30');
    await keys.getByLabel('Writes per day').fill('200');
    const approval = keys.getByRole('group', { name: /Tools that need a human's approval/ });
    await approval.getByRole('checkbox', { name: 'send_message' }).check();
    const confirm = keys.getByRole('group', { name: /must confirm/ });
    await confirm.getByRole('checkbox', { name: 'read_messages' }).check();
    await keys.getByRole('checkbox', { name: /same text goes to many places/ }).uncheck();
    expect(await seriousViolations(page)).toEqual([]);
    await keys.getByRole('button', { name: 'Issue key' }).click();
    const shown = keys.getByLabel('New API key');
    await shown.waitFor();
    const key = (await shown.textContent())!;
    await keys.getByRole('button', { name: 'I have stored it' }).click();

    const keyRow = keys.getByRole('row').filter({ hasText: key.slice(0, 12) });
    await keyRow.waitFor();
    const text = (await keyRow.textContent())!;
    expect(text).toContain('tools: send_message, read_messages');
    expect(text).toContain('1 container');
    expect(text).toContain('30 writes/hour');
    expect(text).toContain('approval: send_message');
    expect(text).toContain('no @all/@here');
    expect(text).toContain('200 writes/day');
    expect(text).toContain('confirm: read_messages');
    expect(text).toContain('no burst pause');

    const listed = expectStatus(await admin.api.get(`/api/bots/${bot.bot_id}/api-keys`), 200).items as any[];
    expect(listed[0].grants).toEqual({
      tools: ['send_message', 'read_messages'],
      containers: [channel],
      writes_per_hour: 30,
      writes_per_day: 200,
      approval: ['send_message'],
      confirm: ['read_messages'],
      mentions_all: false,
      pause_on: { burst: false },
    });
    const session = await rawSession(server.url, key);
    const list = await rawMcp(server.url, {
      key,
      session,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    });
    // The granted tools, and get_pending_action: a key with an approval grant can always ask how a held
    // call ended (docs/MCP.md, "Approval").
    expect((list.body.result.tools as { name: string }[]).map((t) => t.name)).toEqual([
      'send_message',
      'read_messages',
      'get_pending_action',
    ]);
    // The audit shows the change of grants and a call the grants refused.
    await rawMcp(server.url, {
      key,
      session,
      body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_users', arguments: {} } },
    });
    const audit = page.getByRole('region', { name: 'MCP tool calls' });
    await expect
      .poll(async () => {
        await audit.getByRole('button', { name: 'Refresh' }).click();
        return audit.getByRole('table').textContent();
      })
      .toMatch(/grants\.set.*grants set/s);
    expect(await audit.getByRole('row').filter({ hasText: 'list_users' }).textContent()).toContain(
      'refused by tools',
    );
    await ctx.close();
  });
});
