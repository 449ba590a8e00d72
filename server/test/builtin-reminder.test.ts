import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../src/runtime/clock.js';
import { expectStatus } from './helpers/client.js';
import { moveClockTo } from './helpers/platform-bots.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The tasks bot's morning reminder (docs/BUILTIN-BOTS.md): `/task remind HH:MM [zone]` schedules a DM
 * of the user's open tasks through the durable scheduler. The reminder is set for the next minute of
 * the server's test clock (server/src/runtime/clock.ts), which the test then moves there.
 */
describe('tasks bot: morning reminder', () => {
  let srv: TestServer;
  let w: World;
  let ann: UserHandle;
  let topicId: string;
  let tasksBotId: string;
  const clock = new TestClock();

  beforeAll(async () => {
    srv = await startTestServer({}, { clock });
    w = await World.create(srv.url);
    const org = await w.org();
    ann = await w.user({ organization_id: org.id });
    topicId = (await w.project(ann.api)).topicId;
    const bots = expectStatus(await ann.api.get('/api/bots'), 200).items as any[];
    tasksBotId = bots.find((b) => b.builtin === 'tasks' && b.org_id === org.id).id;
  });
  afterAll(() => srv.close());

  const remind = async (args: string) =>
    expectStatus(await ann.api.post('/api/commands/execute', { text: `/task remind ${args}`.trim() }), 202)
      .reply.content as string;

  it('refuses a bad time or zone, shows and clears the setting', async () => {
    expect(await remind('25:00')).toMatch(/HH:MM/);
    expect(await remind('08:00 Mars/Olympus')).toMatch(/not a time zone/);
    expect(await remind('')).toMatch(/No morning reminder/);
    const set = await remind('08:30 Europe/Berlin workdays');
    expect(set).toMatch(/Every workday at 08:30 \(Europe\/Berlin\)/);
    // The first occurrence is a workday at 08:30 Berlin time.
    const first = new Date(/the first at (\S+)\./.exec(set)![1]!);
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(first);
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 08:30$/);
    expect(first.getTime()).toBeGreaterThan(clock.now());
    expect(await remind('')).toMatch(/08:30 Europe\/Berlin, Monday to Friday/);
    expect(await remind('off')).toMatch(/off/);
    expect(await remind('')).toMatch(/No morning reminder/);
  });

  it('DMs the open tasks at the time set', async () => {
    expectStatus(
      await ann.api.post('/api/commands/execute', {
        text: '/task add Water the plants @me',
        topic_id: topicId,
      }),
      202,
    );
    expectStatus(
      await ann.api.post('/api/commands/execute', {
        text: '/task add Already finished @me',
        topic_id: topicId,
      }),
      202,
    );
    const tasks = expectStatus(await ann.api.get(`/api/topics/${topicId}/tasks`), 200).items as any[];
    const finished = tasks.find((t) => t.title === 'Already finished');
    expectStatus(await ann.api.patch(`/api/tasks/${finished.id}`, { status: 'done' }), 200);
    // The next whole minute in UTC (at least 2 s ahead, so that it is still to come when scheduled).
    const at = new Date(Math.ceil((clock.now() + 2000) / 60_000) * 60_000);
    const hhmm = at.toISOString().slice(11, 16);
    expect(await remind(`${hhmm} UTC`)).toContain(at.toISOString());
    const reminderDm = async () => {
      const rooms = expectStatus(await ann.api.get('/api/dm-rooms'), 200).items as any[];
      const room = rooms.find((r) => r.members.some((m: any) => m.type === 'bot' && m.id === tasksBotId));
      if (!room) return undefined;
      const msgs = expectStatus(await ann.api.get(`/api/dm-rooms/${room.id}/messages`), 200).items as any[];
      return msgs.find((m) => m.bot_id === tasksBotId);
    };
    await moveClockTo(srv, clock, at.getTime());
    await expect.poll(reminderDm, { timeout: 20_000 }).toBeDefined();
    const dm = (await reminderDm())!;
    expect(dm.content).toContain('Water the plants');
    expect(dm.content).not.toContain('Already finished');
    expect(Date.parse(dm.created_at)).toBeGreaterThanOrEqual(at.getTime());
  });
});
