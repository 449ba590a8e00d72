import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { withSdkClient, textOf } from '../../server/test/helpers/mcp.js';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { waitFor } from '../../server/test/helpers/platform-bots.js';
import { uniq, World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, seriousViolations, signIn } from './browser.js';

/**
 * Human approval end to end (issue 21; docs/API.md "Approval") in real Chromium: an agent — the
 * official MCP SDK client over Streamable HTTP with a key whose grants hold send_message for approval —
 * calls send_message and is told it is pending; the bot's owner sees the card in the DM from the
 * Approvals bot, with the exact content and target; Approve clicked in two tabs at once posts the
 * message once, and the card shows who approved; the agent learns the outcome with
 * get_pending_action; the admin screen's Approvals queue lists another call, whose Reject posts nothing.
 */
let server: TestServer;
let browser: Browser;
let world: World;
let owner: UserHandle;
let channelId: string;
let channelName: string;
let key: string;
const PASSWORD = 'user-password-1';

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  world = await World.create(server.url);
  owner = (await world.org()).admin;
  channelName = uniq('releases');
  channelId = await world.channel(owner.api, { name: channelName });
  const bot = expectStatus(await owner.api.post('/api/bots', { name: 'Release Agent' }), 201);
  expectStatus(await owner.api.post(`/api/channels/${channelId}/members`, { bot_id: bot.bot_id }), 201);
  key = expectStatus(
    await owner.api.post(`/api/bots/${bot.bot_id}/api-keys`, { grants: { approval: ['send_message'] } }),
    201,
  ).key;
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const posted = async (content: string) =>
  expectStatus(await owner.api.get(`/api/channels/${channelId}/messages`), 200).items.filter(
    (m: any) => m.content === content,
  );

/** The owner's DM room with the Approvals bot (where the cards are). */
async function approvalsRoom(): Promise<string> {
  return waitFor('the Approvals DM', async () => {
    const rooms = expectStatus(await owner.api.get('/api/dm-rooms'), 200).items as any[];
    for (const r of rooms) {
      const ms = expectStatus(await owner.api.get(`/api/dm-rooms/${r.id}/messages`), 200).items as any[];
      if (ms.some((m) => m.content.includes('Approval'))) return r.id as string;
    }
    return undefined;
  });
}

async function openDm(ctx: BrowserContext, room: string): Promise<Page> {
  const page = await ctx.newPage();
  await page.goto(`${server.url}/#/dm/${room}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return page;
}

describe('approval of an agent’s message', () => {
  it('the agent’s send_message waits; the card in the DM approves it once (two tabs clicking); the agent learns it', async () => {
    const content = `Release 4.2 is out: ${uniq('notes')}`;
    let pendingId = '';
    await withSdkClient(server.url, key, async (client) => {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('get_pending_action');
      // The SDK validates structuredContent against the tool's outputSchema: the pending answer conforms.
      const r: any = await client.callTool({
        name: 'send_message',
        arguments: { channel_id: channelId, content },
      });
      expect(r.isError).toBeFalsy();
      expect(textOf(r)).toContain('PENDING APPROVAL');
      expect(r.structuredContent.status).toBe('pending_approval');
      pendingId = r.structuredContent.pending_action.id;
    });
    expect(await posted(content)).toHaveLength(0);

    const room = await approvalsRoom();
    const ctx = await newContext(browser);
    const login = await ctx.newPage();
    await signIn(login, server.url, owner.email, PASSWORD);
    const [tab1, tab2] = [await openDm(ctx, room), await openDm(ctx, room)];
    const card = (p: Page) => p.getByRole('article').filter({ hasText: pendingId });
    for (const p of [tab1, tab2]) {
      await card(p).getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
      await card(p).getByText(content).waitFor();
      await card(p).getByText(`#${channelName}`).waitFor();
    }
    expect(await seriousViolations(tab1)).toEqual([]);
    // Approve in both tabs at once: one message. The first approval's live update may take the second
    // tab's button away before its click lands; that click is then not made (the checks below hold).
    const approveIn = async (p: Page): Promise<number> => {
      const button = card(p).getByRole('button', { name: 'Approve' });
      try {
        await button.click({ timeout: 5_000 });
        return 1;
      } catch (err) {
        if ((await button.count()) > 0) throw err;
        return 0;
      }
    };
    const made = (await Promise.all([approveIn(tab1), approveIn(tab2)])).reduce((a, b) => a + b, 0);
    expect(made).toBeGreaterThanOrEqual(1);
    for (const p of [tab1, tab2]) {
      await card(p)
        .getByText(/Approved by .* done\./)
        .waitFor({ timeout: 20_000 });
      expect(await card(p).getByRole('button', { name: 'Approve' }).count()).toBe(0);
    }
    expect(await posted(content)).toHaveLength(1);
    // Every click made reached the server (an action.invoked each: two when the second tab clicked
    // before the first approval's update took its button away), and still one message.
    const cardId = (
      expectStatus(await owner.api.get(`/api/dm-rooms/${room}/messages`), 200).items as any[]
    ).find((m) => m.content.includes(pendingId)).id;
    const db = server.app.services.storage.stores.db;
    const clicks = await sql<{
      n: number;
    }>`select count(*) as n from events where type = 'action.invoked' and data like ${`%${cardId}%`}`.execute(
      db,
    );
    // (At most `made`: a click Playwright made as the update replaced the card may land on nothing.)
    expect(Number(clicks.rows[0]!.n)).toBeGreaterThanOrEqual(1);
    expect(Number(clicks.rows[0]!.n)).toBeLessThanOrEqual(made);

    await withSdkClient(server.url, key, async (client) => {
      const r: any = await client.callTool({
        name: 'get_pending_action',
        arguments: { pending_action_id: pendingId },
      });
      expect(r.structuredContent).toMatchObject({ status: 'executed', result: { content } });
    });
    expect(await posted(content)).toHaveLength(1);
    await ctx.close();
  });

  it('the admin screen’s Approvals queue shows a waiting call; Reject posts nothing', async () => {
    const content = `Hotfix note ${uniq('x')}`;
    const r = await world.anon.as(key).post(`/api/channels/${channelId}/messages`, { content });
    expect(r.status).toBe(202);
    const ctx = await newContext(browser);
    const page = await ctx.newPage();
    await signIn(page, server.url, owner.email, PASSWORD);
    await page.goto(`${server.url}/admin/approvals`);
    const queue = page.getByRole('list', { name: 'Pending actions' });
    const item = queue.getByRole('listitem').filter({ hasText: content });
    await item.waitFor({ timeout: 15_000 });
    await item.getByText('Release Agent').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await item.getByRole('button', { name: 'Reject' }).click();
    await page
      .getByText(/rejected\./)
      .first()
      .waitFor({ timeout: 15_000 });
    await expect.poll(async () => queue.getByRole('listitem').filter({ hasText: content }).count()).toBe(0);
    const view = expectStatus(
      await world.anon.as(key).get(`/api/bots/me/pending-actions/${r.body.pending_action.id}`),
      200,
    );
    expect(view.status).toBe('rejected');
    expect(await posted(content)).toHaveLength(0);
    await ctx.close();
  });
});
