import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { LiveClient } from './helpers/realtime.js';
import { Receiver, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Interactive message actions (docs/ACTIONS.md) end to end: a bot posts buttons and a select, users
 * click them through POST /api/messages/{id}/actions, the bot's real HTTP receiver gets the signed
 * action.invoked webhook, and the bot's edit reaches GET and the WebSocket.
 */
describe('interactive message actions', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let orgAdmin: UserHandle;
  let ann: UserHandle; // member of the channel
  let bob: UserHandle; // same organization, not in the private channel
  let outsider: UserHandle; // another organization
  let channel: string;
  let bot: BotHandle & { url: string; secret: string };

  const BUTTONS = [
    { type: 'button', id: 'approve', label: 'Approve', value: 'yes', style: 'primary' },
    { type: 'button', id: 'reject', label: 'Reject', value: 'no', style: 'danger' },
    {
      type: 'select',
      id: 'size',
      placeholder: 'Pick a size',
      options: [
        { label: 'Small', value: 's' },
        { label: 'Large', value: 'l' },
      ],
    },
  ];

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({
      WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      WORKROOM_WEBHOOK_RETRY_DELAYS: '200ms,400ms',
      WORKROOM_WEBHOOK_TIMEOUT: '2s',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    ann = await w.user({ display_name: 'Ann Clicker' }, orgAdmin.api);
    bob = await w.user({}, orgAdmin.api);
    outsider = await w.user({}, (await w.org()).admin.api);
    channel = await w.channel(ann.api, { is_private: true });
    bot = await hookedBot(ann, channel, []);
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  /** A bot of `by` whose webhook is on the receiver, with a signing secret, member of `join`. */
  async function hookedBot(
    by: UserHandle,
    join: string | null,
    events: string[],
    key: Record<string, unknown> = {},
  ): Promise<BotHandle & { url: string; secret: string }> {
    const url = rx.hook(uniq('bot'));
    const b = await w.bot(by.api, key, { webhook_url: url, events });
    const secret = expectStatus(await by.api.post(`/api/bots/${b.id}/webhook-secret`), 201).secret as string;
    if (join) expectStatus(await by.api.post(`/api/channels/${join}/members`, { bot_id: b.id }), 201);
    return { ...b, url, secret };
  }

  const sendAs = (who: { api: BotHandle['api'] }, body: Record<string, unknown>, where = channel) =>
    who.api.post(`/api/channels/${where}/messages`, { content: 'Deploy v2?', ...body });

  const botMessage = async (actions: unknown = BUTTONS, by = bot, where = channel) =>
    expectStatus(await sendAs(by, { actions }, where), 201) as { id: string; actions: any[] | null };

  const click = (who: UserHandle, messageId: string, body: Record<string, unknown>, headers = {}) =>
    who.api.post(`/api/messages/${messageId}/actions`, body, { headers });

  const actionEvents = (b: { url: string }) =>
    rx.at(b.url).filter((r) => r.json.event_type === 'action.invoked');
  const waitForAction = async (
    b: { url: string },
    invocationId: string,
    timeout = 5000,
  ): Promise<Received> => {
    await expect
      .poll(() => actionEvents(b).some((r) => r.json.data.invocation_id === invocationId), {
        timeout,
        interval: 20,
      })
      .toBe(true);
    return actionEvents(b).find((r) => r.json.data.invocation_id === invocationId)!;
  };

  function verifySignatures(r: Received, secret: string): void {
    expect(r.headers['x-workroom-signature']).toBe(
      `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`,
    );
    const m = /^(.*),"signature":"(sha256=[0-9a-f]{64})"\}$/s.exec(r.body);
    expect(m).not.toBeNull();
    expect(m![2]).toBe(`sha256=${createHmac('sha256', secret).update(`${m![1]}}`).digest('hex')}`);
    expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
  }

  describe('sending actions', () => {
    const refused = async (actions: unknown, field: string, text: RegExp) => {
      const r = await sendAs(bot, { actions });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('invalid_input');
      expect(r.body.error.field).toBe(field);
      expect(r.body.error.message).toMatch(text);
    };
    const button = (i: number | string, extra: Record<string, unknown> = {}) => ({
      type: 'button',
      id: `b${i}`,
      label: `Button ${i}`,
      value: String(i),
      ...extra,
    });

    it('refuses malformed actions, naming the field', async () => {
      await refused([button(1, { id: 'Bad ID' })], 'actions.0.id', /a-z, 0-9/);
      await refused([button(1, { id: 'x'.repeat(65) })], 'actions.0.id', /1 to 64/);
      await refused([button(1, { id: '' })], 'actions.0.id', /1 to 64/);
      await refused([button(1), button(2), button(1)], 'actions.2.id', /duplicate action id "b1"/);
      await refused(
        Array.from({ length: 11 }, (_, i) => button(i)),
        'actions',
        /at most 10 actions/,
      );
      await refused([button(1, { label: 'x'.repeat(76) })], 'actions.0.label', /at most 75/);
      await refused([button(1, { label: '   ' })], 'actions.0.label', /must not be empty/);
      await refused([button(1, { value: 'v'.repeat(2001) })], 'actions.0.value', /at most 2000/);
      await refused([{ type: 'button', id: 'a', label: 'A' }], 'actions.0.value', /string/);
      await refused([button(1, { style: 'loud' })], 'actions.0.style', /default, primary, danger/);
      await refused([button(1, { onclick: 'x' })], 'actions.0.onclick', /unknown field/);
      await refused([{ type: 'link', id: 'a', label: 'A' }], 'actions.0.type', /"button" or "select"/);
      await refused([{ id: 'a', label: 'A' }], 'actions.0.type', /"button" or "select"/);
      await refused('approve', 'actions', /array/);
      await refused([{ type: 'select', id: 's', options: [] }], 'actions.0.options', /at least 1 option/);
      await refused(
        [
          {
            type: 'select',
            id: 's',
            options: Array.from({ length: 26 }, (_, i) => ({ label: `O${i}`, value: `o${i}` })),
          },
        ],
        'actions.0.options',
        /at most 25 options/,
      );
      await refused(
        [
          {
            type: 'select',
            id: 's',
            options: [
              { label: 'A', value: 'a' },
              { label: 'B', value: 'a' },
            ],
          },
        ],
        'actions.0.options.1.value',
        /duplicate option value "a"/,
      );
      await refused(
        [{ type: 'select', id: 's', options: [{ label: 'A', value: 'v'.repeat(151) }] }],
        'actions.0.options.0.value',
        /at most 150/,
      );
      await refused(
        [{ type: 'select', id: 's', placeholder: 'p'.repeat(151), options: [{ label: 'A', value: 'a' }] }],
        'actions.0.placeholder',
        /at most 150/,
      );
      // Nothing was posted by the refused requests.
      const list = expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200);
      expect(list.items.filter((m: any) => m.actions !== null)).toHaveLength(0);
    });

    it('only bots send actions: a user gets 403 naming the field (no actions is fine)', async () => {
      const r = await sendAs(ann, { actions: [button(1)] });
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'forbidden', field: 'actions' });
      expect(r.body.error.message).toMatch(/only bots/);
      expect(expectStatus(await sendAs(ann, { actions: [] }), 201).actions).toBeNull();
      expect(expectStatus(await sendAs(ann, { actions: null }), 201).actions).toBeNull();
    });

    it('stores, normalizes and shows actions in the answer, GET and message.created', async () => {
      const watcher = await hookedBot(ann, channel, ['message.created']);
      const m = await botMessage([
        { type: 'button', id: 'ok', label: ' OK ', value: '' },
        { type: 'select', id: 'pick', options: [{ label: 'One', value: '1' }] },
      ]);
      const expected = [
        { type: 'button', id: 'ok', label: 'OK', value: '', style: 'default' },
        { type: 'select', id: 'pick', placeholder: null, options: [{ label: 'One', value: '1' }] },
      ];
      expect(m.actions).toEqual(expected);
      const list = expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200);
      expect(list.items.find((x: any) => x.id === m.id).actions).toEqual(expected);
      await expect
        .poll(() => rx.at(watcher.url).find((r) => r.json.data?.message_id === m.id)?.json.data.actions, {
          timeout: 5000,
          interval: 20,
        })
        .toEqual(expected);
      // [] is "no actions", stored as null.
      expect((await botMessage([])).actions).toBeNull();
      expect((await botMessage(null)).actions).toBeNull();
      expectStatus(await ann.api.delete(`/api/channels/${channel}/members/bots/${watcher.id}`), 200);
    });

    it('takes actions on a bot DM and on MCP send_message; read_messages shows them', async () => {
      const dm = expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/dm-messages`, {
          user_id: ann.id,
          content: 'Approve?',
          actions: [button('dm')],
        }),
        201,
      );
      expect(dm.actions).toEqual([{ ...button('dm'), style: 'default' }]);

      // The incoming webhook takes the body of sending, actions included (here with the bot's key).
      const incoming = expectStatus(
        await bot.api.post(`/api/webhooks/incoming/${bot.id}`, {
          content: 'Build 1234 failed. Retry?',
          channel_id: channel,
          actions: [button('retry', { label: 'Retry' })],
        }),
        201,
      );
      expect(incoming.actions).toEqual([{ ...button('retry', { label: 'Retry' }), style: 'default' }]);
      const badIncoming = await bot.api.post(`/api/webhooks/incoming/${bot.id}`, {
        content: 'x',
        channel_id: channel,
        actions: [button('x', { style: 'loud' })],
      });
      expect(badIncoming.status).toBe(400);
      expect(badIncoming.body.error.field).toBe('actions.0.style');

      const sid = await rawSession(srv.url, bot.key);
      const call = async (name: string, args: unknown) =>
        (
          await rawMcp(srv.url, {
            key: bot.key,
            session: sid,
            body: { jsonrpc: '2.0', id: uniq('c'), method: 'tools/call', params: { name, arguments: args } },
          })
        ).body;
      const sent = await call('send_message', {
        channel_id: channel,
        content: 'From MCP',
        actions: [button('mcp', { label: 'Ship it' })],
      });
      expect(sent.result.isError, JSON.stringify(sent)).toBeUndefined();
      const read = await call('read_messages', { channel_id: channel, limit: 5 });
      expect(read.result.content[0].text).toContain('actions: [bmcp] Ship it (button)');
      const bad = await call('send_message', {
        channel_id: channel,
        content: 'x',
        actions: [button(1), button(1)],
      });
      expect(bad.error.code).toBe(-32602);
      expect(bad.error.message).toMatch(/duplicate action id/);
    });

    it('the web-facing OpenAPI document describes actions and the click endpoint', async () => {
      const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
      const send = doc.paths['/api/channels/{channelId}/messages'].post;
      expect(send.requestBody.content['application/json'].schema.properties.actions).toBeDefined();
      const invoke = doc.paths['/api/messages/{id}/actions'].post;
      expect(invoke['x-callers']).toEqual(['user']);
      expect(invoke.responses['202']).toBeDefined();
      expect(doc.webhooks['action.invoked']).toBeDefined();
    });
  });

  describe('clicking', () => {
    it('a member clicks a button: 202, and the bot receives a signed action.invoked (no subscription needed)', async () => {
      // Another bot in the channel, subscribed to everything, must not get the click.
      const bystander = await hookedBot(ann, channel, [
        'message.created',
        'message.updated',
        'message.deleted',
        'member.joined',
        'member.left',
      ]);
      const m = await botMessage();
      const r = expectStatus(await click(ann, m.id, { action_id: 'approve' }), 202);
      expect(r).toMatchObject({
        status: 'sent',
        message_id: m.id,
        action_id: 'approve',
        action_type: 'button',
        value: 'yes',
        bot_id: bot.id,
      });
      const got = await waitForAction(bot, r.invocation_id);
      verifySignatures(got, bot.secret);
      expect(got.json.bot_id).toBe(bot.id);
      expect(got.json.data).toEqual({
        invocation_id: r.invocation_id,
        action_id: 'approve',
        action_type: 'button',
        value: 'yes',
        user_id: ann.id,
        user: { id: ann.id, display_name: 'Ann Clicker' },
        message_id: m.id,
        bot_id: bot.id,
        channel_id: channel,
        topic_id: null,
        dm_room_id: null,
        invoked_at: r.invoked_at,
      });
      // The delivery log has it like any other delivery (recorded once the answer came back).
      const logged = async () =>
        (expectStatus(await ann.api.get(`/api/bots/${bot.id}/deliveries`), 200).items as any[]).find(
          (d) => d.event_id === got.json.event_id,
        );
      await expect.poll(async () => (await logged())?.state, { timeout: 5000 }).toBe('delivered');
      expect(await logged()).toMatchObject({ event_type: 'action.invoked', bot_id: bot.id });
      // The bystander got the message.created, never the click.
      await expect
        .poll(() => rx.at(bystander.url).some((x) => x.json.data?.message_id === m.id), { timeout: 5000 })
        .toBe(true);
      expect(rx.at(bystander.url).filter((x) => x.json.event_type === 'action.invoked')).toHaveLength(0);
      expectStatus(await ann.api.delete(`/api/channels/${channel}/members/bots/${bystander.id}`), 200);
    });

    it('a select sends the chosen option; its value must be one of the options', async () => {
      const m = await botMessage();
      const r = expectStatus(await click(ann, m.id, { action_id: 'size', value: 'l' }), 202);
      expect(r.action_type).toBe('select');
      expect((await waitForAction(bot, r.invocation_id)).json.data).toMatchObject({
        action_id: 'size',
        action_type: 'select',
        value: 'l',
      });
      const missing = await click(ann, m.id, { action_id: 'size' });
      expect(missing.status).toBe(400);
      expect(missing.body.error).toMatchObject({ code: 'invalid_input', field: 'value' });
      const notAnOption = await click(ann, m.id, { action_id: 'size', value: 'xl' });
      expect(notAnOption.status).toBe(400);
      expect(notAnOption.body.error.field).toBe('value');
      expect(notAnOption.body.error.message).toMatch(/not one of the options/);
      // A button sends its own value.
      const forged = await click(ann, m.id, { action_id: 'approve', value: 'no' });
      expect(forged.status).toBe(400);
      expect(forged.body.error.field).toBe('value');
      expectStatus(await click(ann, m.id, { action_id: 'approve', value: 'yes' }), 202);
    });

    it('refuses bad input, unknown actions and messages without actions with 400', async () => {
      const m = await botMessage();
      const cases: [Record<string, unknown>, string][] = [
        [{}, 'action_id'],
        [{ action_id: 'Nope!' }, 'action_id'],
        [{ action_id: 'approve', value: 7 }, 'value'],
        [{ action_id: 'approve', value: 'x'.repeat(2001) }, 'value'],
        [{ action_id: 'approve', extra: true }, 'extra'],
        [{ action_id: 'missing' }, 'action_id'],
      ];
      for (const [body, field] of cases) {
        const r = await click(ann, m.id, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error.field, JSON.stringify(body)).toBe(field);
      }
      const unknown = await click(ann, m.id, { action_id: 'missing' });
      expect(unknown.body.error.message).toMatch(/no action "missing"/);
      const bad = await ann.api.post('/api/messages/not-a-uuid/actions', { action_id: 'approve' });
      expect(bad.status).toBe(400);
      // A user's message, and a bot message without actions.
      const plain = expectStatus(await sendAs(ann, {}), 201);
      expect((await click(ann, plain.id, { action_id: 'approve' })).body.error.message).toMatch(/no actions/);
      const noActions = await botMessage(null);
      expect((await click(ann, noActions.id, { action_id: 'approve' })).status).toBe(400);
    });

    it('answers 404 to whoever cannot see the message, and sends nothing', async () => {
      const m = await botMessage();
      const before = actionEvents(bot).length;
      for (const who of [bob, outsider]) {
        const r = await click(who, m.id, { action_id: 'approve' });
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe('not_found');
      }
      // Not even the system admin of another organization clicks here (org admins see every channel
      // of their own organization, so they may).
      expect((await click(w.admin, m.id, { action_id: 'approve' })).status).toBe(404);
      const unknown = await click(ann, '00000000-0000-4000-8000-000000000000', { action_id: 'approve' });
      expect(unknown.status).toBe(404);
      // Bots do not click: 403.
      const asBot = await bot.api.post(`/api/messages/${m.id}/actions`, { action_id: 'approve' });
      expect(asBot.status).toBe(403);
      expect(asBot.body.error.message).toMatch(/user token/);
      expect((await w.anon.post(`/api/messages/${m.id}/actions`, { action_id: 'approve' })).status).toBe(401);
      // A later click of ann arrives, and nothing from the refused ones came before it.
      const ok = expectStatus(await click(ann, m.id, { action_id: 'reject' }), 202);
      await waitForAction(bot, ok.invocation_id);
      expect(actionEvents(bot).length).toBe(before + 1);
    });

    it('a deleted message answers 404', async () => {
      const m = await botMessage();
      expectStatus(await bot.api.delete(`/api/messages/${m.id}`), 200);
      const r = await click(ann, m.id, { action_id: 'approve' });
      expect(r.status).toBe(404);
    });

    it('answers 409 when the bot is disabled or no longer a member', async () => {
      const other = await hookedBot(ann, channel, []);
      const m = await botMessage(BUTTONS, other);
      expectStatus(await ann.api.patch(`/api/bots/${other.id}`, { status: 'disabled' }), 200);
      const off = await click(ann, m.id, { action_id: 'approve' });
      expect(off.status).toBe(409);
      expect(off.body.error).toMatchObject({ code: 'conflict' });
      expect(off.body.error.message).toMatch(/disabled/);
      expectStatus(await ann.api.patch(`/api/bots/${other.id}`, { status: 'active' }), 200);
      expectStatus(await ann.api.delete(`/api/channels/${channel}/members/bots/${other.id}`), 200);
      const gone = await click(ann, m.id, { action_id: 'approve' });
      expect(gone.status).toBe(409);
      expect(gone.body.error.message).toMatch(/no longer a member/);
      expect(actionEvents(other)).toHaveLength(0);
    });

    it('an Idempotency-Key makes a retried click one event', async () => {
      const m = await botMessage();
      const key = uniq('click');
      const first = await click(ann, m.id, { action_id: 'approve' }, { 'idempotency-key': key });
      expect(first.status).toBe(202);
      const again = await click(ann, m.id, { action_id: 'approve' }, { 'idempotency-key': key });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      const other = await click(ann, m.id, { action_id: 'reject' }, { 'idempotency-key': key });
      expect(other.status).toBe(409);
      expect(other.body.error.code).toBe('idempotency_conflict');
      // Exactly one event: the next click (without a key) arrives, and only one of the keyed one.
      const next = expectStatus(await click(ann, m.id, { action_id: 'reject' }), 202);
      await waitForAction(bot, next.invocation_id);
      await waitForAction(bot, first.body.invocation_id);
      expect(actionEvents(bot).filter((r) => r.json.data.message_id === m.id)).toHaveLength(2);
    });

    it('works in a project topic and in a bot DM (the container is in the event)', async () => {
      const { projectId, topicId } = await w.project(ann.api);
      expectStatus(await ann.api.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
      const inTopic = expectStatus(
        await bot.api.post(`/api/topics/${topicId}/messages`, { content: 'Topic poll', actions: BUTTONS }),
        201,
      );
      const t = expectStatus(await click(ann, inTopic.id, { action_id: 'approve' }), 202);
      expect((await waitForAction(bot, t.invocation_id)).json.data).toMatchObject({
        topic_id: topicId,
        channel_id: null,
        dm_room_id: null,
      });
      // Bob is not in the project.
      expect((await click(bob, inTopic.id, { action_id: 'approve' })).status).toBe(404);

      const dm = expectStatus(
        await bot.api.post(`/api/bots/${bot.id}/dm-messages`, {
          user_id: bob.id,
          content: 'Hi',
          actions: BUTTONS,
        }),
        201,
      );
      const d = expectStatus(await click(bob, dm.id, { action_id: 'size', value: 's' }), 202);
      expect((await waitForAction(bot, d.invocation_id)).json.data).toMatchObject({
        dm_room_id: dm.dm_room_id,
        user_id: bob.id,
        value: 's',
      });
      // Ann is not in that DM room.
      expect((await click(ann, dm.id, { action_id: 'approve' })).status).toBe(404);
    });
  });

  describe('the bot updates its message', () => {
    it('replaces the actions (seen in GET and live over the WebSocket), keeps them when omitted, removes them with null', async () => {
      const m = await botMessage();
      const live = await LiveClient.connect(srv.url, ann.token);
      try {
        // The flow of a real bot: the click arrives at its receiver, the bot edits its message.
        const c = expectStatus(await click(ann, m.id, { action_id: 'approve' }), 202);
        const got = await waitForAction(bot, c.invocation_id);
        const tally = [
          { type: 'button', id: 'approve', label: 'Approve (1)', value: 'yes', style: 'primary' },
        ];
        const edited = expectStatus(
          await bot.api.put(`/api/messages/${got.json.data.message_id}`, {
            content: `Approved by ${got.json.data.user.display_name}`,
            actions: tally,
          }),
          200,
        );
        expect(edited.actions).toEqual(tally);
        const pushed = await live.waitFor(
          (x) =>
            x.type === 'event' &&
            x.event.event_type === 'message.updated' &&
            x.event.data.message_id === m.id,
        );
        expect(pushed.event.data).toMatchObject({ content: 'Approved by Ann Clicker', actions: tally });
        // The click itself is never pushed to users.
        expect(live.events.filter((x) => x.event.event_type === 'action.invoked')).toHaveLength(0);

        const get = async () =>
          (expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200).items as any[]).find(
            (x) => x.id === m.id,
          );
        expect((await get()).actions).toEqual(tally);
        // The old "reject" button is gone: clicking it is refused.
        expect((await click(ann, m.id, { action_id: 'reject' })).status).toBe(400);

        // A text-only edit keeps the actions.
        expectStatus(await bot.api.put(`/api/messages/${m.id}`, { content: 'Still open' }), 200);
        expect((await get()).actions).toEqual(tally);
        // null (or []) removes them; the message then has no actions to click.
        const cleared = expectStatus(
          await bot.api.put(`/api/messages/${m.id}`, { content: 'Closed', actions: null }),
          200,
        );
        expect(cleared.actions).toBeNull();
        await live.waitFor(
          (x) =>
            x.type === 'event' &&
            x.event.event_type === 'message.updated' &&
            x.event.data.message_id === m.id &&
            x.event.data.actions === null,
        );
        expect((await click(ann, m.id, { action_id: 'approve' })).status).toBe(400);
        expectStatus(
          await bot.api.put(`/api/messages/${m.id}`, { content: 'Reopened', actions: BUTTONS }),
          200,
        );
        expectStatus(await bot.api.put(`/api/messages/${m.id}`, { content: 'Closed', actions: [] }), 200);
        expect((await get()).actions).toBeNull();
      } finally {
        await live.close();
      }
    });

    it('refuses invalid actions, a key without messages:write, other bots and users', async () => {
      const m = await botMessage();
      const dup = await bot.api.put(`/api/messages/${m.id}`, {
        content: 'x',
        actions: [BUTTONS[0], BUTTONS[0]],
      });
      expect(dup.status).toBe(400);
      expect(dup.body.error.field).toBe('actions.1.id');

      const readOnly = expectStatus(
        await ann.api.post(`/api/bots/${bot.id}/api-keys`, { scopes: ['messages:read'] }),
        201,
      );
      const noScope = await w.anon.put(
        `/api/messages/${m.id}`,
        { content: 'x', actions: null },
        { token: readOnly.key },
      );
      expect(noScope.status).toBe(403);
      expect(noScope.body.error.code).toBe('insufficient_scope');

      const otherBot = await hookedBot(ann, channel, []);
      const notOwn = await otherBot.api.put(`/api/messages/${m.id}`, { content: 'x', actions: null });
      expect(notOwn.status).toBe(403);

      // A user cannot put actions on a message, not even on their own.
      const own = expectStatus(await sendAs(ann, {}), 201);
      const userActions = await ann.api.put(`/api/messages/${own.id}`, {
        content: 'x',
        actions: [BUTTONS[0]],
      });
      expect(userActions.status).toBe(403);
      expect(userActions.body.error.field).toBe('actions');
      expectStatus(await ann.api.put(`/api/messages/${own.id}`, { content: 'x', actions: null }), 200);

      // Nothing changed on the bot's message.
      const list = expectStatus(await ann.api.get(`/api/channels/${channel}/messages`), 200).items as any[];
      expect(list.find((x) => x.id === m.id).actions).toHaveLength(3);
      // Bots cannot subscribe to action.invoked: it is always sent to the message's bot.
      const sub = await ann.api.patch(`/api/bots/${bot.id}`, { events: ['action.invoked'] });
      expect(sub.status).toBe(400);
    });
  });
});

describe('message actions: rate limit', () => {
  let srv: TestServer;
  afterAll(() => srv?.close());

  it('clicks share the user rate limit (429 with Retry-After)', async () => {
    srv = await startTestServer({
      WORKROOM_RATE_LIMIT_USER_PER_SECOND: '1',
      WORKROOM_RATE_LIMIT_USER_BURST: '20',
    });
    const w = await World.create(srv.url);
    const user = await w.user({ role: 'member' });
    const channel = await w.channel(user.api);
    const bot = await w.bot(user.api);
    expectStatus(await user.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const m = expectStatus(
      await bot.api.post(`/api/channels/${channel}/messages`, {
        content: 'Vote',
        actions: [{ type: 'button', id: 'yes', label: 'Yes', value: 'y' }],
      }),
      201,
    );
    const statuses: number[] = [];
    let limited;
    for (let i = 0; i < 25 && !limited; i++) {
      const r = await user.api.post(`/api/messages/${m.id}/actions`, { action_id: 'yes' });
      statuses.push(r.status);
      if (r.status === 429) limited = r;
    }
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThan(5);
    expect(limited?.body.error.code).toBe('rate_limited');
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
