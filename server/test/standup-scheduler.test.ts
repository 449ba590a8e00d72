import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  jobsSettled,
  moveClockTo,
  waitFor,
} from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { firstQuestions } from './helpers/standup-proc.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The stand-up bot and the durable scheduler across a server restart on one data directory or
 * PostgreSQL schema, through the public API only: a stand-up due while no server runs fires once when
 * the server starts again (within WORKROOM_SCHEDULER_GRACE, default 6 h), and the members keep their
 * whole window from then.
 *
 * The server runs in this process on a test clock (server/src/runtime/clock.ts), stopped gracefully
 * and started again on the same port and database (`TestServer.restart`); the clock moves through the
 * downtime while it is stopped, so no real minute passes. (Real server processes on the real clock: a
 * server SIGKILLed while the stand-up is sending its questions, standup-crash.test.ts; the scheduler,
 * scheduler-process.test.ts. Daylight-saving changes: standup-bot.test.ts and standup-unit.test.ts.)
 */

const Q1 = 'Status?';
/** The stand-up is daily at 09:00 UTC; the clock starts an hour before it. */
const DUE = Date.parse('2027-06-01T09:00:00.000Z');
const clock = new TestClock('2027-06-01T08:00:00.000Z');

describe('stand-ups across server restarts', () => {
  let srv: TestServer;
  let members: UserHandle[];
  let channel: string;

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_SCHEDULER_POLL: '200ms' }, { clock });
    const w = await World.create(srv.url);
    const org = await w.org();
    members = [];
    for (let i = 0; i < 3; i++) members.push(await w.user({ organization_id: org.id }, org.admin.api));
    channel = await w.channel(members[0]!.api);
    for (const u of members.slice(1)) {
      expectStatus(await members[0]!.api.post(`/api/channels/${channel}/members`, { user_id: u.id }), 201);
    }
  });
  afterAll(() => srv?.close());

  it('a stand-up due while the server is down fires once after it starts again', async () => {
    const bot = await builtinBotId(members[0]!.api, 'standup');
    await answer(members[0]!.api, `/standup setup 09:00 daily UTC "${Q1}" window:1m remind:off`, {
      channel_id: channel,
    });
    // Down through the time it was due, and a little longer.
    await moveClockTo(srv, clock, DUE - 60_000);
    await srv.restart(() => clock.set(DUE + 5_000));
    for (const u of members)
      await waitFor('the first question', async () => (await firstQuestions(u, bot, Q1)) > 0, 30_000);
    const dm = (await dmsFromBot(members[0]!, bot)).find((m) => m.content.includes(Q1))!;
    expect(Date.parse(dm.created_at)).toBeGreaterThanOrEqual(DUE + 5_000); // sent after the restart
    // One summary, a whole window after the late start (the members keep their full minute): none
    // yet at 09:00 + 1 minute, where it would have been without the downtime.
    await moveClockTo(srv, clock, DUE + 60_000);
    await jobsSettled(srv, clock, bot);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toEqual([]);
    await moveClockTo(srv, clock, Date.parse(dm.created_at) + 60_000);
    const summary = await waitFor(
      'the summary',
      async () => (await channelMessages(members[0]!.api, channel)).find((m) => m.content.startsWith('📋')),
      30_000,
    );
    expect(Date.parse(summary.created_at)).toBeGreaterThanOrEqual(Date.parse(dm.created_at) + 55_000);
    expect(summary.content).toContain('0 of 3 answered');
    await jobsSettled(srv, clock, bot); // every job due so far has finished: nothing more comes of them
    for (const u of members) expect(await firstQuestions(u, bot, Q1), u.email).toBe(1);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  });
});
