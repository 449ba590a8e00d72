import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature, WebhookReceiver } from '../../sdks/typescript/src/index.js';
import { expectStatus } from './helpers/client.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * ed25519 webhook signatures (Standard Webhooks v1a), an option per bot (issue 20, point 5): the
 * management endpoints (bad input, missing permission, another organization), and real deliveries that
 * the Node SDK verifies with the public key alone.
 */
describe('ed25519 (v1a) webhook signatures', () => {
  let srv: TestServer;
  let w: World;
  let owner: UserHandle;
  let rx: Receiver;
  let channel: string;

  beforeAll(async () => {
    rx = await Receiver.start();
    srv = await startTestServer({ WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' });
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  async function bot(url: string) {
    const b = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${b.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: b.id }), 201);
    return b;
  }

  it('issues, shows and removes the key; others are refused (403, 404, 401); bad ids 400', async () => {
    const b = await bot(rx.hook(uniq('k')));
    const path = `/api/bots/${b.id}/webhook-signing-key`;
    expect((await owner.api.get(path)).status).toBe(404);
    const made = expectStatus(await owner.api.post(path), 201);
    expect(made.public_key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(JSON.stringify(made)).not.toMatch(/whsk_/);
    expect(expectStatus(await owner.api.get(path), 200).public_key).toBe(made.public_key);
    // A new key replaces the old one.
    const again = expectStatus(await owner.api.post(path), 201);
    expect(again.public_key).not.toBe(made.public_key);
    const stranger = await w.user({ role: 'member' });
    expect((await stranger.api.post(path)).status).toBe(403);
    expect((await stranger.api.delete(path)).status).toBe(403);
    const other = await w.org();
    expect((await other.admin.api.get(path)).status).toBe(404);
    expect((await w.anon.post(path)).status).toBe(401);
    expect((await owner.api.post('/api/bots/not-a-uuid/webhook-signing-key')).status).toBe(400);
    expectStatus(await owner.api.delete(path), 200);
    expect((await owner.api.delete(path)).status).toBe(404);
  });

  it('deliveries carry v1a beside v1; the SDK verifies them with the public key alone; not after removal', async () => {
    const url = rx.hook(uniq('ed'));
    const b = await bot(url);
    const { public_key: publicKey } = expectStatus(
      await owner.api.post(`/api/bots/${b.id}/webhook-signing-key`),
      201,
    );
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content: 'signed twice' }), 201);
    await expect.poll(() => rx.at(url).length, { timeout: 10_000, interval: 10 }).toBe(1);
    const [got] = rx.at(url);
    expect(got!.headers['webhook-signature']).toMatch(/^v1,\S+ v1a,\S+$/);
    expect(verifySignature(got!.body, got!.headers, '', { publicKey })).toMatchObject({
      ok: true,
      verified: ['ed25519'],
    });
    // A tampered body or another key is refused.
    expect(verifySignature(got!.body.replace('signed', 'forged'), got!.headers, '', { publicKey }).ok).toBe(
      false,
    );
    const other = expectStatus(
      await owner.api.post(`/api/bots/${(await bot(rx.hook(uniq('o')))).id}/webhook-signing-key`),
      201,
    );
    expect(verifySignature(got!.body, got!.headers, '', { publicKey: other.public_key }).ok).toBe(false);

    // Removed: the next delivery has only v1, which a public-key-only receiver refuses.
    expectStatus(await owner.api.delete(`/api/bots/${b.id}/webhook-signing-key`), 200);
    expectStatus(await owner.api.post(`/api/channels/${channel}/messages`, { content: 'hmac only' }), 201);
    await expect.poll(() => rx.at(url).length, { timeout: 10_000, interval: 10 }).toBe(2);
    const second = rx.at(url)[1]!;
    expect(second.headers['webhook-signature']).toMatch(/^v1,\S+$/);
    expect(verifySignature(second.body, second.headers, '', { publicKey }).ok).toBe(false);
  });

  it('a slash command, sent to the bot at once, is signed with v1a too', async () => {
    const url = rx.hook(uniq('cmd'));
    const b = await bot(url);
    const { public_key: publicKey } = expectStatus(
      await owner.api.post(`/api/bots/${b.id}/webhook-signing-key`),
      201,
    );
    const command = uniq('sig').replace('-', '');
    expectStatus(await b.api.post(`/api/bots/${b.id}/commands`, { command, description: 'signed' }), 201);
    const ran = await owner.api.post('/api/commands/execute', {
      text: `/${command} now`,
      channel_id: channel,
    });
    expect(ran.status).toBeLessThan(300);
    await expect.poll(() => rx.at(url).length, { timeout: 10_000, interval: 10 }).toBe(1);
    const [got] = rx.at(url);
    expect(got!.json?.event_type).toBe('command.invoked');
    expect(verifySignature(got!.body, got!.headers, '', { publicKey })).toMatchObject({ ok: true });
  });

  it('the Node SDK receiver with only the public key gets the bot’s events', async () => {
    expect(() => new WebhookReceiver({ port: 0, publicKey: 'whpk_short' })).toThrow(/32 bytes/);
    expect(() => new WebhookReceiver({ port: 0 })).toThrow(/secret \(or publicKey\)/);
    const events: string[] = [];
    const b = await w.bot(owner.api, {}, { events: ['message.created'] });
    const { public_key: publicKey } = expectStatus(
      await owner.api.post(`/api/bots/${b.id}/webhook-signing-key`),
      201,
    );
    const receiver = new WebhookReceiver({ port: 0, publicKey, logger: { error: () => undefined } });
    receiver.on('message.created', (e) => void events.push(e.data.content));
    await receiver.start();
    try {
      const url = `http://127.0.0.1:${receiver.port}/webhook`;
      expectStatus(await owner.api.patch(`/api/bots/${b.id}`, { webhook_url: url }), 200);
      expectStatus(await owner.api.post(`/api/bots/${b.id}/webhook-secret`), 201);
      expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: b.id }), 201);
      expectStatus(
        await owner.api.post(`/api/channels/${channel}/messages`, { content: 'for the key' }),
        201,
      );
      await expect.poll(() => events, { timeout: 10_000, interval: 10 }).toEqual(['for the key']);
      await expect
        .poll(
          async () => expectStatus(await owner.api.get(`/api/bots/${b.id}/deliveries`), 200).items[0]?.state,
          {
            interval: 10,
          },
        )
        .toBe('delivered');
    } finally {
      await receiver.stop();
    }
  });
});
