// Tests of bot.mjs against a throwaway Workroom (@workroom/testing; docs/TESTING-BOTS.md). Run them from
// a copy of this folder (README.md, "Test it") or in the checkout: npm test -w sdks/testing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkroom } from '@workroom/testing';
import { startBot } from './bot.mjs';

describe('the example bot', () => {
  let wr;
  let ws;
  let bot;

  beforeAll(async () => {
    wr = await startWorkroom();
    ws = await wr.workspace({
      users: ['ann'],
      channels: ['general'],
      projects: [{ name: 'launch', topics: ['todos'] }],
      bots: [{ name: 'echo' }],
    });
    // Over its socket (no webhook secret): no URL for the server to reach.
    bot = await startBot({ baseUrl: wr.url, apiKey: ws.bots.echo.key, log: () => {} });
  });
  afterAll(async () => {
    await bot?.stop();
    await wr?.stop();
  });

  it('answers /echo', async () => {
    const answer = await wr.as('ann').command('general', '/echo hello');
    expect(answer.reply.content).toBe('hello');
    expect((await wr.nextMessage('general', { from: 'echo' })).content).toBe('hello');
  });

  it('/todo in a topic creates a task assigned to the user and answers privately', async () => {
    const answer = await wr.as('ann').command('todos', '/todo Write the report');
    expect(answer.reply).toMatchObject({ ephemeral: true });
    expect(answer.reply.content).toMatch(/^Created task "Write the report"/);
    const tasks = await wr.tasks('todos');
    expect(tasks).toEqual([
      expect.objectContaining({ title: 'Write the report', assignee_id: ws.users.ann.id }),
    ]);
  });

  it('answers help and !echo in the channel, and never itself', async () => {
    await wr.as('ann').post('general', 'help');
    expect((await wr.nextMessage('general', { from: 'echo' })).content).toContain('/echo <text>');
    await wr.as('ann').post('general', '!echo hi there');
    expect((await wr.nextMessage('general', { from: 'echo' })).content).toBe('hi there');
  });

  it('works the same over a webhook (the one-line switch)', async () => {
    const hooked = await wr.workspace({ users: ['bob'], channels: ['ops'], bots: [{ name: 'hooked' }] });
    const b = hooked.bots.hooked;
    const viaWebhook = await startBot({
      baseUrl: wr.url,
      apiKey: b.key,
      webhookSecret: b.secret,
      port: 0,
      log: () => {},
    });
    try {
      await wr.setWebhookUrl(b, `http://127.0.0.1:${viaWebhook.port}/webhook`);
      expect((await wr.as('bob').command('ops', '/echo over http')).reply.content).toBe('over http');
      await wr.as('bob').post('ops', '!echo posted');
      expect((await wr.nextMessage('ops', { from: 'hooked' })).content).toBe('posted');
    } finally {
      await viaWebhook.stop();
    }
  });
});
