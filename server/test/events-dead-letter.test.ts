import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type UserHandle } from './helpers/world.js';

/**
 * The outbox reader parses every row with the event catalogue's schema on read (events/outbox-reader.ts
 * "Dead letters"): rows that fail are logged (id and type, never the values), recorded in
 * `event_dead_letters` and handed to no consumer, and the consumers (webhook fan-out, live hub, its
 * replay) read on past them. Real bad rows are written into the outbox, then a real message after them.
 */
describe('outbox dead letters', () => {
  let srv: TestServer;
  let w: World;
  let rx: Receiver;
  let owner: UserHandle;
  let orgId: string;
  let channel: string;
  const logLines: Record<string, unknown>[] = [];
  const SECRET = `https://example.test/api/commands/responses/${uniq('SECRET-TOKEN')}`;

  beforeAll(async () => {
    rx = await Receiver.start();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line.trim()) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    srv = await startTestServer(
      { WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' },
      { logger: pino({ level: 'error' }, sink) },
    );
    w = await World.create(srv.url);
    owner = await w.user({ role: 'member' });
    orgId = expectStatus(await owner.api.get('/api/auth/me'), 200).org_id as string;
    channel = await w.channel(owner.api);
  });
  afterAll(async () => {
    await srv?.close();
    await rx?.close();
  });

  it('logs and dead-letters rows that fail their schema; webhooks, live updates and replays read past them', async () => {
    const url = rx.hook(uniq('bot'));
    const bot = await w.bot(owner.api, {}, { webhook_url: url, events: ['message.created'] });
    expectStatus(await owner.api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(await owner.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    const live = await LiveClient.connect(srv.url, owner.token);
    const from = live.lastSeq;

    // Three bad rows: data missing fields (with a secret among what is there), text that is not JSON,
    // and a type the catalogue does not know. Written as an operation would, in one transaction.
    const bad = [
      {
        id: randomUUID(),
        type: 'command.invoked',
        data: JSON.stringify({ invocation_id: randomUUID(), response_url: SECRET, channel_id: channel }),
      },
      {
        id: randomUUID(),
        type: 'message.created',
        data: `{"message_id": "${randomUUID()}", "channel_id": "${channel}", "content": `,
      },
      { id: randomUUID(), type: 'message.exploded', data: JSON.stringify({ channel_id: channel }) },
    ];
    const now = new Date().toISOString();
    const storage = srv.app.services.storage;
    await storage.transaction((s) =>
      s.events.append(bad.map((b) => ({ ...b, org_id: orgId, created_at: now }))),
    );
    const good = expectStatus(
      await owner.api.post(`/api/channels/${channel}/messages`, { content: 'after the bad rows' }),
      201,
    ).id as string;

    // The webhook fan-out delivered the message after them, and nothing for them.
    await expect.poll(() => rx.at(url).map((r) => r.json.data?.message_id as string)).toContain(good);
    const delivered = expectStatus(await owner.api.get(`/api/bots/${bot.id}/deliveries`), 200).items as {
      event_id: string;
    }[];
    const badIds: string[] = bad.map((b) => b.id);
    expect(delivered.some((d) => badIds.includes(d.event_id))).toBe(false);

    // The live stream: the message, and no frame for the bad rows (they come before it in the order).
    const frame = await live.waitFor((m) => m.type === 'event' && m.event.data?.message_id === good);
    expect(live.events.some((m) => badIds.includes(m.event.event_id))).toBe(false);
    await live.close();

    // A replay over the same range (readRange) reads past them too.
    const again = await LiveClient.connect(srv.url, owner.token, from);
    const replayed = again.events.map((m) => m.event.event_id as string);
    expect(replayed).toContain(frame.event.event_id);
    expect(replayed.some((id) => badIds.includes(id))).toBe(false);
    await again.close();

    // Dead-lettered once each, with the reason, queryable and counted.
    const letters = await storage.stores.events.listDeadLetters(1000);
    const mine = letters.filter((l) => badIds.includes(l.event_id));
    expect(mine.map((l) => l.event_id).sort()).toEqual([...badIds].sort());
    const byId = new Map(mine.map((l) => [l.event_id, l]));
    expect(byId.get(bad[0]!.id)).toMatchObject({ type: 'command.invoked', org_id: orgId });
    expect(byId.get(bad[0]!.id)!.error).toMatch(/command: /);
    expect(byId.get(bad[1]!.id)!.error).toBe('data is not JSON');
    expect(byId.get(bad[2]!.id)!.error).toMatch(/unknown event type "message.exploded"/);
    expect(await storage.stores.events.countDeadLetters()).toBeGreaterThanOrEqual(3);
    expect(letters.some((l) => l.error.includes('SECRET-TOKEN'))).toBe(false);

    // Logged with id and type, once per row in this process, never with the secret.
    const logged = logLines.filter((l) => typeof l.eventId === 'string' && badIds.includes(l.eventId));
    expect(logged.map((l) => l.eventId).sort()).toEqual([...badIds].sort());
    for (const l of logged) expect(l).toMatchObject({ level: 50, type: expect.any(String) });
    expect(JSON.stringify(logLines)).not.toContain('SECRET-TOKEN');
  }, 60_000);
});
