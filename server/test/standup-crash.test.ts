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
 * The stand-up bot and the durable scheduler across a crash, with a real server process
 * (server/src/main.ts) through the public API only: a server SIGKILLed while the stand-up is sending
 * its questions; after the restart every member has the first question exactly once, and the channel
 * one summary. (Split from standup-scheduler.test.ts, so that the two wait for their minutes at the
 * same time.)
 */

const MEMBERS = 40;
const Q1 = 'Status?';

describe('stand-ups across server restarts', () => {
  const s = new StandupProcs();

  beforeAll(() => s.init());
  afterAll(() => s.close());

  it('SIGKILL while the questions are being sent: after the restart every member has them once, and one summary comes', async () => {
    const { channel, members } = await s.teamChannel(MEMBERS);
    const bot = await builtinBotId(members[0]!.api, 'standup');
    const asked = (u: (typeof members)[number]) => firstQuestions(u, bot, Q1);
    const { hhmm, at } = nextMinute(15_000);
    // A 2-minute window: the restarted server must ask the rest before it closes (with 1 minute, CI under
    // load once had the window close while the restarted server was still asking).
    await answer(members[0]!.api, `/standup setup ${hhmm} daily UTC "${Q1}" window:2m remind:off`, {
      channel_id: channel,
    });
    while (Date.now() < at - 1_000) await sleep(250);
    // The members are asked in the order they joined: the first DM means the job is sending.
    await waitFor('the first DM', async () => (await asked(members[0]!)) > 0, 60_000);
    await s.proc!.stop('SIGKILL');
    const killedAt = Date.now();
    await s.start();
    await waitFor(
      'every member asked',
      async () => (await Promise.all(members.map(asked))).every((n) => n > 0),
      120_000,
    );
    const summary = await waitFor(
      'the summary',
      async () => (await channelMessages(members[0]!.api, channel)).find((m) => m.content.startsWith('📋')),
      180_000,
    );
    expect(summary.content).toContain(`0 of ${MEMBERS} answered`);
    await sleep(2_000);
    const after = await Promise.all(members.map(asked));
    expect(after).toEqual(Array(MEMBERS).fill(1));
    // The kill came in the middle: some members were asked by the killed server, the others by the
    // restarted one (else the test would show nothing).
    const sentAt = await Promise.all(
      members.map(async (u) =>
        Date.parse((await dmsFromBot(u, bot)).find((m) => m.content.includes(Q1))!.created_at),
      ),
    );
    expect(sentAt.filter((t) => t < killedAt).length).toBeGreaterThan(0);
    expect(sentAt.filter((t) => t > killedAt).length).toBeGreaterThan(0);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  }, 360_000);
});
