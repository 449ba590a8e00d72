import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectStatus } from '../../../server/test/helpers/client.js';
import { startTestServer, type TestServer } from '../../../server/test/helpers/server.js';
import { World, type UserHandle } from '../../../server/test/helpers/world.js';
import {
  WebhookReceiver,
  WorkroomClient,
  WorkroomError,
  type ActionInvokedData,
  type MessageActionInput,
  type WebhookEvent,
} from '../src/index.js';

/**
 * Interactive message actions through the SDK (docs/ACTIONS.md), against a real server: the client
 * sends a message with buttons and a select, a user's click reaches the receiver's typed
 * `action(...)` / `on('action.invoked')` handlers, and the handler's `updateMessage` replaces the
 * actions (kept when omitted, removed with null).
 */
describe('message actions with the SDK', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle;
  let user: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer({
      WORKROOM_WEBHOOK_ALLOWED_RANGES: '127.0.0.0/8',
      WORKROOM_WEBHOOK_RETRY_DELAYS: '200ms,200ms',
      WORKROOM_WEBHOOK_TIMEOUT: '2s',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    admin = org.admin;
    user = await w.user({ display_name: 'Una User' }, org.admin.api);
  });
  afterAll(() => srv.close());

  const ACTIONS: MessageActionInput[] = [
    { type: 'button', id: 'approve', label: 'Approve', value: 'yes', style: 'primary' },
    { type: 'button', id: 'reject', label: 'Reject', value: 'no' },
    {
      type: 'select',
      id: 'size',
      placeholder: 'Size',
      options: [
        { label: 'S', value: 's' },
        { label: 'L', value: 'l' },
      ],
    },
  ];

  it('sends actions, receives typed clicks and updates the message from the handler', async () => {
    // No event subscription: clicks reach the bot that sent the message all the same.
    const bot = await w.bot(admin.api, {}, { webhook_url: 'http://127.0.0.1:9/webhook' });
    const { secret } = expectStatus(await admin.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    const channelId = await w.channel(admin.api);
    for (const body of [{ bot_id: bot.id }, { user_id: user.id }])
      expectStatus(await admin.api.post(`/api/channels/${channelId}/members`, body), 201);
    const client = new WorkroomClient({ baseUrl: srv.url, apiKey: bot.key, botId: bot.id });
    const receiver = new WebhookReceiver({ port: 0, host: '127.0.0.1', secret });

    const seen: WebhookEvent<'action.invoked'>[] = [];
    const sizes: ActionInvokedData[] = [];
    receiver.on('action.invoked', (e) => void seen.push(e));
    receiver.action('size', (a) => void sizes.push(a));
    receiver.action(['approve', 'reject'], async (a) => {
      // Typed: the clicking user's name, the message, the value.
      const who: string = a.user.display_name;
      await client.updateMessage(a.message_id, {
        content: `${a.value === 'yes' ? 'Approved' : 'Rejected'} by ${who}`,
        actions: [{ type: 'button', id: 'undo', label: 'Undo', value: 'undo' }],
      });
    });
    await receiver.start();
    expectStatus(
      await admin.api.patch(`/api/bots/${bot.id}`, {
        webhook_url: `http://127.0.0.1:${receiver.port}/webhook`,
      }),
      200,
    );
    try {
      const m = await client.sendMessage({ channelId, content: 'Deploy?', actions: ACTIONS });
      expect(m.actions).toEqual([ACTIONS[0], { ...ACTIONS[1], style: 'default' }, ACTIONS[2]]);

      const click = expectStatus(
        await user.api.post(`/api/messages/${m.id}/actions`, { action_id: 'approve' }),
        202,
      );
      const current = async () =>
        (expectStatus(await admin.api.get(`/api/channels/${channelId}/messages`), 200).items as any[]).find(
          (x) => x.id === m.id,
        );
      await vi.waitFor(async () => expect((await current()).content).toBe('Approved by Una User'), {
        timeout: 10_000,
        interval: 100,
      });
      expect((await current()).actions).toEqual([
        { type: 'button', id: 'undo', label: 'Undo', value: 'undo', style: 'default' },
      ]);
      expect(seen[0]).toMatchObject({
        event_type: 'action.invoked',
        bot_id: bot.id,
        data: {
          invocation_id: click.invocation_id,
          action_id: 'approve',
          action_type: 'button',
          value: 'yes',
          user_id: user.id,
          user: { id: user.id, display_name: 'Una User' },
          message_id: m.id,
          channel_id: channelId,
          topic_id: null,
          dm_room_id: null,
        },
      });
      expect(sizes).toHaveLength(0); // the 'size' handler ran for no other action

      // A second message: the select's handler gets the chosen option.
      const poll = await client.sendMessage({ channelId, content: 'Size?', actions: ACTIONS });
      expectStatus(
        await user.api.post(`/api/messages/${poll.id}/actions`, { action_id: 'size', value: 'l' }),
        202,
      );
      await vi.waitFor(() => expect(sizes.map((s) => s.value)).toEqual(['l']), { timeout: 10_000 });
      expect(sizes[0]!.action_type).toBe('select');

      // updateMessage: text only keeps the actions, null removes them.
      const kept = await client.updateMessage(poll.id, { content: 'Size? (still open)' });
      expect(kept.actions).toHaveLength(3);
      const closed = await client.updateMessage(poll.id, { content: 'Size: closed', actions: null });
      expect(closed.actions).toBeNull();

      // The server's refusals arrive as WorkroomError with the field.
      const err = await client
        .sendMessage({ channelId, content: 'x', actions: [ACTIONS[0]!, ACTIONS[0]!] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkroomError);
      expect(err).toMatchObject({ status: 400, code: 'invalid_input', field: 'actions.1.id' });

      // A DM with actions.
      const dm = await client.sendDm({ userId: user.id, content: 'Approve?', actions: [ACTIONS[0]!] });
      expect(dm.actions).toEqual([ACTIONS[0]]);
    } finally {
      await receiver.stop();
    }
  });
});
