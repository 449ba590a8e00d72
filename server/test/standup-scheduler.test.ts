import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  nextMinute,
  sleep,
  waitFor,
} from './helpers/platform-bots.js';
import { firstQuestions, StandupProcs } from './helpers/standup-proc.js';

/**
 * The stand-up bot and the durable scheduler across real server processes (server/src/main.ts) on one
 * data directory or PostgreSQL schema, through the public API only: a stand-up due while no server
 * runs fires once when the server starts again (within WORKROOM_SCHEDULER_GRACE, default 6 h).
 *
 * (A server SIGKILLed while the stand-up is sending its questions: standup-crash.test.ts, a file of its
 * own so that the two wait for their minutes at the same time. Daylight-saving changes:
 * server/test/standup-unit.test.ts follows a stand-up's chain of starts across both changes of
 * Europe/Berlin and America/New_York with the planner the start jobs use.)
 */

const Q1 = 'Status?';

describe('stand-ups across server restarts', () => {
  const s = new StandupProcs();

  beforeAll(() => s.init());
  afterAll(() => s.close());

  it('a stand-up due while the server is down fires once after it starts again', async () => {
    const { channel, members } = await s.teamChannel(3);
    const bot = await builtinBotId(members[0]!.api, 'standup');
    const { hhmm, at } = nextMinute(15_000);
    await answer(members[0]!.api, `/standup setup ${hhmm} daily UTC "${Q1}" window:1m remind:off`, {
      channel_id: channel,
    });
    await s.proc!.stop('SIGTERM');
    // Down through the time it was due, and a little longer.
    while (Date.now() < at + 5_000) await sleep(250);
    await s.start();
    for (const u of members)
      await waitFor('the first question', async () => (await firstQuestions(u, bot, Q1)) > 0, 30_000);
    const dm = (await dmsFromBot(members[0]!, bot)).find((m) => m.content.includes(Q1))!;
    expect(Date.parse(dm.created_at)).toBeGreaterThanOrEqual(at + 5_000); // sent after the restart
    // One summary, a whole window after the late start (the members keep their full minute).
    const summary = await waitFor(
      'the summary',
      async () => (await channelMessages(members[0]!.api, channel)).find((m) => m.content.startsWith('📋')),
      120_000,
    );
    expect(Date.parse(summary.created_at)).toBeGreaterThanOrEqual(Date.parse(dm.created_at) + 55_000);
    expect(summary.content).toContain('0 of 3 answered');
    await sleep(2_000);
    for (const u of members) expect(await firstQuestions(u, bot, Q1), u.email).toBe(1);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  }, 240_000);
});
