import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  dmToBot,
  jobsSettled,
  moveClockTo,
  waitForDm,
} from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Disabling a platform bot (PATCH /api/builtin-bots/{key} by a system_admin; an org admin gets 403)
 * stops its commands (403 with the reason) and its schedules: a stand-up due while the stand-up bot is
 * disabled does not happen, a collection whose deadline passes while the collection bot is disabled
 * delivers nothing. Enabled again, the next command in the channel arms the stand-up chain again (the
 * missed day is not made up) and closes the overdue collection, once. Its own server, as disabling is
 * for every organization. On SQLite, and on PostgreSQL with DATABASE_URL.
 *
 * Time is the server's test clock (server/src/runtime/clock.ts): the test moves it past the stand-up's
 * time and the collection's deadline, and each "nothing comes" check ends when the scheduler has run
 * every job due by then (jobsSettled), not on a quiet period. No real minute passes. (The bots on the
 * real clock, across real processes: standup-crash.test.ts.)
 */

/** Monday 2027-04-05, a minute before the stand-up's time (10:00 UTC). */
const CLOCK_START = '2027-04-05T09:59:00.000Z';
const STANDUP_AT = Date.parse('2027-04-05T10:00:00.000Z');
const clock = new TestClock(CLOCK_START);

describe('stand-up bot disabled by the system administrator', () => {
  let s2: TestServer;
  let w2: World;
  let user: UserHandle;
  let peer: UserHandle;
  let ch: string;
  let bot: string;
  let collectBot: string;

  beforeAll(async () => {
    s2 = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' }, { clock });
    w2 = await World.create(s2.url);
    const org = await w2.org();
    user = await w2.user({ organization_id: org.id }, org.admin.api);
    peer = await w2.user({ organization_id: org.id }, org.admin.api);
    ch = await w2.channel(user.api);
    expectStatus(await user.api.post(`/api/channels/${ch}/members`, { user_id: peer.id }), 201);
    bot = await builtinBotId(user.api, 'standup');
    collectBot = await builtinBotId(user.api, 'collect');
    // An org admin may not disable it; the system admin may.
    expect((await org.admin.api.patch('/api/builtin-bots/standup', { status: 'disabled' })).status).toBe(403);
  });

  afterAll(async () => {
    await s2?.close();
  });

  /** The bot's jobs that the scheduler failed because the bot was disabled when they were due. */
  const failedWhileDisabled = async (botId: string) =>
    (
      await s2.app.services.storage.stores.scheduledJobs.listForBot(botId, { state: 'failed', limit: 100 })
    ).filter((j) => j.last_error === 'the bot is disabled; not run');

  it('stops their commands and their schedules; enabled again, they resume', async () => {
    const at = STANDUP_AT;
    expect(clock.now()).toBeLessThan(at - 10_000); // set up well before its time
    await answer(user.api, `/standup setup 10:00 daily UTC "Anything?" window:1m`, { channel_id: ch });
    await answer(user.api, '/collect "Your slides" due:1m remind:off', { channel_id: ch });
    const due = clock.now() + 60_000; // the deadline is a minute after the command, which came before this
    await waitForDm(peer, collectBot, 'Your slides', 1, 20_000);
    await dmToBot(peer, collectBot, 'slides.pdf is ready');
    await waitForDm(peer, collectBot, '✅ Recorded', 1, 20_000);
    for (const key of ['standup', 'collect', 'task-notify']) {
      expectStatus(await w2.admin.api.patch(`/api/builtin-bots/${key}`, { status: 'disabled' }), 200);
    }
    const refused = await user.api.post('/api/commands/execute', { text: '/standup show', channel_id: ch });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain(
      '/standup is unavailable: the built-in bot Stand-up is disabled by the system administrator',
    );
    for (const text of ['/collect list', '/tasknotify list']) {
      const r = await user.api.post('/api/commands/execute', { text, channel_id: ch });
      expect(r.status, text).toBe(403);
      expect(r.body.error.message).toContain('disabled by the system administrator');
    }
    // The time passes: the stand-up's time, the collection's deadline, and a minute more (a collection
    // counts as overdue a minute after its deadline). Each step ends when every job due by then has run.
    await moveClockTo(s2, clock, at + 8_000);
    await jobsSettled(s2, clock, bot);
    await moveClockTo(s2, clock, Math.max(at + 8_000, due + 1_000));
    await jobsSettled(s2, clock, collectBot);
    await moveClockTo(s2, clock, Math.max(at + 8_000, due + 65_000));
    await jobsSettled(s2, clock, bot);
    await jobsSettled(s2, clock, collectBot);
    // Their jobs came due and were not run (the stand-up's start, the collection's close): no question
    // came, no collection result.
    expect((await failedWhileDisabled(bot)).length).toBeGreaterThanOrEqual(1);
    expect((await failedWhileDisabled(collectBot)).length).toBeGreaterThanOrEqual(1);
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
    expect(await dmsFromBot(peer, bot)).toHaveLength(0);
    expect(await dmsFromBot(user, collectBot)).toHaveLength(0);
    expect(
      (await channelMessages(user.api, ch)).filter((m) => /^(📋|📥 The collection)/.test(m.content)),
    ).toEqual([]);

    for (const key of ['standup', 'collect', 'task-notify']) {
      expectStatus(await w2.admin.api.patch(`/api/builtin-bots/${key}`, { status: 'active' }), 200);
    }
    // Enabled again: the next command re-arms the stand-up chain (the missed day is not made up: the
    // next one is tomorrow, and nothing due now asks anything) …
    const show = await answer(user.api, '/standup show', { channel_id: ch });
    expect(show.content).toContain('- Next: ');
    expect(show.content).toContain('- Next: Tue 6 Apr 2027');
    await jobsSettled(s2, clock, bot);
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
    // … and closes the collection whose deadline passed meanwhile: the result comes once.
    await answer(user.api, '/collect list', { channel_id: ch });
    const [result] = await waitForDm(user, collectBot, '📥 **Collection: Your slides**', 1, 30_000);
    expect(result!.content).toContain('1 of 1 replied');
    expect(result!.content).toContain('> slides.pdf is ready');
    // Another /collect list, and every job due by then has finished: nothing more comes of them.
    await answer(user.api, '/collect list', { channel_id: ch });
    await jobsSettled(s2, clock, collectBot);
    expect(
      (await dmsFromBot(user, collectBot)).filter((m) => m.content.includes('📥 **Collection')),
    ).toHaveLength(1);
  });
});
