import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  sleep,
  waitFor,
} from './helpers/platform-bots.js';
import { LiveClient } from './helpers/realtime.js';
import { firstQuestions, StandupProcs } from './helpers/standup-proc.js';

/**
 * The stand-up bot and the durable scheduler across a crash, with a real server process
 * (server/src/main.ts) through the public API only: a server SIGKILLed while the stand-up is sending
 * its questions; after the restart every member has the first question exactly once, and the channel
 * one summary. The processes run on a test clock the test moves (helpers/clock-server-main.ts): the
 * stand-up's minute, the stale claim left by the kill and the window's end come at once, not in 3
 * minutes of waiting (the real clock's seam is tested by scheduler-process.test.ts).
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
    // The next whole minute of the server's clock, at least 5 s ahead (schedules are set in minutes).
    const at = Math.ceil(((await s.proc!.clockNow()) + 5_000) / 60_000) * 60_000;
    const hhmm = new Date(at).toISOString().slice(11, 16);
    await answer(members[0]!.api, `/standup setup ${hhmm} daily UTC "${Q1}" window:2m remind:off`, {
      channel_id: channel,
    });
    // The members are asked in the order they joined: the first DM means the job is sending. It is
    // seen on the first member's live stream (milliseconds after it is written) and the server is
    // killed right there, in the message handler, so the kill comes while the others are still being
    // asked (awaiting a round trip first let the server finish all 40 once on a loaded machine).
    const live = await LiveClient.connect(s.url, members[0]!.token);
    const proc = s.proc!;
    let killedAt: number | undefined;
    let offset = 0;
    live.ws.on('message', (raw) => {
      const m = JSON.parse(raw.toString());
      const firstDm =
        m.type === 'event' && m.event.event_type === 'message.created' && m.event.data.content?.includes(Q1);
      if (!firstDm || killedAt !== undefined) return;
      proc.child.kill('SIGKILL');
      // The server's clock is real time plus the jump to `at` (set below): its time at the kill.
      killedAt = Date.now() + offset;
    });
    offset = at - Date.now();
    await proc.setClock(at);
    await expect.poll(() => killedAt, { timeout: 60_000, interval: 10 }).toBeDefined();
    await proc.stop('SIGKILL');
    live.ws.terminate();
    s.clockStart = killedAt!;
    await s.start();
    // Past the killed server's claim (2 s) and the step it left pending (released after 60 s), well
    // within the 2-minute window: the restarted server asks the others.
    await s.proc!.setClock(killedAt! + 61_000);
    await waitFor(
      'every member asked',
      async () => (await Promise.all(members.map(asked))).every((n) => n > 0),
      120_000,
    );
    // The window's end: the summary.
    await s.proc!.setClock(at + 2 * 60_000 + 1_000);
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
    expect(sentAt.filter((t) => t < killedAt!).length).toBeGreaterThan(0);
    expect(sentAt.filter((t) => t > killedAt!).length).toBeGreaterThan(0);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  }, 360_000);
});
