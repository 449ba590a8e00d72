import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  dmToBot,
  nextMinute,
  sleep,
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
 */

describe('stand-up bot disabled by the system administrator', () => {
  let s2: TestServer;
  let w2: World;
  let user: UserHandle;
  let peer: UserHandle;
  let ch: string;
  let bot: string;
  let collectBot: string;

  beforeAll(async () => {
    s2 = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' });
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

  it('stops their commands and their schedules; enabled again, they resume', async () => {
    const { hhmm, at } = nextMinute();
    await answer(user.api, `/standup setup ${hhmm} daily UTC "Anything?" window:1m`, { channel_id: ch });
    const due = Date.now() + 60_000;
    await answer(user.api, '/collect "Your slides" due:1m remind:off', { channel_id: ch });
    await waitForDm(peer, collectBot, 'Your slides');
    await dmToBot(peer, collectBot, 'slides.pdf is ready');
    await waitForDm(peer, collectBot, '✅ Recorded');
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
    // The time passes: no question comes, no collection result (a collection counts as overdue a
    // minute after its deadline).
    while (Date.now() < Math.max(at + 8_000, due + 65_000)) await sleep(500);
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
    expect(await dmsFromBot(peer, bot)).toHaveLength(0);
    expect(await dmsFromBot(user, collectBot)).toHaveLength(0);
    expect(
      (await channelMessages(user.api, ch)).filter((m) => /^(📋|📥 The collection)/.test(m.content)),
    ).toEqual([]);

    for (const key of ['standup', 'collect', 'task-notify']) {
      expectStatus(await w2.admin.api.patch(`/api/builtin-bots/${key}`, { status: 'active' }), 200);
    }
    // Enabled again: the next command re-arms the stand-up chain (the missed day is not made up) …
    const show = await answer(user.api, '/standup show', { channel_id: ch });
    expect(show.content).toContain('- Next: ');
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
    // … and closes the collection whose deadline passed meanwhile: the result comes once.
    await answer(user.api, '/collect list', { channel_id: ch });
    const [result] = await waitForDm(user, collectBot, '📥 **Collection: Your slides**', 1, 30_000);
    expect(result!.content).toContain('1 of 1 replied');
    expect(result!.content).toContain('> slides.pdf is ready');
    await answer(user.api, '/collect list', { channel_id: ch });
    await sleep(2_000);
    expect(
      (await dmsFromBot(user, collectBot)).filter((m) => m.content.includes('📥 **Collection')),
    ).toHaveLength(1);
  }, 240_000);
});
