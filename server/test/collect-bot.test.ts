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
 * The collection bot (server/src/bots/collect/, docs/bots/COLLECT.md) end to end through the public
 * API only: `/collect` in a channel, the request by DM to every other member, replies by DM (text and
 * links to files uploaded in the channel), the reminder to those missing, the result to the requester
 * by DM at the deadline (and in the channel with share:channel), close early and cancel, and tenant
 * isolation. On SQLite, and on PostgreSQL with DATABASE_URL. The reminder and the deadline come by
 * moving the server's test clock (server/src/runtime/clock.ts): no real minute passes.
 */

const clock = new TestClock();

let srv: TestServer;
let w: World;
let a: { id: string; admin: UserHandle };
let b: { id: string; admin: UserHandle };
let ann: UserHandle;
let bob: UserHandle;
let cy: UserHandle;
let dee: UserHandle;
let bUser: UserHandle;
let bPeer: UserHandle;
let channel: string;
let other: string;
let bChannel: string;
let bot: string;
let botB: string;
const name = (u: UserHandle) => u.email.split('@')[0]!;

async function upload(u: UserHandle, ch: string, filename: string, text: string): Promise<{ id: string }> {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), filename);
  const res = await fetch(`${srv.url}/api/channels/${ch}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${u.token}` },
    body: form,
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}

beforeAll(async () => {
  srv = await startTestServer({ WORKROOM_SCHEDULER_POLL: '500ms' }, { clock });
  w = await World.create(srv.url);
  a = await w.org();
  b = await w.org();
  const users = await Promise.all([0, 1, 2, 3].map(() => w.user({ organization_id: a.id }, a.admin.api)));
  [ann, bob, cy, dee] = users as [UserHandle, UserHandle, UserHandle, UserHandle];
  channel = await w.channel(ann!.api);
  other = await w.channel(bob!.api);
  for (const u of [bob!, cy!, dee!]) {
    expectStatus(await ann!.api.post(`/api/channels/${channel}/members`, { user_id: u.id }), 201);
  }
  bUser = await w.user({ organization_id: b.id }, b.admin.api);
  bPeer = await w.user({ organization_id: b.id }, b.admin.api);
  bChannel = await w.channel(bUser.api);
  expectStatus(await bUser.api.post(`/api/channels/${bChannel}/members`, { user_id: bPeer.id }), 201);
  bot = await builtinBotId(ann!.api, 'collect');
  botB = await builtinBotId(bUser.api, 'collect');
});

afterAll(async () => {
  await srv?.close();
});

describe('collection bot', () => {
  it('answers bad input and misuse with clear errors, to the invoking user only', async () => {
    for (const [text, error] of [
      ['/collect "Report"', 'Give a deadline'],
      ['/collect due:2h', 'Say what to send'],
      ['/collect "Report" due:someday', 'is not a deadline'],
      ['/collect "Report" due:30s', 'at least a minute ahead'],
      ['/collect "Report" due:40d', 'at most 30 days'],
      ['/collect "Report" due:2h remind:3h', 'before the request itself'],
      ['/collect "Report" due:2h tz:Atlantis/City', 'not an IANA time zone'],
      [`/collect "${'x'.repeat(501)}" due:2h`, 'longer than 500'],
      ['/collect cancel zz', 'takes the reference'],
      ['/collect close 0000aaaa', 'No collection 0000aaaa'],
    ] as const) {
      const r = await answer(ann.api, text, { channel_id: channel });
      expect(r.ephemeral, text).toBe(true);
      expect(r.content, text).toContain('⚠️');
      expect(r.content, text).toContain(error);
    }
    expect((await answer(ann.api, '/collect list', { channel_id: channel })).content).toContain(
      'No collections in this channel',
    );
    const help = await answer(ann.api, '/collect help', { channel_id: channel });
    expect(help.content).toContain('/collect "Send your weekly report" due:friday');
    // Alone in a channel: nobody to ask.
    const alone = await w.channel(ann.api);
    expect((await answer(ann.api, '/collect "x" due:2h', { channel_id: alone })).content).toContain(
      'Nobody else is in this channel',
    );
    // Another organization's channel does not exist for this user.
    expect(
      (await ann.api.post('/api/commands/execute', { text: '/collect list', channel_id: bChannel })).status,
    ).toBe(404);
  });

  it('asks every member by DM, gathers text and files, reminds those missing, and hands the result to the requester at the deadline', async () => {
    const report = await upload(bob, channel, 'weekly.txt', 'Week 47: shipped the importer');
    const elsewhere = await upload(bob, other, 'secret.txt', 'not for this collection');
    const created = await answer(ann.api, '/collect "Send your weekly report" due:1m remind:30s', {
      channel_id: channel,
    });
    expect(created.ephemeral).toBe(false);
    expect(created.content).toContain(`📥 **${name(ann)}** is collecting: “Send your weekly report”`);
    expect(created.content).toContain('Every member of this channel (3) gets the request by DM');
    const t0 = clock.now(); // the deadline is a minute after the command, which came before this
    for (const u of [bob, cy, dee]) await waitForDm(u, bot, 'Send your weekly report', 1, 30_000);
    expect(await dmsFromBot(ann, bot)).toHaveLength(0); // the requester is not asked

    // Bob: text, then a file of the channel; a file of another channel is refused.
    await dmToBot(bob, bot, 'Shipped the importer\nNext: the exporter');
    await waitForDm(bob, bot, '✅ Recorded your reply for “Send your weekly report”');
    await dmToBot(bob, bot, `Attached: /api/files/${elsewhere.id}`);
    await waitForDm(bob, bot, `⚠️ Not added: file ${elsewhere.id.slice(-8)} was not found in #`);
    await dmToBot(bob, bot, `Attached: ${srv.url}/api/files/${report.id}`);
    await waitForDm(bob, bot, '✅ Recorded your reply (1 file)');
    await dmToBot(cy, bot, 'All good this week');
    await waitForDm(cy, bot, '✅ Recorded');

    // The reminder goes to Dee only (30 s before the deadline).
    await moveClockTo(srv, clock, t0 + 30_000);
    await waitForDm(dee, bot, '⏰ Reminder', 1, 20_000);
    await jobsSettled(srv, clock, bot);
    for (const u of [bob, cy])
      expect((await dmsFromBot(u, bot)).some((m) => m.content.includes('⏰'))).toBe(false);

    // At the deadline: the result by DM to Ann, a note in the channel.
    await moveClockTo(srv, clock, t0 + 60_000);
    const [result] = await waitForDm(ann, bot, '📥 **Collection: Send your weekly report**', 1, 20_000);
    expect(Date.parse(result!.created_at)).toBeGreaterThanOrEqual(t0 + 50_000);
    expect(result!.content).toContain(`2 of 3 replied · no reply: **${name(dee)}**`);
    expect(result!.content).toContain(
      `**${name(bob)}**\n> Shipped the importer\n> Next: the exporter\n> Attached: ${srv.url}/api/files/${report.id}\n> 📎 [weekly.txt](/api/files/${report.id})`,
    );
    expect(result!.content).toContain(`**${name(cy)}**\n> All good this week`);
    expect(result!.content).not.toContain('secret.txt');
    const note = await waitFor('the note', async () =>
      (await channelMessages(ann.api, channel)).find((m) => m.content.includes('has closed: 2 of 3 replied')),
    );
    expect(note.content).toContain(`The result went to ${name(ann)} by DM`);
    // Ann can download the file the result links to.
    expect((await ann.api.get(`/api/files/${report.id}`)).status).toBe(200);

    // Too late: nothing waits for Dee any more.
    await dmToBot(dee, bot, 'Sorry!');
    await waitForDm(dee, bot, 'No request of the collection bot is waiting');
    await jobsSettled(srv, clock, bot); // every job due so far has finished: nothing more comes of them
    expect((await dmsFromBot(ann, bot)).filter((m) => m.content.includes('📥 **Collection'))).toHaveLength(1);
    expect((await answer(ann.api, '/collect list', { channel_id: channel })).content).toContain('— closed');
  });

  it('closes early into the channel with share:channel; cancel is the requester’s; replies go to the oldest open request', async () => {
    const one = await answer(ann.api, '/collect "Slides for Friday" due:2h share:channel', {
      channel_id: channel,
    });
    const ref = /Ref `([0-9a-f]{8})`/.exec(one.content)![1]!;
    const two = await answer(ann.api, '/collect "Holiday dates" due:3h', { channel_id: channel });
    const ref2 = /Ref `([0-9a-f]{8})`/.exec(two.content)![1]!;
    await waitForDm(bob, bot, 'Holiday dates');
    await dmToBot(bob, bot, 'slides.pdf soon');
    const [ack] = await waitForDm(bob, bot, '✅ Recorded your reply for “Slides for Friday”');
    expect(ack!.content).toContain('Your next message answers the next request: “Holiday dates”');
    await dmToBot(bob, bot, 'Dec 22 to Jan 2');
    await waitForDm(bob, bot, '✅ Recorded your reply for “Holiday dates”');
    const list = await answer(bob.api, '/collect list', { channel_id: channel });
    expect(list.content).toContain(`\`${ref}\` “Slides for Friday”`);
    // Only the requester (or an org admin) closes or cancels.
    expect((await answer(bob.api, `/collect close ${ref}`, { channel_id: channel })).content).toContain(
      'Only the member who started a collection',
    );
    expect((await answer(ann.api, `/collect close ${ref}`, { channel_id: channel })).content).toContain(
      'Closing',
    );
    const posted = await waitFor('the result in the channel', async () =>
      (await channelMessages(ann.api, channel)).find((m) =>
        m.content.startsWith('📥 **Collection: Slides for Friday**'),
      ),
    );
    expect(posted.content).toContain(`1 of 3 replied`);
    expect(posted.content).toContain(`**${name(bob)}**\n> slides.pdf soon`);
    await waitForDm(ann, bot, '📥 **Collection: Slides for Friday**');
    expect((await answer(bob.api, `/collect cancel ${ref2}`, { channel_id: channel })).content).toContain(
      'Only the member who started a collection',
    );
    const c = await answer(ann.api, `/collect cancel ${ref2}`, { channel_id: channel });
    expect(c.content).toContain('🚫 The collection “Holiday dates”');
    expect((await answer(ann.api, `/collect cancel ${ref2}`, { channel_id: channel })).content).toContain(
      'is cancelled already',
    );
    await dmToBot(cy, bot, 'dates?');
    await waitForDm(cy, bot, 'No request of the collection bot is waiting');
  });

  it('never mixes organizations: another organization’s file is not found, its collections are its own', async () => {
    const aFile = await upload(ann, channel, 'a-only.txt', 'org A data');
    expect(botB).not.toBe(bot);
    await answer(bUser.api, '/collect "B report" due:2h', { channel_id: bChannel });
    const list = await answer(bUser.api, '/collect list', { channel_id: bChannel });
    expect(list.content).toContain('B report');
    expect(list.content).not.toContain('Slides');
    expect((await answer(bUser.api, '/collect close 00000000', { channel_id: bChannel })).content).toContain(
      'No collection 00000000',
    );
    await waitForDm(bPeer, botB, 'B report');
    // B's member links A's file in the reply: B's bot cannot see it (not found), nothing is added.
    await dmToBot(bPeer, botB, `mine: /api/files/${aFile.id}`);
    await waitForDm(bPeer, botB, `⚠️ Not added: file ${aFile.id.slice(-8)} was not found`);
    for (const u of [ann, bob, cy, dee]) expect(await dmsFromBot(u, botB)).toHaveLength(0);
    expect(await dmsFromBot(bPeer, bot)).toHaveLength(0);
  });
});
