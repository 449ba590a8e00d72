import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  nextMinute,
  sleep,
} from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Disabling a platform bot (PATCH /api/builtin-bots/standup by a system_admin; an org admin gets 403)
 * stops its commands (403 with the reason) and its schedules: a stand-up due while it is disabled does
 * not happen. Enabled again, the next command in the channel arms the chain again. Its own server, as
 * disabling is for every organization. On SQLite, and on PostgreSQL with DATABASE_URL.
 */

describe('stand-up bot disabled by the system administrator', () => {
  let s2: TestServer;
  let w2: World;
  let user: UserHandle;
  let ch: string;
  let bot: string;

  beforeAll(async () => {
    s2 = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' });
    w2 = await World.create(s2.url);
    const org = await w2.org();
    user = await w2.user({ organization_id: org.id }, org.admin.api);
    ch = await w2.channel(user.api);
    bot = await builtinBotId(user.api, 'standup');
    // An org admin may not disable it; the system admin may.
    expect((await org.admin.api.patch('/api/builtin-bots/standup', { status: 'disabled' })).status).toBe(403);
  });

  afterAll(async () => {
    await s2?.close();
  });

  it('stops its commands and its scheduled stand-ups; enabled again, the chain resumes', async () => {
    const { hhmm, at } = nextMinute();
    await answer(user.api, `/standup setup ${hhmm} daily UTC "Anything?" window:1m`, { channel_id: ch });
    expectStatus(await w2.admin.api.patch('/api/builtin-bots/standup', { status: 'disabled' }), 200);
    const refused = await user.api.post('/api/commands/execute', { text: '/standup show', channel_id: ch });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain(
      '/standup is unavailable: the built-in bot Stand-up is disabled by the system administrator',
    );
    // The same for the other platform bots of this issue.
    for (const [key, text] of [
      ['collect', '/collect list'],
      ['task-notify', '/tasknotify list'],
    ] as const) {
      expect((await user.api.post('/api/commands/execute', { text, channel_id: ch })).status).toBe(202);
      expectStatus(await w2.admin.api.patch(`/api/builtin-bots/${key}`, { status: 'disabled' }), 200);
      const r = await user.api.post('/api/commands/execute', { text, channel_id: ch });
      expect(r.status, text).toBe(403);
      expect(r.body.error.message).toContain('disabled by the system administrator');
      expectStatus(await w2.admin.api.patch(`/api/builtin-bots/${key}`, { status: 'active' }), 200);
    }
    // The time passes: no question comes.
    while (Date.now() < at + 8_000) await sleep(500);
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
    expect((await channelMessages(user.api, ch)).filter((m) => m.content.startsWith('📋'))).toHaveLength(0);
    // Enabled again: the next command re-arms the chain (the missed day is not made up).
    expectStatus(await w2.admin.api.patch('/api/builtin-bots/standup', { status: 'active' }), 200);
    const show = await answer(user.api, '/standup show', { channel_id: ch });
    expect(show.content).toContain('- Next: ');
    expect(await dmsFromBot(user, bot)).toHaveLength(0);
  }, 120_000);
});
