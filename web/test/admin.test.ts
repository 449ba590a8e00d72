import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { rawMcp, rawSession } from '../../server/test/helpers/mcp.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * The administration screen in real Chromium: register a bot, issue a key (shown once, copied),
 * see it work over MCP, revoke it and see the next MCP call refused; webhook secret; commands.
 */
let server: TestServer;
let browser: Browser;
let admin: UserHandle;
let world: World;

beforeAll(async () => {
  // Webhooks to a receiver on this machine, and a quick retry, for the delivery log.
  server = await startTestServer({
    WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
    WORKROOM_WEBHOOK_RETRY_DELAYS: '100ms',
  });
  browser = await launch();
  world = await World.create(server.url);
  admin = (await world.org()).admin;
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const toolsList = (key: string, session: string | undefined) =>
  rawMcp(server.url, { key, session, body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } });

describe('administration screen', () => {
  it('registers a bot, issues a key shown once, and revokes it so MCP refuses it', async () => {
    const ctx = await newContext(browser, { clipboard: true });
    const page = await ctx.newPage();
    await signIn(page, server.url, admin.email, 'user-password-1');
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByRole('heading', { name: 'Administration' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/admin');

    const name = uniq('deploybot');
    await page.getByRole('button', { name: 'Register a bot' }).click();
    const form = page.getByRole('form', { name: 'Register a bot' });
    await form.getByLabel('Name').fill(name);
    await form.getByLabel('Description').fill('Deploys services on command');
    await form.getByRole('checkbox', { name: 'message.created' }).check();
    await form.getByRole('checkbox', { name: 'task.created' }).check();
    await screenshot(page, 'admin-register-bot');
    await form.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name, level: 2 }).waitFor();
    const row = page.getByRole('row').filter({ hasText: name });
    expect(await row.textContent()).toContain('message.created, task.created');

    // Issue a key: the full key is shown once, with a warning and a copy button.
    const keys = page.getByRole('region', { name: 'API keys' });
    await keys.getByRole('checkbox', { name: 'messages:read' }).check();
    await keys.getByLabel('Expires in days').fill('30');
    await keys.getByRole('button', { name: 'Issue key' }).click();
    const shown = keys.getByLabel('New API key');
    await shown.waitFor();
    const key = (await shown.textContent())!;
    expect(key).toMatch(/^wrbk_[0-9a-f]{8}_live_[0-9a-f]{48}$/);
    expect(await keys.getByText('It is shown only once').count()).toBe(1);
    await keys.getByRole('button', { name: 'Copy key' }).click();
    await keys.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await screenshot(page, 'admin-key-shown-once');
    await keys.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByText(key).count()).toBe(0);
    const keyRow = keys.getByRole('row').filter({ hasText: key.slice(0, 12) });
    expect(await keyRow.textContent()).toContain('messages:read');
    expect(await keyRow.textContent()).toContain('active');

    const session = await rawSession(server.url, key);
    const listed = await toolsList(key, session);
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('read_messages');

    // Revoke, with a confirmation first.
    await keyRow.getByRole('button', { name: /^Revoke/ }).click();
    await keyRow.getByRole('button', { name: 'Confirm revoke' }).click();
    await keyRow.getByText('revoked').waitFor();
    const refused = await toolsList(key, session);
    expect(refused.status).toBe(401);
    await expect(rawSession(server.url, key)).rejects.toThrow(/401/);

    // Webhook secret, shown once.
    const secret = page.getByRole('region', { name: 'Webhook secret' });
    await secret.getByRole('button', { name: /secret/ }).click();
    expect((await secret.getByLabel('Webhook secret').textContent())!.length).toBeGreaterThan(20);

    // A custom command, then gone again.
    const commands = page.getByRole('region', { name: 'Slash commands' });
    await commands.getByLabel('Command', { exact: true }).fill('ship');
    await commands.getByLabel('Description').fill('Ship a release');
    await commands.getByLabel('Usage hint').fill('[version]');
    await commands.getByRole('button', { name: 'Add command' }).click();
    await commands.getByRole('button', { name: 'Delete /ship' }).waitFor();
    await screenshot(page, 'admin-bot-detail');
    expect(await seriousViolations(page)).toEqual([]);
    await commands.getByRole('button', { name: 'Delete /ship' }).click();
    await commands.getByRole('button', { name: 'Delete /ship' }).waitFor({ state: 'detached' });

    // Edit, then delete the bot.
    await page.getByRole('button', { name: 'Edit bot' }).click();
    const edit = page.getByRole('form', { name: `Edit ${name}` });
    await edit.getByLabel('Description').fill('Now with a new description');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Now with a new description').first().waitFor();
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete bot' }).click();
    await page.getByRole('row').filter({ hasText: name }).waitFor({ state: 'detached' });
    await ctx.close();
  });

  it('shows failed and successful deliveries with their attempts, and redelivers a failed one', async () => {
    // A receiver that fails while `failing` is set.
    let failing = true;
    const received: { id: string; status: number }[] = [];
    const receiver: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const status = failing ? 500 : 200;
        received.push({ id: String(req.headers['webhook-id']), status });
        res.writeHead(status).end(failing ? 'receiver is down' : 'ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const name = uniq('hookbot');
      const bot = expectStatus(
        await admin.api.post('/api/bots', { name, webhook_url: url, events: ['message.created'] }),
        201,
      );
      expectStatus(await admin.api.post(`/api/bots/${bot.bot_id}/webhook-secret`), 201);
      const channel = await world.channel(admin.api);
      expectStatus(await admin.api.post(`/api/channels/${channel}/members`, { bot_id: bot.bot_id }), 201);
      const deliveries = async () =>
        (await admin.api.get(`/api/bots/${bot.bot_id}/deliveries`)).body.items as {
          id: string;
          state: string;
        }[];

      expectStatus(
        await admin.api.post(`/api/channels/${channel}/messages`, { content: 'first, fails' }),
        201,
      );
      await expect
        .poll(async () => (await deliveries()).map((d) => d.state), { timeout: 15_000 })
        .toEqual(['failed']);
      failing = false;
      expectStatus(
        await admin.api.post(`/api/channels/${channel}/messages`, { content: 'second, arrives' }),
        201,
      );
      await expect
        .poll(async () => (await deliveries()).map((d) => d.state).sort(), { timeout: 15_000 })
        .toEqual(['delivered', 'failed']);
      const failedId = (await deliveries()).find((d) => d.state === 'failed')!.id;

      const ctx = await newContext(browser);
      const page = await ctx.newPage();
      await signIn(page, server.url, admin.email, 'user-password-1');
      await page.goto(`${server.url}/admin`);
      await page.getByRole('button', { name: `Manage ${name}` }).click();
      const log = page.getByRole('region', { name: 'Webhook deliveries' });
      const failedRow = log.getByRole('row').filter({ hasText: 'failed' });
      await failedRow.waitFor();
      await log.getByRole('row').filter({ hasText: 'delivered' }).waitFor();
      await failedRow.getByText(/2 attempts/).click(); // opens the attempt list
      expect(await failedRow.getByRole('listitem').count()).toBe(2);
      expect(await failedRow.textContent()).toContain('HTTP 500');
      await log.getByRole('img', { name: /1 successful, 2 failed/ }).waitFor();
      await screenshot(page, 'admin-delivery-log');
      expect(await seriousViolations(page)).toEqual([]);

      // Filter, then redeliver the failed one: the receiver now answers 200.
      await log.getByLabel('Show').selectOption('failed');
      await log.getByRole('row').filter({ hasText: 'delivered' }).waitFor({ state: 'detached' });
      await log.getByRole('button', { name: /^Redeliver message.created/ }).click();
      await expect
        .poll(() => received.filter((r) => r.id === failedId && r.status === 200).length, { timeout: 15_000 })
        .toBe(1);
      await log.getByLabel('Show').selectOption('');
      await log.getByRole('button', { name: 'Refresh' }).click();
      await expect
        .poll(() => log.getByRole('row').filter({ hasText: 'failed' }).count(), { timeout: 15_000 })
        .toBe(0);

      // A test event, and pause/resume.
      await log.getByRole('button', { name: 'Send a test event' }).click();
      await log.getByRole('row').filter({ hasText: 'webhook.test' }).waitFor();
      await log.getByRole('button', { name: 'Pause deliveries' }).click();
      await log.getByText(/Paused/).waitFor();
      await log.getByRole('button', { name: 'Resume deliveries' }).click();
      await log.getByRole('button', { name: 'Pause deliveries' }).waitFor();
      await ctx.close();
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  it('has no serious accessibility violations, light and dark, desktop and phone', async () => {
    for (const dark of [false, true]) {
      for (const phone of [false, true]) {
        const ctx = await newContext(browser, { dark, phone });
        const page = await ctx.newPage();
        await signIn(page, server.url, admin.email, 'user-password-1');
        await page.goto(`${server.url}/admin`);
        await page.getByRole('heading', { name: 'Administration' }).waitFor();
        const b = page.getByRole('button', { name: /^Manage / }).first();
        if ((await b.count()) === 0) {
          await page.getByRole('button', { name: 'Register a bot' }).click();
          await page.getByRole('form', { name: 'Register a bot' }).getByLabel('Name').fill(uniq('a11ybot'));
          await page.getByRole('button', { name: 'Register', exact: true }).click();
        } else await b.click();
        await page.getByRole('region', { name: 'API keys' }).waitFor();
        const name = `admin-${dark ? 'dark' : 'light'}-${phone ? 'phone' : 'desktop'}`;
        await screenshot(page, name);
        expect(await seriousViolations(page), name).toEqual([]);
        await ctx.close();
      }
    }
  });
});
