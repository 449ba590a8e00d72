import { afterAll, beforeAll, describe, expect as globalExpect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import type { Api } from './helpers/client.js';
import { expectStatus } from './helpers/client.js';
import { jobsSettled, moveClockTo } from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The poll and survey bot (server/src/bots/poll/, docs/bots/POLL.md) end to
 * end through the public API only: slash commands in (POST /api/commands/execute), clicks in (POST
 * /api/messages/{id}/actions), replies in DMs, and what comes out: the poll message updated live, the
 * result message when it closes, survey DMs and the creator's summary. On SQLite, and on PostgreSQL
 * with DATABASE_URL.
 *
 * The two tests with a closing time (2 hours) move the server's test clock (server/src/runtime/clock.ts)
 * past it and wait for the result: no real time passes. (The poll bot's commands and clicks run on the
 * real clock as ever; the scheduler on the real clock end to end: scheduler-process.test.ts.)
 */

const clock = new TestClock();
const TWO_HOURS = 2 * 3_600_000;

const VOTERS = 100;

interface Msg {
  id: string;
  content: string;
  actions: { type: string; id: string; label?: string; value?: string }[] | null;
  bot_id: string | null;
  sender_type: string;
  created_at: string;
  dm_room_id: string | null;
}

let srv: TestServer;
let w: World;
let orgA: { id: string; admin: UserHandle };
let orgB: { id: string; admin: UserHandle };
/** Organization C runs the survey (its own instance of the bot). */
let orgC: { id: string; admin: UserHandle };
let cTeam: UserHandle[];
let cChannel: string;
/** Org A: the 100 voters' channel, and a small team's channel (for the other polls). */
let bigChannel: string;
let team: UserHandle[];
let teamChannel: string;
let voters: UserHandle[];
let bChannel: string;
let bUser: UserHandle;

async function inBatches<T, R>(items: T[], size: number, f: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(...(await Promise.all(items.slice(i, i + size).map((x, j) => f(x, i + j)))));
  }
  return out;
}

const run = async (api: Api, text: string, where: Record<string, string>) =>
  api.post('/api/commands/execute', { text, ...where });

async function messages(api: Api, channelId: string): Promise<Msg[]> {
  return expectStatus(await api.get(`/api/channels/${channelId}/messages`, { query: { limit: 100 } }), 200)
    .items as Msg[];
}

async function message(api: Api, channelId: string, id: string): Promise<Msg> {
  const m = (await messages(api, channelId)).find((x) => x.id === id);
  if (!m) throw new Error(`message ${id} not found`);
  return m;
}

/** Posts a poll and answers its message (the new message of the bot with this question). */
async function poll(api: Api, channelId: string, args: string): Promise<Msg> {
  const before = new Set((await messages(api, channelId)).map((m) => m.id));
  const r = expectStatus(await run(api, `/poll ${args}`, { channel_id: channelId }), 202);
  globalExpect(r.delivery.status).toBe('delivered');
  globalExpect(r.reply_error ?? null).toBeNull();
  globalExpect(r.reply ?? null).toBeNull(); // the poll message is the answer
  const question = /^"([^"]*)"/.exec(args)![1]!;
  const m = (await messages(api, channelId)).find(
    (x) => !before.has(x.id) && x.actions !== null && x.content.startsWith(`📊 **${question}**`),
  );
  if (!m) throw new Error('no poll message was posted');
  return m;
}

const click = (api: Api, messageId: string, actionId: string, value?: string) =>
  api.post(`/api/messages/${messageId}/actions`, {
    action_id: actionId,
    ...(value !== undefined && { value }),
  });

/** The user's DM room with the bot, once it exists. */
async function dmWith(user: UserHandle, botId: string): Promise<string | undefined> {
  const rooms = expectStatus(await user.api.get('/api/dm-rooms'), 200).items as {
    id: string;
    members: { type: string; id: string }[];
  }[];
  return rooms.find((r) => r.members.some((m) => m.type === 'bot' && m.id === botId))?.id;
}

async function dmMessages(user: UserHandle, roomId: string): Promise<Msg[]> {
  return expectStatus(await user.api.get(`/api/dm-rooms/${roomId}/messages`, { query: { limit: 100 } }), 200)
    .items as Msg[];
}

beforeAll(async () => {
  srv = await startTestServer({}, { clock });
  w = await World.create(srv.url);
  orgA = await w.org();
  orgB = await w.org();
  bigChannel = await w.channel(orgA.admin.api);
  teamChannel = await w.channel(orgA.admin.api);
  voters = await inBatches(Array.from({ length: VOTERS }), 10, () =>
    w.user({ organization_id: orgA.id }, orgA.admin.api),
  );
  await inBatches(voters, 10, async (u) =>
    expectStatus(await orgA.admin.api.post(`/api/channels/${bigChannel}/members`, { user_id: u.id }), 201),
  );
  team = voters.slice(0, 3);
  for (const u of team) {
    expectStatus(await orgA.admin.api.post(`/api/channels/${teamChannel}/members`, { user_id: u.id }), 201);
  }
  bChannel = await w.channel(orgB.admin.api);
  bUser = await w.user({ organization_id: orgB.id }, orgB.admin.api);
  expectStatus(await orgB.admin.api.post(`/api/channels/${bChannel}/members`, { user_id: bUser.id }), 201);
  orgC = await w.org();
  cChannel = await w.channel(orgC.admin.api);
  cTeam = [];
  for (let i = 0; i < 3; i++) {
    const u = await w.user({ organization_id: orgC.id }, orgC.admin.api);
    expectStatus(await orgC.admin.api.post(`/api/channels/${cChannel}/members`, { user_id: u.id }), 201);
    cTeam.push(u);
  }
}, 180_000);

afterAll(async () => {
  await srv?.close();
});

describe('poll and survey bot', () => {
  it('votes change, retract and count per voter; anonymous polls show no names; multiple choice counts voters and votes', async ({
    expect,
  }) => {
    const [u1, u2, u3] = team as [UserHandle, UserHandle, UserHandle];
    const p = await poll(orgA.admin.api, teamChannel, '"Lunch?" Pizza Sushi --anonymous');
    expect(p.content).toContain('votes are anonymous');
    expect(p.content).not.toContain('closes'); // no --closes: open until its creator closes it
    expectStatus(await click(u1.api, p.id, 'vote-0'), 202);
    expectStatus(await click(u1.api, p.id, 'vote-1'), 202); // changes the vote
    expectStatus(await click(u2.api, p.id, 'vote-0'), 202);
    expectStatus(await click(u2.api, p.id, 'retract'), 202);
    expectStatus(await click(u2.api, p.id, 'retract'), 202); // retracting twice is harmless
    expectStatus(await click(u3.api, p.id, 'vote-1'), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, p.id)).content, { timeout: 20_000 })
      .toContain('**1. Pizza** · 0 votes · 0%\n`░░░░░░░░░░`\n\n**2. Sushi** · 2 votes · 100%');
    const anon = await message(orgA.admin.api, teamChannel, p.id);
    expect(anon.content).toContain('**2 votes**');
    for (const u of team) expect(anon.content).not.toContain(u.email.split('@')[0]!.split('-')[1]!);

    const m = await poll(orgA.admin.api, teamChannel, '"Toppings" Cheese Ham Olives --multiple');
    expect(m.actions!.find((a) => a.id === 'retract')!.label).toBe('Retract my votes');
    for (const [u, a] of [
      [u1, 'vote-0'],
      [u1, 'vote-2'],
      [u1, 'vote-2'],
      [u2, 'vote-0'],
    ] as const)
      expectStatus(await click(u.api, m.id, a), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, m.id)).content, { timeout: 20_000 })
      .toContain('**3 votes** from 2 voters');
    const multi = await message(orgA.admin.api, teamChannel, m.id);
    expect(multi.content).toContain('**1. Cheese** · 2 votes · 100%');
    expect(multi.content).toContain('**3. Olives** · 1 vote · 50%');
    expect(multi.content).toContain(u1.email.split('@')[0]!.split('-')[1]!); // names shown
    expectStatus(await click(u1.api, m.id, 'retract'), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, m.id)).content, { timeout: 20_000 })
      .toContain('**1 vote** from 1 voter');
  });

  it('only the creator closes a poll early; a double click on Close posts the result once', async ({
    expect,
  }) => {
    const [u1] = team as [UserHandle];
    const p = await poll(orgA.admin.api, teamChannel, '"Ship it?" Yes No');
    expectStatus(await click(u1.api, p.id, 'vote-0'), 202);
    expectStatus(await click(u1.api, p.id, 'close'), 202); // not the creator: ignored
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, p.id)).content, { timeout: 20_000 })
      .toContain('**1 vote**');
    expect((await message(orgA.admin.api, teamChannel, p.id)).actions).not.toBeNull();

    const both = await Promise.all([
      click(orgA.admin.api, p.id, 'close'),
      click(orgA.admin.api, p.id, 'close'),
    ]);
    for (const x of both) expect(x.status).toBe(202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, p.id)).actions, { timeout: 20_000 })
      .toBeNull();
    const results = async () =>
      (await messages(orgA.admin.api, teamChannel)).filter((m) =>
        m.content.startsWith('📊 Poll closed: **Ship it?**'),
      );
    await expect.poll(async () => (await results()).length, { timeout: 20_000 }).toBe(1);
    expect((await results())[0]!.content).toContain('🏆 **Yes** with 1 vote (100%)');
    // Still one after a later click of the same bot's was handled (the bot handles its deliveries one
    // at a time, in order: the second Close came before it) and every job due has finished: the second
    // click and the cancelled job post nothing.
    const sentinel = await poll(orgA.admin.api, teamChannel, '"Sentinel after Close" Yes No');
    expectStatus(await click(u1.api, sentinel.id, 'vote-1'), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, sentinel.id)).content, {
        timeout: 20_000,
      })
      .toContain('**1 vote**');
    await jobsSettled(srv, clock, p.bot_id!);
    expect(await results()).toHaveLength(1);
  });

  it('bad input gets a clear answer, shown to the invoking user only', async ({ expect }) => {
    const api = orgA.admin.api;
    const where = { channel_id: teamChannel };
    const cases: [string, RegExp][] = [
      ['/poll "Q" "Only one"', /A poll: give at least 2 options \(you gave 1\)/],
      [
        `/poll "Q" ${Array.from({ length: 11 }, (_, i) => `o${i}`).join(' ')}`,
        /at most 10 options are allowed/,
      ],
      [`/poll "${'q'.repeat(301)}" A B`, /The question is 301 characters long; at most 300/],
      ['/poll Q A B --closes 30s', /at least 1 minute/],
      ['/poll Q A B --closes 31d', /at most 30 days/],
      ['/poll Q A B --closes later', /--closes takes a duration/],
      ['/poll Q A B --sneaky', /Unknown option --sneaky/],
      ['/poll "Q A B', /A quote is not closed/],
      ['/survey "Title"', /Ask at least one question/],
      ['/survey T "Mood? [Good]"', /Question 1: give at least 2 options/],
    ];
    for (const [text, re] of cases) {
      const r = expectStatus(await run(api, text, where), 202);
      expect(r.reply?.ephemeral, text).toBe(true);
      expect(r.reply.content, text).toMatch(re);
    }
    const help = expectStatus(await run(api, '/poll', where), 202);
    expect(help.reply.ephemeral).toBe(true);
    expect(help.reply.content).toContain('/poll "Question" "Option A" "Option B"');
    // Nothing was posted by any of these.
    expect((await messages(api, teamChannel)).filter((m) => m.content.includes('**Q**'))).toHaveLength(0);

    // A survey asks a channel's members: not in a topic.
    const { topicId } = await w.project(api);
    const t = expectStatus(await run(api, '/survey T Q', { topic_id: topicId }), 202);
    expect(t.reply.content).toMatch(/run \/survey .* in a channel/);
    // A poll in a topic works (the bot joins the project).
    const r = expectStatus(await run(api, '/poll "In a topic?" Yes No', { topic_id: topicId }), 202);
    expect(r.delivery.status).toBe('delivered');
    const posted = expectStatus(await api.get(`/api/topics/${topicId}/messages`), 200).items as Msg[];
    expect(posted.find((m) => m.content.startsWith('📊 **In a topic?**'))?.actions).not.toBeNull();

    // Clicks: an unknown action is refused; a select value is required only for selects.
    const p = await poll(api, teamChannel, '"Clicks" A B');
    const bad = await click(team[0]!.api, p.id, 'vote-7');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/no action "vote-7"/);
    const forged = await click(team[0]!.api, p.id, 'vote-0', 'not-the-value');
    expect(forged.status).toBe(400);
  });

  it('organization isolation: each organization has its own poll bot, and neither sees the other', async ({
    expect,
  }) => {
    const a = await poll(orgA.admin.api, teamChannel, '"Org A question" A1 A2');
    const b = await poll(orgB.admin.api, bChannel, '"Org B question" B1 B2');
    expect(a.bot_id).not.toBe(b.bot_id);

    // B's users cannot click A's poll (not found, as if it did not exist), nor A's users B's.
    const cross = await click(bUser.api, a.id, 'vote-0');
    expect(cross.status).toBe(404);
    expect((await click(team[0]!.api, b.id, 'vote-0')).status).toBe(404);
    // A user of B cannot run the command in A's channel.
    expect((await run(bUser.api, '/poll Q X Y', { channel_id: teamChannel })).status).toBe(404);

    // Votes in B change B's poll only.
    expectStatus(await click(bUser.api, b.id, 'vote-1'), 202);
    await expect
      .poll(async () => (await message(orgB.admin.api, bChannel, b.id)).content, { timeout: 20_000 })
      .toContain('**1 vote**');
    expect((await message(orgA.admin.api, teamChannel, a.id)).content).toContain('**0 votes**');
    expectStatus(await click(team[1]!.api, a.id, 'vote-0'), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, a.id)).content, { timeout: 20_000 })
      .toContain('**1 vote**');
    expect((await message(orgB.admin.api, bChannel, b.id)).content).toContain('**1 vote**');

    // What A's bot posted is in A only, and B's in B only.
    const inB = await messages(orgB.admin.api, bChannel);
    expect(
      inB.every((m) => !m.content.includes('Org A') && (m.bot_id === null || m.bot_id === b.bot_id)),
    ).toBe(true);
    const inA = await messages(orgA.admin.api, teamChannel);
    expect(inA.some((m) => m.content.includes('Org B'))).toBe(false);

    // The poll bot of A received nothing from B, and B's nothing from A: the events fanned out to each
    // (the catch-up feed, read by the system administrator) are of its own organization only.
    const feed = async (botId: string) =>
      JSON.stringify(
        expectStatus(await w.admin.api.get(`/api/bots/${botId}/events`, { query: { limit: 500 } }), 200)
          .items,
      );
    const aFeed = await feed(a.bot_id!);
    const bFeed = await feed(b.bot_id!);
    expect(aFeed).toContain(a.id); // clicks on A's polls
    expect(bFeed).toContain(b.id); // bUser's click
    for (const x of [bChannel, b.id, bUser.id, orgB.id]) expect(aFeed).not.toContain(x);
    for (const x of [teamChannel, a.id, team[0]!.id, orgA.id]) expect(bFeed).not.toContain(x);
    // B's bot row is not even visible to A's admin.
    expect((await orgA.admin.api.get(`/api/bots/${b.bot_id}`)).status).toBe(404);
  });

  it('disabled by the system administrator: /poll is refused and its buttons answer 409; enabled again, they work', async ({
    expect,
  }) => {
    const [u1] = team as [UserHandle];
    const p = await poll(orgA.admin.api, teamChannel, '"Before the switch-off?" Yes No');
    // An org admin cannot switch it off; the system administrator can (everywhere).
    expect((await orgA.admin.api.patch('/api/builtin-bots/poll', { status: 'disabled' })).status).toBe(403);
    expectStatus(await w.admin.api.patch('/api/builtin-bots/poll', { status: 'disabled' }), 200);
    try {
      const r = await run(orgA.admin.api, '/poll "Q" A B', { channel_id: teamChannel });
      expect(r.status).toBe(403);
      expect(r.body.error.message).toMatch(/disabled by the system administrator/);
      const c = await click(u1.api, p.id, 'vote-0');
      expect(c.status).toBe(409);
      expect(c.body.error.message).toMatch(/disabled/);
    } finally {
      expectStatus(await w.admin.api.patch('/api/builtin-bots/poll', { status: 'active' }), 200);
    }
    expectStatus(await click(u1.api, p.id, 'vote-0'), 202);
    await expect
      .poll(async () => (await message(orgA.admin.api, teamChannel, p.id)).content, { timeout: 20_000 })
      .toContain('**1 vote**');
  });

  // The two with a closing time run one after the other: each moves the one clock past its closing.
  it(`${VOTERS} concurrent votes from ${VOTERS} users (and double clicks) give exactly ${VOTERS} votes; the result is posted at the closing time`, async ({
    expect,
  }) => {
    const api = orgA.admin.api;
    const p = await poll(api, bigChannel, '"Which day for the offsite?" Monday Wednesday Friday --closes 2h');
    expect(p.content).toContain('📊 **Which day for the offsite?**');
    expect(p.content).toMatch(/closes \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    expect(p.content).toContain('**0 votes**');
    expect(p.actions!.map((a) => a.id)).toEqual(['vote-0', 'vote-1', 'vote-2', 'retract', 'close']);

    // Everyone at once; the first ten double-click (two requests each, concurrently).
    const t0 = performance.now();
    const clicks = voters.flatMap((u, i) => {
      const one = () => click(u.api, p.id, `vote-${i % 3}`);
      return i < 10 ? [one(), one()] : [one()];
    });
    const answers = await Promise.all(clicks);
    for (const r of answers) expect(r.status, r.text).toBe(202);
    expect(answers).toHaveLength(VOTERS + 10);

    await expect
      .poll(async () => (await message(api, bigChannel, p.id)).content, { timeout: 50_000, interval: 250 })
      .toContain(`**${VOTERS} votes**`);
    const settled = performance.now() - t0;
    const live = await message(api, bigChannel, p.id);
    expect(live.content).toContain('**1. Monday** · 34 votes · 34%');
    expect(live.content).toContain('**2. Wednesday** · 33 votes · 33%');
    expect(live.content).toContain('**3. Friday** · 33 votes · 33%');
    // Names are shown (not anonymous): 15 of them, then how many more.
    expect(live.content).toContain('and 19 more');
    console.log(
      `poll: ${VOTERS} voters + 10 double clicks → message shows ${VOTERS} votes after ${Math.round(settled)} ms (${srv.dialect})`,
    );

    // Closed at its time by the scheduler: the message without buttons, and one result message.
    await moveClockTo(srv, clock, Date.parse(p.created_at) + TWO_HOURS - 10_000);
    await jobsSettled(srv, clock, p.bot_id!);
    expect((await message(api, bigChannel, p.id)).actions).not.toBeNull(); // not early
    await moveClockTo(srv, clock, Date.parse(p.created_at) + TWO_HOURS + 60_000);
    await expect
      .poll(async () => (await message(api, bigChannel, p.id)).actions, { timeout: 20_000 })
      .toBeNull();
    const closed = await message(api, bigChannel, p.id);
    expect(closed.content).toContain('— closed');
    expect(closed.content).toContain(`🔒 Closed`);
    expect(closed.content).toContain(`**${VOTERS} votes**`);
    expect(closed.content).toContain('🏆 **1. Monday** · 34 votes');
    await expect
      .poll(
        async () =>
          (await messages(api, bigChannel)).filter((m) => m.content.startsWith('📊 Poll closed')).length,
        {
          timeout: 20_000,
        },
      )
      .toBe(1);
    const result = (await messages(api, bigChannel)).find((m) => m.content.startsWith('📊 Poll closed'))!;
    expect(result.content).toContain('📊 Poll closed: **Which day for the offsite?**');
    expect(result.content).toContain(`**${VOTERS} votes** in all.`);
    expect(result.content).toContain('🏆 **Monday** with 34 votes (34%)');
    expect(result.bot_id).toBe(p.bot_id);

    // A click after closing: the message has no buttons any more.
    const late = await click(voters[50]!.api, p.id, 'vote-1');
    expect(late.status).toBe(400);
    expect(late.body.error.message).toMatch(/this message has no actions/);
  });

  it('a survey asks each member by DM (buttons for choices, replies for text) and summarizes for its creator at closing', async ({
    expect,
  }) => {
    const creator = orgC.admin;
    const startedAt = clock.now();
    const r = expectStatus(
      await run(creator.api, '/survey "Team retro" "What went well?" "Mood? [Great|OK|Bad]" --closes 2h', {
        channel_id: cChannel,
      }),
      202,
    );
    expect(r.reply.ephemeral).toBe(true);
    // The creator and the three members of the channel (bots are not asked).
    expect(r.reply.content).toMatch(
      /Survey \*\*Team retro\*\* started: 4 members of #chan-\w+ get its 2 questions by DM/,
    );
    const botId = (r.bot_id as string | null) ?? '';
    expect(botId).not.toBe('');

    // Each member gets question 1 by DM.
    const [u1, u2, u3] = cTeam as [UserHandle, UserHandle, UserHandle];
    const rooms = new Map<string, string>();
    for (const u of [u1, u2, u3, creator]) {
      await expect.poll(() => dmWith(u, botId), { timeout: 45_000 }).toBeTruthy();
      const room = (await dmWith(u, botId))!;
      rooms.set(u.id, room);
      await expect
        .poll(async () => (await dmMessages(u, room)).map((m) => m.content).join('\n'), { timeout: 45_000 })
        .toContain('**Question 1 of 2:** What went well?');
    }
    const first = (await dmMessages(u1, rooms.get(u1.id)!))[0]!;
    expect(first.content).toContain('📝 **Team retro** — a survey from');
    expect(first.actions).toBeNull();

    // u1: a text answer, then a choice — clicked twice (counts once).
    expectStatus(
      await u1.api.post(`/api/dm-rooms/${rooms.get(u1.id)}/messages`, { content: 'Shipping on time' }),
      201,
    );
    const q2 = async (u: UserHandle) => {
      await expect
        .poll(async () => (await dmMessages(u, rooms.get(u.id)!)).find((m) => m.actions !== null)?.id, {
          timeout: 45_000,
        })
        .toBeTruthy();
      return (await dmMessages(u, rooms.get(u.id)!)).find((m) => m.actions !== null)!;
    };
    const m1 = await q2(u1);
    expect(m1.content).toContain('**Question 2 of 2:** Mood?');
    expect(m1.actions!.map((a) => a.label)).toEqual(['Great', 'OK', 'Bad']);
    const double = await Promise.all([click(u1.api, m1.id, 'answer-0'), click(u1.api, m1.id, 'answer-0')]);
    for (const x of double) expect(x.status).toBe(202);
    await expect
      .poll(async () => (await dmMessages(u1, rooms.get(u1.id)!)).map((m) => m.content).join('\n'), {
        timeout: 45_000,
      })
      .toContain('🙏 Thank you');
    const answered = (await dmMessages(u1, rooms.get(u1.id)!)).find((m) => m.id === m1.id)!;
    expect(answered.actions).toBeNull();
    expect(answered.content).toContain('✅ Your answer: **Great**');

    // u2: skips the text question, answers the choice by typing it.
    expectStatus(await u2.api.post(`/api/dm-rooms/${rooms.get(u2.id)}/messages`, { content: 'skip' }), 201);
    await q2(u2);
    expectStatus(await u2.api.post(`/api/dm-rooms/${rooms.get(u2.id)}/messages`, { content: 'ok' }), 201);
    await expect
      .poll(async () => (await dmMessages(u2, rooms.get(u2.id)!)).map((m) => m.content).join('\n'), {
        timeout: 45_000,
      })
      .toContain('🙏 Thank you');
    // u3: answers the first question only; the creator answers nothing.
    expectStatus(
      await u3.api.post(`/api/dm-rooms/${rooms.get(u3.id)}/messages`, { content: 'Pairing' }),
      201,
    );
    const pending = await q2(u3);

    // At the closing time the creator gets the summary by DM.
    await moveClockTo(srv, clock, startedAt + TWO_HOURS + 60_000);
    await expect
      .poll(
        async () =>
          (await dmMessages(creator, rooms.get(creator.id)!)).find((m) =>
            m.content.startsWith('📝 **Survey results'),
          )?.content,
        { timeout: 20_000 },
      )
      .toBeTruthy();
    const summary = (await dmMessages(creator, rooms.get(creator.id)!)).find((m) =>
      m.content.startsWith('📝 **Survey results'),
    )!.content;
    const name = (u: UserHandle) => u.email.split('@')[0]!; // the display name World gives a user
    expect(summary).toContain('📝 **Survey results: Team retro**');
    expect(summary).toMatch(/2 of 4 members of \\#chan-\w+ answered every question, 1 in part/);
    expect(summary).toContain(`- ${name(u1)}: Shipping on time`);
    expect(summary).toContain(`- ${name(u3)}: Pairing`);
    expect(summary).toContain(`- Great · 1 · 50%`);
    expect(summary).toContain(`- OK · 1 · 50%`);
    expect(summary).toContain(`- Bad · 0 · 0%`);
    expect(summary).toContain('Not answered: ');
    expect(summary.split('Not answered: ')[1]).not.toContain(name(u1));
    // u3's unanswered question lost its buttons and says why (right after the summary is sent).
    await expect
      .poll(async () => (await dmMessages(u3, rooms.get(u3.id)!)).find((m) => m.id === pending.id)!.content, {
        timeout: 30_000,
      })
      .toContain('The survey closed before this question was answered');
    const after = (await dmMessages(u3, rooms.get(u3.id)!)).find((m) => m.id === pending.id)!;
    expect(after.actions).toBeNull();
    // Nobody of another organization was asked.
    expect(await dmWith(bUser, botId)).toBeUndefined();
    expect(await dmWith(team[0]!, botId)).toBeUndefined();
  });
});
