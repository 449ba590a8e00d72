import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  jobsSettled,
  moveClockTo,
  waitFor,
} from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * The task notifications bot (server/src/bots/task-notify/, docs/bots/TASK-NOTIFY.md) end to end
 * through the public API only: `/tasknotify add` in the channel that receives them, tasks created,
 * assigned and moved through REST, the lines posted in the subscribed channels (only the chosen
 * events, only the chosen project or topic), the daily due-soon / overdue digest (a scheduled check at
 * 09:00 UTC), list and remove, and tenant isolation. On SQLite, and on PostgreSQL with DATABASE_URL.
 *
 * Time is the server's test clock (server/src/runtime/clock.ts), started at 08:00 UTC on 2027-06-01:
 * the digest comes when the test moves the clock to 09:00. "Nothing more arrives" checks end on a
 * sentinel: a built-in bot handles its deliveries one at a time in outbox order (docs/WEBHOOKS.md),
 * so once the line of a later task shows in #sentinel, every earlier event has been handled.
 */

const clock = new TestClock('2027-06-01T08:00:00.000Z');

let srv: TestServer;
let w: World;
let a: { id: string; admin: UserHandle };
let b: { id: string; admin: UserHandle };
let ann: UserHandle;
let bob: UserHandle;
let bUser: UserHandle;
let dev: string;
let qa: string;
let digest: string;
let bChannel: string;
let projectName: string;
let projectId: string;
let topic1: string;
let topic2: string;
let topic2Name: string;
let bot: string;
let sentinelChannel: string;
let sentinels = 0;
const name = (u: UserHandle) => u.email.split('@')[0]!;

const day = (offset: number) => new Date(clock.now() + offset * 86_400_000).toISOString().slice(0, 10);

async function createTask(u: UserHandle, topic: string, fields: Record<string, unknown>) {
  return expectStatus(await u.api.post(`/api/topics/${topic}/tasks`, fields), 201) as { id: string };
}

const linesIn = async (u: UserHandle, ch: string, prefix: string) =>
  (await channelMessages(u.api, ch)).filter((m) => m.bot_id === bot && m.content.includes(prefix));

/** Creates a task and waits for its line in #sentinel: every event before it has been handled. */
async function sentinel(): Promise<void> {
  const title = `Sentinel ${++sentinels}`;
  await createTask(ann, topic1, { title });
  await waitFor(title, async () => (await linesIn(ann, sentinelChannel, title)).length === 1);
}

beforeAll(async () => {
  srv = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' }, { clock });
  w = await World.create(srv.url);
  a = await w.org();
  b = await w.org();
  ann = await w.user({ organization_id: a.id }, a.admin.api);
  bob = await w.user({ organization_id: a.id }, a.admin.api);
  projectName = uniq('Website');
  projectId = expectStatus(await ann.api.post('/api/projects', { name: projectName }), 201).id;
  topic1 = expectStatus(await ann.api.post(`/api/projects/${projectId}/topics`, { name: 'Design' }), 201).id;
  topic2Name = 'Launch plan';
  topic2 = expectStatus(
    await ann.api.post(`/api/projects/${projectId}/topics`, { name: topic2Name }),
    201,
  ).id;
  expectStatus(await ann.api.post(`/api/projects/${projectId}/members`, { user_id: bob.id }), 201);
  dev = await w.channel(ann.api);
  qa = await w.channel(ann.api);
  digest = await w.channel(ann.api);
  expectStatus(await ann.api.post(`/api/channels/${dev}/members`, { user_id: bob.id }), 201);
  bUser = await w.user({ organization_id: b.id }, b.admin.api);
  bChannel = await w.channel(bUser.api);
  bot = await builtinBotId(ann.api, 'tasknotify');
});

afterAll(async () => {
  await srv?.close();
});

describe('task notifications bot', () => {
  it('answers bad input and misuse with clear errors', async () => {
    for (const [text, error] of [
      ['/tasknotify add', 'Name the project'],
      [`/tasknotify add ${projectName} deleted`, 'not an event'],
      ['/tasknotify add NoSuchProject', 'No project called "NoSuchProject" that you can reach'],
      [
        `/tasknotify add "${projectName}/Nope"`,
        `No topic called "Nope" that you can reach in ${projectName}`,
      ],
      [`/tasknotify add ${projectName} at:25:00`, 'not a time'],
      ['/tasknotify remove 3', 'There is no subscription 3'],
      ['/tasknotify frob', 'Unknown subcommand'],
    ] as const) {
      const r = await answer(ann.api, text, { channel_id: dev });
      expect(r.ephemeral, text).toBe(true);
      expect(r.content, text).toContain('⚠️');
      expect(r.content, text).toContain(error);
    }
    expect((await answer(ann.api, '/tasknotify list', { channel_id: dev })).content).toContain(
      'This channel gets no task notifications',
    );
    // A user who is not in the project cannot subscribe a channel to it (they cannot reach it).
    const outsider = await w.user({ organization_id: a.id }, a.admin.api);
    const ch = await w.channel(outsider.api);
    expect(
      (await answer(outsider.api, `/tasknotify add ${projectName}`, { channel_id: ch })).content,
    ).toContain('No project called');
    // Organization B does not see A's project at all.
    expect(
      (await answer(bUser.api, `/tasknotify add ${projectName}`, { channel_id: bChannel })).content,
    ).toContain('No project called');
  });

  it('posts the chosen events of a project or topic in the chosen channels', async () => {
    const add = await answer(ann.api, `/tasknotify add ${projectName} created assigned status`, {
      channel_id: dev,
    });
    expect(add.ephemeral).toBe(false);
    expect(add.content).toContain(
      `🔔 This channel gets the task events of project **${projectName}**: created, assigned, status changed.`,
    );
    const addQa = await answer(ann.api, `/tasknotify add "${projectName}/${topic2Name}" status`, {
      channel_id: qa,
    });
    sentinelChannel = await w.channel(ann.api);
    await answer(ann.api, `/tasknotify add ${projectName} created`, { channel_id: sentinelChannel });
    expect(addQa.content).toContain(`topic **${projectName} › ${topic2Name}**: status changed`);
    // (The bot joined the project as Ann, a member of it: the lines below come from its events.)
    // Created with an assignee: one "created" line naming the assignee (no separate "assigned" line).
    const t = await createTask(ann, topic1, {
      title: 'Hero *banner*',
      assignee_id: bob.id,
      due_date: day(3),
      priority: 'high',
    });
    const [created] = await waitFor('created line', async () => {
      const l = await linesIn(ann, dev, '🆕 **Task created**');
      return l.length > 0 ? l : null;
    });
    expect(created!.content).toContain(`in [${projectName} › Design](`);
    expect(created!.content).toContain(
      `\`${t.id.slice(-8)}\` Hero \\*banner\\* — assigned to **${name(bob)}** · due ${day(3)} · high · by ${name(ann)}`,
    );
    expectStatus(await bob.api.patch(`/api/tasks/${t.id}`, { status: 'in_progress' }), 200);
    const [status] = await waitFor('status line', async () => {
      const l = await linesIn(ann, dev, '**Status changed**');
      return l.length > 0 ? l : null;
    });
    expect(status!.content).toContain(`todo → **in progress** · by ${name(bob)}`);
    expectStatus(await bob.api.patch(`/api/tasks/${t.id}`, { assignee_id: ann.id }), 200);
    const [assigned] = await waitFor('assigned line', async () => {
      const l = await linesIn(ann, dev, '**Task assigned**');
      return l.length > 0 ? l : null;
    });
    expect(assigned!.content).toContain(`— to **${name(ann)}** (was ${name(bob)}) · by ${name(bob)}`);

    // Topic 2: its status change reaches #qa too; topic 1's events never reach #qa.
    const t2 = await createTask(ann, topic2, { title: 'Press release' });
    expectStatus(await ann.api.patch(`/api/tasks/${t2.id}`, { status: 'done' }), 200);
    const [qaLine] = await waitFor('qa line', async () => {
      const l = await linesIn(ann, qa, '**Status changed**');
      return l.length > 0 ? l : null;
    });
    expect(qaLine!.content).toContain('✅ **Status changed**');
    expect(qaLine!.content).toContain('Press release — todo → **done**');
    await waitFor('dev got both created lines', async () => (await linesIn(ann, dev, '🆕')).length === 2);
    await sentinel();
    const qaAll = (await channelMessages(ann.api, qa)).filter((m) => m.bot_id === bot);
    expect(qaAll.map((m) => m.content).filter((c) => c.includes('Hero'))).toEqual([]);
    expect(qaAll.filter((m) => m.content.includes('**Status changed**'))).toHaveLength(1); // once per event
    expect((await linesIn(ann, dev, '**Status changed**')).length).toBe(2);
    // Organization B's channel got nothing.
    expect(
      (await channelMessages(bUser.api, bChannel)).filter(
        (m) => m.bot_id !== null && !m.content.includes('⚠️'),
      ),
    ).toEqual([]);

    // list and remove: #qa stops getting them.
    expect((await answer(ann.api, '/tasknotify list', { channel_id: qa })).content).toContain(
      `1. topic **${projectName} › ${topic2Name}**: status changed`,
    );
    expect((await answer(ann.api, '/tasknotify remove 1', { channel_id: qa })).content).toContain(
      `🔕 This channel no longer gets the task events of ${projectName} › ${topic2Name}`,
    );
    expectStatus(await ann.api.patch(`/api/tasks/${t2.id}`, { status: 'todo' }), 200);
    await waitFor(
      'dev saw the reopening',
      async () => (await linesIn(ann, dev, 'done → **todo**')).length === 1,
    );
    await sentinel();
    expect((await linesIn(ann, qa, '**Status changed**')).length).toBe(1);
  });

  it('posts a daily digest of tasks due soon and overdue at the chosen time', async () => {
    const overdue = await createTask(ann, topic1, {
      title: 'Fix footer',
      due_date: day(-2),
      assignee_id: bob.id,
    });
    const today = await createTask(ann, topic2, { title: 'Book venue', due_date: day(0) });
    await createTask(ann, topic1, { title: 'Later thing', due_date: day(6) });
    const finished = await createTask(ann, topic1, { title: 'Old but done', due_date: day(-5) });
    expectStatus(await ann.api.patch(`/api/tasks/${finished.id}`, { status: 'done' }), 200);
    const hhmm = '09:00';
    const at = Date.parse(`${day(0)}T09:00:00.000Z`);
    expect(clock.now()).toBeLessThan(at); // still before 09:00 UTC of the same day
    const add = await answer(ann.api, `/tasknotify add ${projectName} due_soon overdue at:${hhmm} tz:UTC`, {
      channel_id: digest,
    });
    expect(add.content).toContain(`due soon, overdue (checked daily at ${hhmm}, UTC)`);
    await moveClockTo(srv, clock, at - 1000);
    await jobsSettled(srv, clock, bot);
    expect(await linesIn(ann, digest, '📅')).toEqual([]); // not a second early
    await moveClockTo(srv, clock, at);
    const [d] = await waitFor(
      'the digest',
      async () => {
        const l = await linesIn(ann, digest, '📅 **Task check**');
        return l.length > 0 ? l : null;
      },
      20_000,
    );
    expect(Date.parse(d!.created_at)).toBeGreaterThanOrEqual(at);
    expect(d!.content).toContain(
      `**Overdue (1)**\n- \`${overdue.id.slice(-8)}\` Fix footer · due ${day(-2)} · ${name(bob)} · Design`,
    );
    expect(d!.content).toContain(
      `**Due soon (1)**\n- \`${today.id.slice(-8)}\` Book venue · due ${day(0)} · unassigned · ${topic2Name}`,
    );
    expect(d!.content).not.toContain('Later thing');
    expect(d!.content).not.toContain('Old but done');
    // The channel chose only the daily events: no line for the tasks created above.
    expect(await linesIn(ann, digest, '🆕')).toEqual([]);
    await jobsSettled(srv, clock, bot); // every job due so far has finished: nothing more comes of them
    expect(await linesIn(ann, digest, '📅')).toHaveLength(1);
    // The next check is scheduled for tomorrow.
    expect((await answer(ann.api, '/tasknotify list', { channel_id: digest })).content).toContain(
      `daily check ${hhmm} (UTC)`,
    );
  });
});
