import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SocketReceiver, WebhookReceiver, WorkroomClient } from '../../typescript/src/index.js';
import { startWorkroom, type Workroom, type Workspace } from '../src/index.js';
import { HarnessProcess } from '../src/process.js';

/**
 * @workroom/testing against the real harness (`workroom harness`, the built server): a bot on a socket
 * answers a command, edits its message on a click and posts a reminder when the server's clock is moved
 * past its job; a bot on a 127.0.0.1 webhook; the failure messages; the clock protocol; stopping.
 */
describe('@workroom/testing', () => {
  let wr: Workroom;
  let ws: Workspace<'ann' | 'bob', 'general', 'launch', 'helper'>;
  let receiver: SocketReceiver;

  beforeAll(async () => {
    wr = await startWorkroom();
    ws = await wr.workspace({
      users: ['ann', 'bob'],
      channels: ['general'],
      projects: [{ name: 'launch', topics: ['todos'] }],
      bots: [{ name: 'helper', commands: ['echo', { command: 'remind', usage_hint: '/remind <text>' }] }],
    });
    const bot = ws.bots.helper;
    const client = new WorkroomClient({ baseUrl: wr.url, apiKey: bot.key });
    receiver = new SocketReceiver({ baseUrl: wr.url, apiKey: bot.key });
    receiver.command('echo', (cmd) => cmd.args || 'nothing to echo');
    // Schedules a job two hours of server time after the command (the event's timestamp is server time).
    receiver.command('remind', async (cmd, event) => {
      const runAt = new Date(Date.parse(event.timestamp) + 2 * 3600_000).toISOString();
      const res = await fetch(`${wr.url}/api/bots/${bot.id}/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bot.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          kind: 'remind',
          run_at: runAt,
          payload: { channel_id: cmd.channel_id, text: cmd.args },
        }),
      });
      if (!res.ok) return `could not schedule: ${res.status} ${await res.text()}`;
      return `I will remind you at ${runAt}`;
    });
    receiver.on('job.due', async (event) => {
      const p = event.data.payload as { channel_id: string; text: string };
      await client.sendMessage({ channelId: p.channel_id, content: `Reminder: ${p.text}` });
    });
    receiver.on('message.created', async (event) => {
      const m = event.data;
      if (m.sender_type !== 'user' || m.content !== '!deploy' || !m.channel_id) return;
      await client.sendMessage({
        channelId: m.channel_id,
        content: 'Deploy v2?',
        actions: [
          { type: 'button', id: 'approve', label: 'Approve', value: 'yes' },
          { type: 'button', id: 'reject', label: 'Reject', value: 'no' },
        ],
      });
    });
    receiver.action(['approve', 'reject'], async (a) => {
      await client.updateMessage(a.message_id, {
        content: `Deploy v2: ${a.value === 'yes' ? 'approved' : 'rejected'} by ${a.user.display_name}`,
        actions: null,
      });
    });
    await receiver.start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await wr?.stop();
  });

  it('makes users, channels, projects and bots with keys in one call', async () => {
    expect(Object.keys(ws.users)).toEqual(['ann', 'bob']);
    expect(ws.bots.helper.key).toMatch(/\S{20,}/);
    expect(ws.bots.helper.secret).toMatch(/\S{20,}/);
    expect(ws.bots.helper.env.WORKROOM_URL).toBe(wr.url);
    // ann is a member of #general and of the project (she can post in both).
    await wr.as('ann').post('general', 'hello');
    await wr.as(ws.users.ann).post('todos', 'in the topic');
    expect((await wr.as('bob').messages('general')).map((m) => m.content)).toContain('hello');
    const commands = (await wr.as('ann').api('GET', '/api/commands')) as { items: { command: string }[] };
    expect(commands.items.map((c) => c.command)).toEqual(expect.arrayContaining(['echo', 'remind']));
  });

  it('runs a slash command: the answer carries the bot reply, which is also the next message', async () => {
    const answer = await wr.as('ann').command('general', '/echo hi there');
    expect(answer.status).toBe('dispatched');
    expect(answer.reply?.content).toBe('hi there');
    const m = await wr.nextMessage('general', { from: 'helper' });
    expect(m.content).toBe('hi there');
  });

  it('clicks an action: the bot edits its message', async () => {
    await wr.as('bob').post('general', '!deploy');
    const question = await wr.nextMessage('general', { from: ws.bots.helper, matching: 'Deploy v2?' });
    expect(question.actions?.map((a) => a.id)).toEqual(['approve', 'reject']);
    await wr.as('bob').click(question, 'approve');
    const edited = await wr.waitFor(
      async () => (await wr.messages('general')).find((m) => m.id === question.id && m.actions === null),
      { describe: 'the question edited without buttons' },
    );
    expect(edited.content).toBe('Deploy v2: approved by bob');
  });

  it('moves the server clock: a job two hours ahead runs when the clock passes it, not before', async () => {
    const before = await wr.clock.now();
    const answer = await wr.as('ann').command('general', '/remind stand-up');
    expect(answer.reply?.content).toMatch(/^I will remind you at /);
    const jobs = (await wr.request(
      'GET',
      `/api/bots/${ws.bots.helper.id}/jobs`,
      undefined,
      ws.bots.helper.key,
    )) as {
      items: { state: string; run_at: string }[];
    };
    expect(jobs.items).toHaveLength(1);
    expect(jobs.items[0]!.state).toBe('pending');
    expect(Date.parse(jobs.items[0]!.run_at) - before.getTime()).toBeGreaterThanOrEqual(2 * 3600_000);
    // An hour on: still pending (the scheduler's timer is on the server's clock).
    await wr.clock.advance('1h');
    const stillPending = (await wr.request(
      'GET',
      `/api/bots/${ws.bots.helper.id}/jobs`,
      undefined,
      ws.bots.helper.key,
    )) as {
      items: { state: string }[];
    };
    expect(stillPending.items[0]!.state).toBe('pending');
    const now = await wr.clock.advance('1h5m');
    expect(now.getTime() - before.getTime()).toBeGreaterThanOrEqual(2 * 3600_000 + 5 * 60_000);
    const reminder = await wr.nextMessage('general', { from: 'helper', matching: /^Reminder/ });
    expect(reminder.content).toBe('Reminder: stand-up');
    expect(Date.parse(reminder.created_at)).toBeGreaterThanOrEqual(Date.parse(jobs.items[0]!.run_at));
  });

  it('a bot on a webhook at 127.0.0.1 receives events (the harness allows loopback URLs)', async () => {
    const hooked = await wr.workspace({ users: ['cy'], channels: ['ops'], bots: [{ name: 'pinger' }] });
    const bot = hooked.bots.pinger;
    const client = new WorkroomClient({ baseUrl: wr.url, apiKey: bot.key });
    // webhook-timestamp is the server's business time, which the clock test above moved hours ahead of
    // this machine's: a receiver checks it against its own clock (docs/TESTING-BOTS.md, "Webhook bots").
    const hook = new WebhookReceiver({ port: 0, secret: bot.secret, toleranceSeconds: 7 * 86_400 });
    hook.on('message.created', async (e) => {
      if (e.data.sender_type === 'user' && e.data.content === '!ping' && e.data.channel_id)
        await client.sendMessage({ channelId: e.data.channel_id, content: 'pong' });
    });
    await hook.start();
    try {
      await wr.setWebhookUrl(bot, `http://127.0.0.1:${hook.port}/webhook`);
      await wr.as('cy').post('ops', '!ping');
      expect((await wr.nextMessage('ops', { from: 'pinger' })).content).toBe('pong');
    } finally {
      await hook.stop();
    }
  });

  it('says what was expected and what arrived when nothing comes', async () => {
    const quiet = await wr.workspace({ users: ['dee'], channels: ['quiet'], bots: [{ name: 'mute' }] });
    await wr.as('dee').post('quiet', 'anyone there?');
    const err = await wr.nextMessage('quiet', { from: quiet.bots.mute, timeout: 300 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('expected a new message in #quiet from bot "mute"');
    expect((err as Error).message).toContain('user "dee": "anyone there?"');
    const err2 = await wr
      .waitFor(async () => (await wr.messages('quiet')).length > 5, {
        timeout: 200,
        describe: 'six messages',
      })
      .catch((e: Error) => e);
    expect((err2 as Error).message).toMatch(
      /waitFor: six messages did not come true within 200 ms; it last answered: false/,
    );
    await expect(wr.clock.advance('-1h')).rejects.toThrow(/not a duration/);
    expect(() => wr.as('nobody')).toThrow(/no user "nobody"/);
  });
});

describe('workroom harness (the process)', () => {
  it('answers clock commands on stdin, refuses bad ones, and exits removing its data when stdin closes', async () => {
    const { proc, ready } = await HarnessProcess.start({});
    try {
      expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(existsSync(ready.dir)).toBe(true);
      const t0 = await proc.send({});
      const t1 = await proc.send({ advance_ms: 3_600_000 });
      expect(t1 - t0).toBeGreaterThanOrEqual(3_600_000);
      const t2 = await proc.send({ set: '2040-01-01T00:00:00Z' });
      expect(t2).toBeGreaterThanOrEqual(Date.parse('2040-01-01T00:00:00Z'));
      // Never back.
      expect(await proc.send({ set: 0 })).toBeGreaterThanOrEqual(t2);
      await expect(proc.send({ advance_ms: -1 })).rejects.toThrow(/only moves forward/);
      await expect(proc.send({ set: 'tomorrow' })).rejects.toThrow(/not a time/);
      // The clock is not on the network: the server's own time is what the API stamps.
      const login = await fetch(`${ready.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: ready.admin.email, password: ready.admin.password }),
      });
      expect(login.status).toBe(200);
    } finally {
      await proc.stop();
    }
    expect(existsSync(ready.dir)).toBe(false);
    await expect(fetch(`${ready.url}/api/health`)).rejects.toThrow();
  });
});
