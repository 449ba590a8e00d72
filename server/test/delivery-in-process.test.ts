import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { Fanout } from '../src/delivery/fanout.js';
import type { InProcessEnvelope, InProcessReceiver, InProcessResult } from '../src/delivery/in-process.js';
import { OutboundClient } from '../src/outbound/client.js';
import { DeliveryWorker } from '../src/delivery/worker.js';
import { EventBus } from '../src/events/bus.js';
import { OutboxReader } from '../src/events/outbox-reader.js';
import type { Storage } from '../src/storage/storage.js';
import { openTestStorage } from './helpers/storage.js';

/**
 * The in-process transport (delivery/in-process.ts) at the unit level: the real fan-out and worker on
 * a real database (SQLite, or PostgreSQL with DATABASE_URL), with a tiny receiver in the test in place
 * of the built-in bots' runtime. A bot row with `builtin` set and no webhook URL or secret is
 * subscribed by its `events` like any bot, gets each delivery handed to the receiver, one at a time and
 * in outbox order, with every attempt in the delivery log and failures retried.
 */
describe('in-process deliveries to built-in bots', () => {
  const log = pino({ level: 'silent' });
  let storage: Storage;
  let close: () => Promise<void>;
  const now = () => new Date().toISOString();
  const org = randomUUID();
  const channel = randomUUID();
  const webhooks = {
    ...loadConfig({ WORKROOM_DATA_DIR: '/tmp/unused' }).webhooks,
    retryDelaysMs: [100, 200],
    timeoutMs: 1000,
  };

  beforeAll(async () => {
    ({ storage, close } = await openTestStorage());
    const db = storage.stores.db;
    await db.insertInto('organizations').values({ id: org, name: 'in-process', created_at: now() }).execute();
    await db
      .insertInto('channels')
      .values({
        id: channel,
        org_id: org,
        name: 'general',
        description: '',
        is_private: 0,
        created_by: null,
        created_at: now(),
        updated_at: now(),
      })
      .execute();
  });
  afterAll(async () => {
    await close();
  });

  /** A built-in bot (no URL, no secret) subscribed to `events`, member of the channel. */
  async function builtinBot(builtin: string, events: string[]): Promise<string> {
    const id = randomUUID();
    const db = storage.stores.db;
    await db
      .insertInto('bots')
      .values({
        id,
        org_id: org,
        type: 'system',
        name: builtin,
        description: '',
        webhook_url: null,
        events: JSON.stringify(events),
        created_by: null,
        status: 'active',
        builtin,
        created_at: now(),
        updated_at: now(),
        deleted_at: null,
      })
      .execute();
    await db
      .insertInto('channel_members')
      .values({ channel_id: channel, member_type: 'bot', member_id: id, joined_at: now() })
      .execute();
    return id;
  }

  /** Writes message.created events to the outbox, as operations do. */
  async function messages(n: number, label: string): Promise<string[]> {
    const ids = Array.from({ length: n }, () => randomUUID());
    await storage.transaction((s) =>
      s.events.append(
        ids.map((messageId, i) => ({
          id: randomUUID(),
          org_id: org,
          type: 'message.created',
          // Complete (the outbox reader dead-letters data that does not match its schema).
          data: JSON.stringify({
            message_id: messageId,
            content: `${label} ${i}`,
            content_html: null,
            channel_id: channel,
            topic_id: null,
            dm_room_id: null,
            sender_id: randomUUID(),
            sender_type: 'user',
            bot_id: null,
            actions: null,
            created_at: now(),
            edited_at: null,
            deleted_at: null,
          }),
          created_at: now(),
        })),
      ),
    );
    return ids;
  }

  /** Fan-out and worker with `receiver` (or none), on their own reader; stopped by the returned function. */
  async function start(receiver?: InProcessReceiver): Promise<() => Promise<void>> {
    const reader = new OutboxReader(storage, new EventBus(), log, { pollMs: 50 });
    const client = new OutboundClient({ allowPrivate: true, allowedRanges: [], timeoutMs: 1000 });
    const worker = new DeliveryWorker({
      storage,
      log,
      webhooks,
      encryptionKey: Buffer.alloc(32, 1),
      client,
      pollMs: 50,
      ...(receiver && { inProcess: receiver }),
    });
    const fanout = new Fanout(storage, reader, log, worker);
    await reader.start();
    worker.start();
    fanout.start();
    return async () => {
      await fanout.stop();
      await worker.drain(Date.now() + 2000);
      await reader.stop();
      client.close();
    };
  }

  const deliveriesOf = (botId: string) =>
    storage.stores.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('bot_id', '=', botId)
      .orderBy('event_position')
      .execute();

  /** A receiver that records what it got and how many deliveries per bot ran at once. */
  class Recorder implements InProcessReceiver {
    readonly got: { builtin: string; envelope: InProcessEnvelope }[] = [];
    readonly running = new Map<string, number>();
    maxRunning = 0;
    constructor(private readonly answer: (e: InProcessEnvelope, nth: number) => InProcessResult | 'throw') {}
    async deliver(builtin: string, envelope: InProcessEnvelope): Promise<InProcessResult> {
      const n = (this.running.get(builtin) ?? 0) + 1;
      this.running.set(builtin, n);
      this.maxRunning = Math.max(this.maxRunning, n);
      try {
        this.got.push({ builtin, envelope });
        await new Promise((r) => setTimeout(r, 2)); // a handler that takes a moment
        const nth = this.got.filter((g) => g.envelope.delivery_id === envelope.delivery_id).length;
        const a = this.answer(envelope, nth);
        if (a === 'throw') throw new Error('handler broke');
        return a;
      } finally {
        this.running.set(builtin, (this.running.get(builtin) ?? 1) - 1);
      }
    }
  }

  it('hands each event to the receiver, one at a time per bot and in outbox order, and logs the attempt', async () => {
    const rx = new Recorder(() => ({ ok: true, detail: 'handled' }));
    const stop = await start(rx);
    try {
      const bot = await builtinBot('echo', ['message.created']);
      const other = await builtinBot('quiet', ['task.created']); // not subscribed to messages
      const ids = await messages(25, 'hello');
      await expect.poll(() => rx.got.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(25);
      const mine = rx.got.filter((g) => g.envelope.bot_id === bot);
      expect(mine.map((g) => (g.envelope.data as { message_id: string }).message_id)).toEqual(ids);
      expect(rx.got.every((g) => g.builtin === 'echo')).toBe(true);
      expect(rx.maxRunning).toBe(1); // serial per bot
      expect(mine[0]!.envelope).toMatchObject({
        event_type: 'message.created',
        bot_id: bot,
        data: { channel_id: channel, content: 'hello 0' },
      });
      await expect
        .poll(async () => (await deliveriesOf(bot)).filter((d) => d.state === 'delivered').length, {
          timeout: 20_000,
        })
        .toBe(25);
      const rows = await deliveriesOf(bot);
      expect(rows.map((r) => r.id)).toEqual(mine.map((g) => g.envelope.delivery_id));
      expect(rows.map((r) => r.event_id)).toEqual(mine.map((g) => g.envelope.event_id));
      const attempts = await storage.stores.deliveries.attemptsOf([rows[0]!.id]);
      expect(attempts).toEqual([
        expect.objectContaining({ attempt: 1, status: null, error: null, response_snippet: 'handled' }),
      ]);
      expect(await deliveriesOf(other)).toEqual([]);
    } finally {
      await stop();
    }
  });

  it('retries a failed or throwing handler on the usual schedule, with the same delivery id', async () => {
    const rx = new Recorder((_e, nth) =>
      nth === 1 ? { ok: false, detail: 'not yet' } : nth === 2 ? 'throw' : { ok: true },
    );
    const stop = await start(rx);
    try {
      const bot = await builtinBot('flaky', ['message.created']);
      await messages(1, 'retry me');
      await expect
        .poll(async () => (await deliveriesOf(bot))[0]?.state, { timeout: 20_000 })
        .toBe('delivered');
      const [d] = await deliveriesOf(bot);
      const mine = rx.got.filter((g) => g.envelope.bot_id === bot);
      expect(mine).toHaveLength(3);
      expect(new Set(mine.map((g) => g.envelope.delivery_id))).toEqual(new Set([d!.id]));
      const log = await storage.stores.deliveries.attemptsOf([d!.id]);
      expect(log.map((a) => [a.attempt, a.status, a.error])).toEqual([
        [1, null, 'in process: not yet'],
        [2, null, 'in process: handler broke'],
        [3, null, null],
      ]);
      expect(log[2]!.response_snippet).toBe('ok (in process)');
    } finally {
      await stop();
    }
  });

  it('fans out nothing to built-in bots when no receiver runs them', async () => {
    const stop = await start();
    try {
      const bot = await builtinBot('absent', ['message.created']);
      const before = await storage.stores.deliveries.lockCursor('webhook-fanout', now());
      await messages(3, 'nobody home');
      // The fan-out moved past the events ...
      await expect
        .poll(() => storage.stores.deliveries.lockCursor('webhook-fanout', now()), { timeout: 20_000 })
        .toBeGreaterThan(before);
      // ... and made no delivery for the built-in bot.
      expect(await deliveriesOf(bot)).toEqual([]);
    } finally {
      await stop();
    }
  });
});
