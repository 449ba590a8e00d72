import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, seriousViolations, signIn } from './browser.js';

/**
 * Editing a key's grants in the administration screen and resuming a paused key (issue 21, point 4),
 * in real Chromium: the editor picks containers from the bot's memberships and sets the budgets and
 * guard rails; a key the burst rule paused shows why, and Resume makes it work again (audited).
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

describe('administration screen: editing grants, resuming a paused key', () => {
  it('edits a key’s grants, then resumes the key after the burst rule paused it', async () => {
    const name = uniq('guardbot');
    const bot = expectStatus(await admin.api.post('/api/bots', { name }), 201);
    const chans: { id: string; name: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const chanName = uniq('room');
      const id = await world.channel(admin.api, { name: chanName });
      expectStatus(await admin.api.post(`/api/channels/${id}/members`, { bot_id: bot.bot_id }), 201);
      chans.push({ id, name: chanName });
    }
    const key = expectStatus(
      await admin.api.post(`/api/bots/${bot.bot_id}/api-keys`, { grants: { tools: ['send_message'] } }),
      201,
    );

    const ctx = await newContext(browser, {});
    const page = await ctx.newPage();
    await signIn(page, server.url, admin.email, 'user-password-1');
    await page.goto(`${server.url}/admin`);
    await page.getByRole('heading', { name: 'Administration' }).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: name })
      .getByRole('button', { name: /Manage/ })
      .click();
    await page.getByRole('heading', { name, level: 2 }).waitFor();

    const keys = page.getByRole('region', { name: 'API keys' });
    await keys.getByRole('button', { name: `Edit grants of ${key.key_prefix}` }).click();
    const form = keys.getByRole('form', { name: `Grants of ${key.key_prefix}…` });
    const where = form.getByRole('group', { name: /Only in these/ });
    // The bot's channels are offered; pick two of them.
    await where.getByRole('checkbox', { name: `#${chans[0]!.name}` }).check();
    await where.getByRole('checkbox', { name: `#${chans[1]!.name}` }).check();
    await form
      .getByRole('group', { name: /MCP tools the key may call/ })
      .getByRole('checkbox', { name: 'read_messages' })
      .check();
    await form.getByLabel('Writes per day').fill('50');
    await form.getByRole('checkbox', { name: 'May mention @all and @here' }).uncheck();
    await form.getByRole('spinbutton', { name: 'Places' }).fill('2');
    await form.getByRole('checkbox', { name: /keep meeting a spent budget/ }).uncheck();
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByRole('button', { name: 'Save grants' }).click();
    await form.waitFor({ state: 'detached' });

    const row = keys.getByRole('row').filter({ hasText: key.key_prefix });
    await expect.poll(() => row.textContent()).toContain('50 writes/day');
    const text = (await row.textContent())!;
    expect(text).toContain('tools: send_message, read_messages');
    expect(text).toContain('2 containers');
    expect(text).toContain('pause at 2 places in 10 min');
    expect(text).toContain('no budget pause');
    const listed = (
      expectStatus(await admin.api.get(`/api/bots/${bot.bot_id}/api-keys`), 200).items as any[]
    )[0];
    expect(listed.grants).toEqual({
      tools: ['send_message', 'read_messages'],
      containers: [chans[0]!.id, chans[1]!.id],
      writes_per_day: 50,
      mentions_all: false,
      pause_on: { budget: false, burst: { targets: 2, window_minutes: 10 } },
    });

    // The agent posts the same text to both channels: the second pauses the key.
    const agent = world.anon.as(key.key);
    expectStatus(await agent.post(`/api/channels/${chans[0]!.id}/messages`, { content: 'Sale!' }), 201);
    const refused = await agent.post(`/api/channels/${chans[1]!.id}/messages`, { content: 'sale!' });
    expect(refused.body.error.code).toBe('key_paused');

    await page.reload();
    await page
      .getByRole('row')
      .filter({ hasText: name })
      .getByRole('button', { name: /Manage/ })
      .click();
    const paused = keys.getByRole('status', { name: `Key ${key.key_prefix}… is paused` });
    await paused.waitFor();
    expect(await paused.textContent()).toContain('same text to 2 different');
    expect(await row.textContent()).toContain('paused');
    expect(await seriousViolations(page)).toEqual([]);
    await paused.getByRole('button', { name: `Resume ${key.key_prefix}…` }).click();
    await paused.waitFor({ state: 'detached' });
    expect(await row.textContent()).not.toContain('paused');
    const after = (
      expectStatus(await admin.api.get(`/api/bots/${bot.bot_id}/api-keys`), 200).items as any[]
    )[0];
    expect(after.paused_at).toBeNull();
    expectStatus(await agent.post(`/api/channels/${chans[0]!.id}/messages`, { content: 'back' }), 201);
    // The audit shows the pause by the guard rail and the resume by the admin.
    const audit = page.getByRole('region', { name: 'MCP tool calls' });
    await expect
      .poll(async () => {
        await audit.getByRole('button', { name: 'Refresh' }).click();
        return audit.getByRole('table').textContent();
      })
      .toMatch(/key\.resumed.*resumed by a manager/s);
    expect(await audit.getByRole('row').filter({ hasText: 'key.paused' }).textContent()).toContain(
      'paused by guard rail pause_on.burst',
    );
    await ctx.close();
  });
});
