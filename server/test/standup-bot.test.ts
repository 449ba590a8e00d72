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
  waitFor,
  waitForDm,
} from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The stand-up bot (server/src/bots/standup/, docs/BUILTIN-BOTS.md "Stand-up bot") end to end through
 * the public API only: `/standup` in a channel (POST /api/commands/execute), the questions by DM at
 * the set time, answers as DM replies, the reminder, one summary in the channel naming who has not
 * answered. Two organizations hold stand-ups at the same minute (tenant isolation); a second server
 * shows that disabling the platform bot stops its commands and its schedules. On SQLite, and on
 * PostgreSQL with DATABASE_URL.
 *
 * Time is the server's test clock (server/src/runtime/clock.ts), started on Saturday 2027-03-27 12:00
 * UTC: the stand-up at 09:00 Europe/Berlin is due "tomorrow", the Sunday clocks go forward (CET →
 * CEST), so at 07:00 UTC and not 08:00. The test moves the clock to the start, the reminder and the
 * summary and waits for each message; no real minute passes. (The same bot on the real clock, across
 * real processes: standup-crash.test.ts.)
 */

/** Saturday, the day before Europe/Berlin's spring-forward (2027-03-28 01:00 UTC). */
const CLOCK_START = '2027-03-27T12:00:00.000Z';
/** Sunday 09:00 CEST: the first start of a daily 09:00 Europe/Berlin stand-up set up at CLOCK_START. */
const FIRST_START = Date.parse('2027-03-28T07:00:00.000Z');
const clock = new TestClock(CLOCK_START);

let srv: TestServer;
let w: World;
let a: { id: string; admin: UserHandle };
let b: { id: string; admin: UserHandle };
let team: UserHandle[];
let bUser: UserHandle;
let channel: string;
let bChannel: string;
let botA: string;
let botB: string;

beforeAll(async () => {
  srv = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' }, { clock });
  w = await World.create(srv.url);
  a = await w.org();
  b = await w.org();
  team = [];
  for (let i = 0; i < 3; i++) team.push(await w.user({ organization_id: a.id }, a.admin.api));
  channel = await w.channel(team[0]!.api);
  for (const u of team.slice(1)) {
    expectStatus(await team[0]!.api.post(`/api/channels/${channel}/members`, { user_id: u.id }), 201);
  }
  bUser = await w.user({ organization_id: b.id }, b.admin.api);
  bChannel = await w.channel(bUser.api);
  botA = await builtinBotId(team[0]!.api, 'standup');
  botB = await builtinBotId(bUser.api, 'standup');
});

afterAll(async () => {
  await srv?.close();
});

describe('stand-up bot', () => {
  it('answers bad input, help and misuse with clear errors, only to the invoking user', async () => {
    const u = team[0]!;
    const help = await answer(u.api, '/standup', { channel_id: channel });
    expect(help.ephemeral).toBe(true);
    expect(help.content).toContain('/standup setup 09:30 mon-fri Europe/Berlin');
    for (const [text, error] of [
      ['/standup setup 25:00 mon-fri UTC "Q"', 'not a time HH:MM'],
      ['/standup setup 09:30 someday UTC "Q"', 'not a weekday'],
      ['/standup setup 09:30 mon-fri Mars/Base "Q"', 'not an IANA time zone'],
      ['/standup setup 09:30 mon-fri UTC window:13h', 'between 1m and 12h'],
      ['/standup frobnicate', 'Unknown subcommand'],
      ['/standup skip 2020-01-01', 'No stand-up is set up'],
      ['/standup pause', 'No stand-up is set up'],
    ] as const) {
      const r = await answer(u.api, text, { channel_id: channel });
      expect(r.ephemeral, text).toBe(true);
      expect(r.content, text).toContain('⚠️');
      expect(r.content, text).toContain(error);
      expect(r.message_id).toBeNull();
    }
    const show = await answer(u.api, '/standup show', { channel_id: channel });
    expect(show.content).toContain('No stand-up is set up in this channel');
    // Outside a channel (a DM room with the bot): refused with the reason.
    const room = expectStatus(await u.api.post('/api/dm-rooms', { bot_ids: [botA] }), 201).id;
    const r = await answer(u.api, '/standup show', { dm_room_id: room });
    expect(r.content).toContain('⚠️ A stand-up belongs to a channel: run /standup in the channel');
    // Another organization's channel does not exist for this user.
    expect(
      (await u.api.post('/api/commands/execute', { text: '/standup show', channel_id: bChannel })).status,
    ).toBe(404);
  });

  it('runs a stand-up end to end: questions by DM, answers in order, reminder, one summary naming who did not answer; another organization sees none of it', async () => {
    const [ann, bob, cy] = team as [UserHandle, UserHandle, UserHandle];
    const at = FIRST_START;
    const setup = await answer(
      ann.api,
      `/standup setup 09:00 daily Europe/Berlin "What did you do yesterday?" "What will you do today?" window:1m remind:30s`,
      { channel_id: channel },
    );
    expect(setup.ephemeral).toBe(false); // the channel sees the set-up
    expect(setup.content).toContain(`✅ Stand-up set up for this channel.`);
    expect(setup.content).toContain(
      `09:00 every day (Europe/Berlin); summary 1m later, reminder 30s before it`,
    );
    const show = await answer(cy.api, '/standup show', { channel_id: channel });
    expect(show.ephemeral).toBe(true);
    expect(show.content).toContain('- Next: Sun 28 Mar 2027');
    expect(show.content).toContain(`09:00 (Europe/Berlin)`);
    // Organization B sets up its own stand-up at the same minute, with its own instance of the bot.
    expect(botB).not.toBe(botA);
    await answer(bUser.api, `/standup setup 09:00 daily Europe/Berlin "B question?" window:1m remind:off`, {
      channel_id: bChannel,
    });

    // A minute before the time: nobody is asked yet. At 07:00 UTC (09:00 CEST; Saturday's offset would
    // make it 08:00 UTC) the questions go out.
    await moveClockTo(srv, clock, at - 60_000);
    await jobsSettled(srv, clock, botA);
    expect(await dmsFromBot(ann, botA)).toHaveLength(0);
    // At the time: every member gets the first question, once.
    await moveClockTo(srv, clock, at);
    const q1 = 'What did you do yesterday?';
    const [first] = await waitForDm(ann, botA, q1, 1, 20_000);
    expect(Date.parse(first!.created_at)).toBeGreaterThanOrEqual(at);
    expect(Date.parse(first!.created_at)).toBeLessThan(at + 30_000); // 09:00 CEST, not CET
    expect(first!.content).toContain('**Stand-up in #');
    expect(first!.content).toContain(`**1/2** ${q1}`);
    await waitForDm(bob, botA, q1);
    await waitForDm(cy, botA, q1);
    await waitForDm(bUser, botB, 'B question?');

    // Ann answers both questions in order; Bob only the first; Cy not at all.
    await dmToBot(ann, botA, 'Fixed the login bug\nReviewed two PRs');
    await waitForDm(ann, botA, '**2/2** What will you do today?');
    await dmToBot(ann, botA, 'Release 1.4');
    await waitForDm(ann, botA, '✅ Thanks! Your answers are in');
    await dmToBot(bob, botA, 'Wrote tests');
    await waitForDm(bob, botA, '**2/2** What will you do today?');

    // The reminder (30 s before the summary) goes to Bob and Cy, who have not finished; not to Ann.
    await moveClockTo(srv, clock, at + 30_000);
    await waitForDm(bob, botA, '⏰ Reminder', 1, 20_000);
    await waitForDm(cy, botA, '⏰ Reminder', 1, 20_000);
    await jobsSettled(srv, clock, botA);
    expect((await dmsFromBot(ann, botA)).filter((m) => m.content.includes('⏰'))).toHaveLength(0);

    // One summary in the channel, at the end of the window.
    await moveClockTo(srv, clock, at + 60_000);
    const summary = await waitFor(
      'the summary',
      async () =>
        (await channelMessages(ann.api, channel)).find((m) => m.content.startsWith('📋 **Stand-up')),
      20_000,
    );
    expect(Date.parse(summary.created_at)).toBeGreaterThanOrEqual(at + 60_000);
    expect(summary.bot_id).toBe(botA);
    const name = (u: UserHandle) => u.email.split('@')[0]!.replace(/-/g, '-');
    expect(summary.content).toContain(`2 of 3 answered · not answered: **${name(cy)}**`);
    expect(summary.content).toContain(
      `**${name(ann)}**\n> **What did you do yesterday?**\n> Fixed the login bug\n> Reviewed two PRs\n> **What will you do today?**\n> Release 1.4`,
    );
    expect(summary.content).toContain(
      `**${name(bob)}**\n> **What did you do yesterday?**\n> Wrote tests\n> **What will you do today?**\n> _(no answer)_`,
    );
    // Organization B got its own summary, with nothing of A in it, and A's has nothing of B.
    const bSummary = await waitFor(
      'B summary',
      async () =>
        (await channelMessages(bUser.api, bChannel)).find((m) => m.content.startsWith('📋 **Stand-up')),
      20_000,
    );
    expect(bSummary.bot_id).toBe(botB);
    expect(bSummary.content).toContain('0 of 1 answered');
    for (const u of team) expect(bSummary.content).not.toContain(name(u));
    expect(summary.content).not.toContain(name(bUser));
    expect((await dmsFromBot(bUser, botA)).length).toBe(0);
    for (const u of team) expect((await dmsFromBot(u, botB)).length).toBe(0);

    // A late answer is not taken; nothing was sent twice.
    await dmToBot(cy, botA, 'Sorry, late');
    await waitForDm(cy, botA, 'No stand-up is waiting for your answers');
    await jobsSettled(srv, clock, botA); // every job due so far has finished: nothing more comes of them
    const all = await channelMessages(ann.api, channel);
    expect(all.filter((m) => m.content.startsWith('📋 **Stand-up'))).toHaveLength(1);
    for (const u of team) {
      const dms = await dmsFromBot(u, botA);
      expect(
        dms.filter((m) => m.content.includes(`**1/2** ${q1}`)),
        u.email,
      ).toHaveLength(1);
      expect(dms.filter((m) => m.content.includes('⏰')).length).toBeLessThanOrEqual(1);
    }
    // /standup show: the next one is tomorrow, the last one posted.
    const after = await answer(ann.api, '/standup show', { channel_id: channel });
    expect(after.content).toContain('summary posted');
    expect(after.content).toContain('3 members asked');
  });

  it('skip, pause and resume change what comes next; org B cannot touch org A’s stand-up', async () => {
    const u = team[1]!;
    const skip = await answer(u.api, '/standup skip tomorrow', { channel_id: channel });
    expect(skip.content).toMatch(/⏭ No stand-up on \d{4}-\d{2}-\d{2}/);
    const shown = await answer(u.api, '/standup show', { channel_id: channel });
    expect(shown.content).toMatch(/- Skipped: \d{4}-\d{2}-\d{2}/);
    const past = await answer(u.api, '/standup skip 2020-01-01', { channel_id: channel });
    expect(past.content).toContain('has passed');
    expect((await answer(u.api, '/standup pause', { channel_id: channel })).content).toContain(
      '⏸ Stand-up paused',
    );
    expect((await answer(u.api, '/standup pause', { channel_id: channel })).content).toContain(
      'paused already',
    );
    expect((await answer(u.api, '/standup show', { channel_id: channel })).content).toContain(
      'none while paused',
    );
    expect((await answer(u.api, '/standup resume', { channel_id: channel })).content).toContain(
      '▶️ Stand-up resumed; next:',
    );
    // B's command in its own channel never shows A's set-up.
    const bShow = await answer(bUser.api, '/standup show', { channel_id: bChannel });
    expect(bShow.content).not.toContain('Skipped');
    expect((await answer(u.api, '/standup remove', { channel_id: channel })).content).toContain(
      '🗑 Stand-up removed',
    );
    expect((await answer(u.api, '/standup show', { channel_id: channel })).content).toContain(
      'No stand-up is set up',
    );
  });
});
