import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expectStatus } from '../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * Interactive message actions in Chromium (docs/ACTIONS.md): a bot's message shows real buttons and a
 * select; a click (keyboard or mouse) goes to the server, the bot's real webhook receiver (an HTTP
 * server on 127.0.0.1 that checks the signature) gets action.invoked and edits the message, and both
 * browsers see the edit live. Failures show under the actions; axe finds nothing serious.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let ann: UserHandle;
let bob: UserHandle;
let channelId: string;
let bot: BotHandle;
let secret = '';
let receiver: Server;
/** Every verified action.invoked the receiver got. */
const clicks: any[] = [];
const PASSWORD = 'user-password-1';

const DEPLOY_ACTIONS = [
  { type: 'button', id: 'approve', label: 'Approve', value: 'yes', style: 'primary' },
  { type: 'button', id: 'reject', label: 'Reject', value: 'no', style: 'danger' },
  {
    type: 'select',
    id: 'env',
    placeholder: 'Target environment',
    options: [
      { label: 'Staging', value: 'staging' },
      { label: 'Production', value: 'production' },
    ],
  },
];

/** The bot: verifies each delivery, then answers a click by editing its message. */
async function startBotReceiver(): Promise<string> {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
      const got = Buffer.from(String(req.headers['x-workroom-signature'] ?? ''));
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(200).end('ok'); // answer first, work afterwards
      const event = JSON.parse(raw.toString('utf8'));
      if (event.event_type !== 'action.invoked') return;
      clicks.push(event);
      const d = event.data;
      const update =
        d.action_id === 'env'
          ? { content: `Target: **${d.value}** (chosen by ${d.user.display_name})`, actions: DEPLOY_ACTIONS }
          : d.action_id === 'undo'
            ? { content: 'Deploy v2.3 to production?', actions: DEPLOY_ACTIONS }
            : {
                content: `Deploy v2.3: ${d.value === 'yes' ? 'approved' : 'rejected'} by ${d.user.display_name}`,
                actions: [{ type: 'button', id: 'undo', label: 'Undo', value: 'undo' }],
              };
      void bot.api.put(`/api/messages/${d.message_id}`, update);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
}

beforeAll(async () => {
  server = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
  browser = await launch();
  world = await World.create(server.url);
  const org = await world.org();
  ann = await world.user({ display_name: 'Ann Lee' }, org.admin.api);
  bob = await world.user({ display_name: 'Bob Stone' }, org.admin.api);
  channelId = await world.channel(ann.api, { name: uniq('deploys') });
  expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { user_id: bob.id }), 201);
  const url = await startBotReceiver();
  bot = await world.bot(ann.api, {}, { name: 'Deploy Bot', webhook_url: url });
  secret = expectStatus(await ann.api.post(`/api/bots/${bot.id}/webhook-secret`), 201).secret as string;
  expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((r) => receiver?.close(r));
});

async function signedIn(user: UserHandle): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await newContext(browser);
  const page = await ctx.newPage();
  await signIn(page, server.url, user.email, PASSWORD);
  await page.goto(`${server.url}/#/channel/${channelId}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return { ctx, page };
}

describe('message actions in the web app', () => {
  it('shows the buttons and select; a keyboard click reaches the bot, whose edit both browsers see live', async () => {
    const a = await signedIn(ann);
    const b = await signedIn(bob);
    const posted = expectStatus(
      await bot.api.post(`/api/channels/${channelId}/messages`, {
        content: 'Deploy v2.3 to production?',
        actions: DEPLOY_ACTIONS,
      }),
      201,
    );
    const mine = a.page.getByRole('article').filter({ hasText: 'Deploy v2.3' });
    const group = mine.getByRole('group', { name: 'Actions from Deploy Bot' });
    await group.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
    await group.getByRole('button', { name: 'Reject' }).waitFor();
    const select = group.getByRole('combobox', { name: 'Target environment' });
    expect(await select.inputValue()).toBe('');
    expect(await group.getByRole('button', { name: 'Approve' }).getAttribute('class')).toContain('primary');
    expect(await seriousViolations(a.page)).toEqual([]);
    await screenshot(a.page, 'chat-message-actions');

    // Keyboard: focus the button and press Enter.
    await group.getByRole('button', { name: 'Approve' }).focus();
    await a.page.keyboard.press('Enter');
    await mine.getByText('Deploy v2.3: approved by Ann Lee').waitFor({ timeout: 15_000 });
    await mine.getByRole('button', { name: 'Undo' }).waitFor();
    expect(await mine.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    // Bob's page got the edit live too.
    const theirs = b.page.getByRole('article').filter({ hasText: 'Deploy v2.3: approved by Ann Lee' });
    await theirs.getByRole('button', { name: 'Undo' }).waitFor({ timeout: 15_000 });
    expect(clicks.at(-1).data).toMatchObject({
      action_id: 'approve',
      value: 'yes',
      user: { id: ann.id, display_name: 'Ann Lee' },
      message_id: posted.id,
      channel_id: channelId,
    });

    // Bob undoes with the mouse; then chooses an option of the select.
    await theirs.getByRole('button', { name: 'Undo' }).click();
    const again = b.page.getByRole('article').filter({ hasText: 'Deploy v2.3 to production?' });
    const bobSelect = again.getByRole('combobox', { name: 'Target environment' });
    await bobSelect.waitFor({ timeout: 15_000 });
    await bobSelect.selectOption('production');
    await a.page
      .getByRole('article')
      .getByText('Target: production (chosen by Bob Stone)')
      .waitFor({ timeout: 15_000 });
    expect(clicks.at(-1).data).toMatchObject({ action_id: 'env', value: 'production', user_id: bob.id });
    expect(await seriousViolations(b.page)).toEqual([]);
    await a.ctx.close();
    await b.ctx.close();
  });

  it('shows the pending state while the click is sent, and the error when it fails', async () => {
    const { ctx, page } = await signedIn(ann);
    const text = `Ship ${uniq('build')}?`;
    const m = expectStatus(
      await bot.api.post(`/api/channels/${channelId}/messages`, {
        content: text,
        actions: [{ type: 'button', id: 'ship', label: 'Ship it', value: 'ship' }],
      }),
      201,
    );
    const msg = page.getByRole('article').filter({ hasText: text });
    const button = msg.getByRole('button', { name: 'Ship it' });
    await button.waitFor({ timeout: 15_000 });

    // Hold the request a moment: the button is busy and disabled meanwhile.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/api/messages/*/actions', async (route) => {
      await held;
      await route.continue();
    });
    // The bot leaves the channel: the server refuses the click (409).
    expectStatus(await ann.api.delete(`/api/channels/${channelId}/members/bots/${bot.id}`), 200);
    await button.click();
    await expect.poll(() => button.getAttribute('aria-busy')).toBe('true');
    expect(await button.isDisabled()).toBe(true);
    await msg.getByRole('status').filter({ hasText: 'Sending…' }).waitFor();
    release();
    const alert = msg.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/no longer a member/);
    expect(await button.getAttribute('aria-busy')).toBe('false');
    expect(await button.isDisabled()).toBe(false);
    expect(clicks.filter((c) => c.data.message_id === m.id)).toHaveLength(0);
    expect(await seriousViolations(page)).toEqual([]);
    await page.unroute('**/api/messages/*/actions');
    expectStatus(await ann.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.id }), 201);
    await ctx.close();
  });
});
