import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CATALOGUE, EVENT_TYPES, isEventType, type EventType } from '../src/domain/events.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { expectStatus } from './helpers/client.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * Every event an operation emits matches its type's schema in the event catalogue (as Zulip's
 * `verify_action` checks its events): operations run through the real HTTP API, then every event they
 * wrote is read back from the outbox and parsed with the catalogue's schema, which must give back the
 * data unchanged (a key the schema does not know would be dropped by the parse, so a producer that
 * emits more than the catalogue says fails here too). Every event type of the catalogue must have been
 * emitted and checked.
 */

/** Event types that no operation writes to the outbox, with why, and where they are checked instead. */
const NOT_IN_OUTBOX: Partial<Record<EventType, string>> = {
  'webhook.test':
    'a webhook test is a delivery row of its own (POST /api/bots/{botId}/webhook/test), never an outbox ' +
    'event: checked here in the body the receiver got',
};

describe('emitted events match the catalogue', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let owner: UserHandle;

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  it('every operation that emits: each event read back from the outbox matches its schema; every type covered', async () => {
    const stores = srv.app.services.storage.stores;
    const startSeq = (await stores.events.listAfter(0, 1_000_000)).at(-1)?.seq ?? 0;
    const bob = await w.user({ role: 'member' });

    // Channels and their members: member.joined (users, a bot), channel.updated, member.left.
    const channel = await w.channel(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { user_id: bob.id }), 201);
    const url = rx.hook(uniq('bot'));
    const bot = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    expectStatus(await owner.api.patch(`/api/channels/${channel}`, { description: 'about' }), 200);
    expectStatus(await owner.api.delete(`/api/channels/${channel}/members/users/${bob.id}`), 200);

    // Messages: created, updated, deleted; a read marker.
    const post = async (content: string, by = owner.api) =>
      expectStatus(await by.post(`/api/channels/${channel}/messages`, { content }), 201) as { id: string };
    const m = await post('first');
    expectStatus(await owner.api.put(`/api/messages/${m.id}`, { content: 'first, edited' }), 200);
    expectStatus(await owner.api.delete(`/api/messages/${m.id}`), 200);
    const kept = await post('kept');
    // Reactions: added, removed.
    expectStatus(await owner.api.post(`/api/messages/${kept.id}/reactions`, { emoji: '👍' }), 200);
    expectStatus(
      await owner.api.delete(`/api/messages/${kept.id}/reactions/${encodeURIComponent('👍')}`),
      200,
    );
    expectStatus(await bob.api.post(`/api/channels/${channel}/read`, { message_id: kept.id }), 200);
    expectStatus(await owner.api.post(`/api/channels/${channel}/read`, { message_id: kept.id }), 200);

    // Tasks: created, status changed, assigned (a project with a topic; project membership).
    const { projectId, topicId } = await w.project(owner.api);
    expectStatus(await owner.api.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    const task = expectStatus(await owner.api.post(`/api/topics/${topicId}/tasks`, { title: 'T' }), 201) as {
      id: string;
    };
    expectStatus(await owner.api.patch(`/api/tasks/${task.id}`, { status: 'in_progress' }), 200);
    expectStatus(await owner.api.patch(`/api/tasks/${task.id}`, { assignee_id: owner.id }), 200);

    // Structure: project and topic renamed and archived (created above), a channel archived.
    expectStatus(await owner.api.patch(`/api/projects/${projectId}`, { name: uniq('renamed') }), 200);
    expectStatus(await owner.api.patch(`/api/topics/${topicId}`, { name: 'renamed' }), 200);
    const spare = await w.channel(owner.api);
    expectStatus(await owner.api.post(`/api/channels/${spare}/archive`), 200);
    const other = await w.project(owner.api);
    expectStatus(await owner.api.post(`/api/topics/${other.topicId}/archive`), 200);
    expectStatus(await owner.api.post(`/api/projects/${other.projectId}/archive`), 200);

    // A slash command of the bot (command.invoked), a click on its message's button (action.invoked),
    // a job it scheduled (job.due), a webhook test (webhook.test, not in the outbox).
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, { command: 'emit', description: 'e' }),
      201,
    );
    expectStatus(
      await owner.api.post('/api/commands/execute', { text: '/emit now', channel_id: channel }),
      202,
    );
    const withButton = expectStatus(
      await bot.api.post(`/api/channels/${channel}/messages`, {
        content: 'Click',
        actions: [{ type: 'button', id: 'b1', label: 'One', value: '1' }],
      }),
      201,
    ) as { id: string };
    expectStatus(await owner.api.post(`/api/messages/${withButton.id}/actions`, { action_id: 'b1' }), 202);
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/jobs`, { kind: 'emit.test', run_at: new Date().toISOString() }),
      201,
    );
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook/test`), 202);

    // A call held for approval (pending_action.created), rejected (pending_action.resolved to the bot).
    const held = expectStatus(
      await owner.api.post(`/api/bots/${bot.id}/api-keys`, { grants: { approval: ['send_message'] } }),
      201,
    );
    const pending = expectStatus(
      await w.anon.as(held.key).post(`/api/channels/${channel}/messages`, { content: 'held' }),
      202,
    );
    expectStatus(await owner.api.post(`/api/pending-actions/${pending.pending_action.id}/reject`), 200);

    // An MCP session ended with DELETE (mcp.session_ended, for the other instances).
    const session = (await rawSession(srv.url, bot.key))!;
    expect((await rawMcp(srv.url, { key: bot.key, session, method: 'DELETE' })).status).toBe(204);

    // A bot whose endpoint answers 410 is turned off and its owner notified (notification.created).
    const goneUrl = rx.hook(uniq('gone'), () => ({ status: 410 }));
    const gone = await w.bot(owner.api, {}, { webhook_url: goneUrl, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${gone.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: gone.id }), 201);
    await post('to the gone bot');

    // Read back: wait until every type expected in the outbox is there (job.due and notification.created
    // come from the scheduler and the delivery worker, after the requests answered).
    const inOutbox = EVENT_TYPES.filter((t) => !(t in NOT_IN_OUTBOX));
    let rows: Awaited<ReturnType<typeof stores.events.listAfter>> = [];
    await expect
      .poll(
        async () => {
          rows = await stores.events.listAfter(startSeq, 1_000_000);
          return inOutbox.filter((t) => !rows.some((r) => r.type === t));
        },
        { timeout: 20_000, interval: 50 },
      )
      .toEqual([]);

    const checked = new Map<string, number>();
    for (const r of rows) {
      expect(isEventType(r.type), `unknown type ${r.type}`).toBe(true);
      if (!isEventType(r.type)) continue;
      const raw: unknown = JSON.parse(r.data);
      const parsed = EVENT_CATALOGUE[r.type].data.safeParse(raw);
      expect(parsed.success ? null : parsed.error.issues, `${r.type} ${r.data}`).toBeNull();
      // Nothing dropped or added by the parse: the schema names every key the producer wrote.
      expect(parsed.data, r.type).toEqual(raw);
      checked.set(r.type, (checked.get(r.type) ?? 0) + 1);
    }

    // The ones not in the outbox, in what was delivered; and every delivered body against its schema.
    await expect.poll(() => rx.at(url).some((b) => b.json.event_type === 'webhook.test')).toBe(true);
    // The outcome of the held call reached the bot's webhook, without a subscription.
    await expect
      .poll(() => rx.at(url).find((b) => b.json.event_type === 'pending_action.resolved')?.json.data)
      .toMatchObject({
        pending_action_id: pending.pending_action.id,
        status: 'rejected',
        decided_by: owner.id,
      });
    for (const b of rx.at(url).concat(rx.at(goneUrl))) {
      const type = String(b.json.event_type);
      expect(isEventType(type), type).toBe(true);
      if (!isEventType(type)) continue;
      const parsed = EVENT_CATALOGUE[type].data.safeParse(b.json.data);
      expect(parsed.success ? null : parsed.error.issues, `${type} ${b.body}`).toBeNull();
      expect(parsed.data, type).toEqual(b.json.data);
      if (type in NOT_IN_OUTBOX) checked.set(type, (checked.get(type) ?? 0) + 1);
    }

    // Every event type of the catalogue was emitted by some operation above and checked.
    expect([...checked.keys()].sort()).toEqual([...EVENT_TYPES].sort());
  }, 60_000);
});
