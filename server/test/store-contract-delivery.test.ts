import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { DeliveryRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import type { DeliveredAttempt, NewDelivery } from '../src/storage/stores/deliveries.js';
import {
  at,
  clearTables,
  dialectName,
  indexEntriesRead,
  openContractWorld,
} from './helpers/store-fixtures.js';

/**
 * Contract of DeliveryStore (storage/stores/deliveries.ts) on SQLite and PostgreSQL: outbox cursors, who
 * subscribes, the fan-out's inserts (one row per event and bot, duplicates ignored), due / lease (earliest
 * first, limited, busy and paused bots left out, never one delivery to two concurrent claimers), the
 * records of attempts, keyset paging, pruning and each bot's webhook health. The PostgreSQL-only paths
 * (one-statement batches) must answer exactly what the SQLite row-by-row paths answer.
 */
describe(`store contract: deliveries (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let w: Awaited<ReturnType<typeof openContractWorld>>;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close, orgId } = w);
  });
  afterAll(() => close());
  // due / lease / prune look at every delivery: each test starts with none.
  beforeEach(() => clearTables(storage, ['webhook_attempts', 'webhook_deliveries']));

  const d = () => storage.stores.deliveries;
  // The worker claims (due + lease) and counts failures inside a transaction: so do these.
  const claim = (
    now: number,
    limit: number,
    leaseFor = 60,
    busy: { bots?: string[]; orgs?: string[] } = {},
  ) =>
    storage.transaction(async (s) => {
      const due = await s.deliveries.due({
        now: at(now),
        limit,
        busyBots: busy.bots ?? [],
        busyOrgs: busy.orgs,
      });
      const leased = await s.deliveries.lease(
        due.map((r) => r.id),
        at(now),
        at(now + leaseFor),
      );
      return leased.map((l) => l.row);
    });
  const countFailure = (botId: string, now: string) =>
    storage.transaction((s) => s.deliveries.countFailure(botId, now));

  const row = (botId: string, over: Partial<DeliveryRow> = {}): DeliveryRow => ({
    id: newId(),
    org_id: orgId,
    bot_id: botId,
    event_id: newId(),
    event_seq: null,
    event_position: null,
    event_type: 'message.created',
    event_created_at: at(0),
    payload: null,
    state: 'pending',
    attempts: 0,
    next_attempt_at: at(0),
    last_attempt_at: null,
    last_status: null,
    last_error: null,
    created_at: at(0),
    updated_at: at(0),
    ...over,
  });
  const fresh = (botId: string, over: Partial<NewDelivery> = {}): NewDelivery => ({
    id: newId(),
    org_id: orgId,
    bot_id: botId,
    event_id: newId(),
    event_seq: 1,
    event_position: 1,
    event_type: 'message.created',
    event_created_at: at(0),
    state: 'pending',
    next_attempt_at: at(0),
    last_error: null,
    ...over,
  });

  it('cursors: created at 0 once, moved by setCursor; a missing cursor without create throws', async () => {
    const name = `c-${newId()}`;
    expect(await d().lockCursor(name, at(0))).toBe(0);
    await d().setCursor(name, 42, at(1));
    expect(await d().lockCursor(name, at(2))).toBe(42); // create again: a no-op
    expect(await d().lockCursor(name, at(2), false)).toBe(42);
    await expect(d().lockCursor(`missing-${newId()}`, at(0), false)).rejects.toThrow();
  });

  it('cursors: lock-read-move in concurrent transactions loses no move (one fan-out at a time)', async () => {
    const name = `c-${newId()}`;
    await d().lockCursor(name, at(0));
    await Promise.all(
      Array.from({ length: 6 }, () =>
        storage.transaction(async (s) => {
          const pos = await s.deliveries.lockCursor(name, at(1), false);
          await s.deliveries.setCursor(name, pos + 1, at(1));
        }),
      ),
    );
    expect(await d().lockCursor(name, at(2), false)).toBe(6);
  });

  it('subscribers: active, not deleted custom bots (webhook or socket), per organization; built-in ones only when asked; none for no organization', async () => {
    const other = (await storage.stores.orgs.create('Other')).id;
    const hook = await w.bot();
    // No webhook URL: it may receive over its socket (docs/SOCKET.md).
    const socket = await w.bot({ webhook_url: null });
    await w.bot({ status: 'disabled' });
    const gone = await w.bot();
    await storage.stores.bots.softDelete(gone.id, at(0));
    const builtin = await w.bot({ webhook_url: null, builtin: `poll-${newId()}`, type: 'system' });
    const foreign = await w.bot({ org_id: other });
    const ids = async (orgs: string[], b: boolean) =>
      (await d().subscribers(orgs, b)).map((s) => s.bot_id).sort();
    expect(await ids([orgId], false)).toEqual([hook.id, socket.id].sort());
    expect(await ids([orgId], true)).toEqual([hook.id, socket.id, builtin.id].sort());
    expect(await ids([orgId, other], false)).toEqual([hook.id, socket.id, foreign.id].sort());
    expect(await ids([], true)).toEqual([]);
    expect((await d().subscribers([orgId], true)).find((s) => s.bot_id === builtin.id)).toMatchObject({
      org_id: orgId,
      events: '["message.created"]',
      builtin: builtin.builtin,
    });
  });

  it('botMembers / topicProjects: bot members only, for a batch of containers; empty input answers empty', async () => {
    const c1 = await w.channel();
    const c2 = await w.channel();
    const b1 = await w.bot();
    const b2 = await w.bot();
    const u = await w.user();
    const add = (id: string, m: { type: 'user' | 'bot'; id: string }) =>
      storage.stores.containers.addMember('channel', id, m, at(0));
    await add(c1.id, { type: 'bot', id: b1.id });
    await add(c1.id, { type: 'user', id: u.id });
    await add(c2.id, { type: 'bot', id: b1.id });
    await add(c2.id, { type: 'bot', id: b2.id });
    const pairs = (await d().botMembers('channel', [c1.id, c2.id]))
      .map((p) => `${p.parent}/${p.bot_id}`)
      .sort();
    expect(pairs).toEqual([`${c1.id}/${b1.id}`, `${c2.id}/${b1.id}`, `${c2.id}/${b2.id}`].sort());
    expect(await d().botMembers('channel', [])).toEqual([]);
    expect(await d().botMembers('project', [c1.id])).toEqual([]);
    const { project, topic } = await w.projectWithTopic();
    await storage.stores.containers.addMember('project', project.id, { type: 'bot', id: b2.id }, at(0));
    expect(await d().botMembers('project', [project.id])).toEqual([{ parent: project.id, bot_id: b2.id }]);
    expect(await d().topicProjects([topic.id, newId()])).toEqual(new Map([[topic.id, project.id]]));
    expect(await d().topicProjects([])).toEqual(new Map());
  });

  it.runIf(dialectName() === 'postgres')(
    'subscribersAndChannelBots answers what subscribers and botMembers(channel) answer, in one statement (PostgreSQL)',
    async () => {
      const other = (await storage.stores.orgs.create('Other')).id;
      const c1 = await w.channel();
      const c2 = await w.channel();
      const b1 = await w.bot();
      await w.bot({ status: 'disabled' });
      const builtin = await w.bot({ webhook_url: null, builtin: `poll-${newId()}`, type: 'system' });
      await w.bot({ org_id: other });
      const u = await w.user();
      const add = (id: string, m: { type: 'user' | 'bot'; id: string }) =>
        storage.stores.containers.addMember('channel', id, m, at(0));
      await add(c1.id, { type: 'bot', id: b1.id });
      await add(c1.id, { type: 'user', id: u.id });
      await add(c2.id, { type: 'bot', id: builtin.id });
      for (const b of [false, true]) {
        for (const channels of [[], [c1.id], [c1.id, c2.id, newId()]]) {
          const both = await d().subscribersAndChannelBots([orgId], b, channels);
          const bySubscriber = (list: { bot_id: string }[]) =>
            [...list].sort((x, y) => x.bot_id.localeCompare(y.bot_id));
          expect(bySubscriber(both.subscribers)).toEqual(bySubscriber(await d().subscribers([orgId], b)));
          const pairs = (list: { parent: string; bot_id: string }[]) =>
            list.map((p) => `${p.parent}/${p.bot_id}`).sort();
          expect(pairs(both.channelBots)).toEqual(pairs(await d().botMembers('channel', channels)));
        }
      }
      expect(await d().subscribersAndChannelBots([], true, [])).toEqual({ subscribers: [], channelBots: [] });
    },
  );

  it('insertDeliveries: answers the ids inserted; an (event, bot) pair that exists is left as it was; empty input inserts nothing', async () => {
    const b = await w.bot();
    const a = fresh(b.id, { last_error: null });
    const failed = fresh(b.id, { state: 'failed', last_error: 'not subscribed' });
    const inserted = await storage.transaction((s) => s.deliveries.insertDeliveries([a, failed], at(5)));
    expect([...inserted].sort()).toEqual([a.id, failed.id].sort());
    expect(await d().get(a.id)).toMatchObject({
      state: 'pending',
      attempts: 0,
      payload: null,
      event_seq: 1,
      event_position: 1,
      created_at: at(5),
      updated_at: at(5),
    });
    expect(await d().get(failed.id)).toMatchObject({ state: 'failed', last_error: 'not subscribed' });
    const dup = fresh(b.id, { event_id: a.event_id });
    const other = fresh(b.id);
    const again = await storage.transaction((s) => s.deliveries.insertDeliveries([dup, other], at(6)));
    expect([...again]).toEqual([other.id]);
    expect(await d().get(dup.id)).toBeUndefined();
    expect((await storage.transaction((s) => s.deliveries.insertDeliveries([], at(7)))).size).toBe(0);
    // insertMany: the same conflict rule.
    const many = [row(b.id, { event_id: a.event_id }), row(b.id)];
    await d().insertMany(many);
    expect(await d().get(many[0]!.id)).toBeUndefined();
    expect(await d().get(many[1]!.id)).toBeDefined();
    await d().insertMany([]);
  });

  it('insertDeliveriesAndMoveCursor: the rows and the cursor move together, also with no rows', async () => {
    const b = await w.bot();
    const name = `c-${newId()}`;
    await d().lockCursor(name, at(0));
    const r = fresh(b.id);
    const ids = await storage.transaction((s) =>
      s.deliveries.insertDeliveriesAndMoveCursor([r], at(1), { name, position: 10 }),
    );
    expect([...ids]).toEqual([r.id]);
    expect(await d().lockCursor(name, at(1), false)).toBe(10);
    const none = await storage.transaction((s) =>
      s.deliveries.insertDeliveriesAndMoveCursor([], at(2), { name, position: 11 }),
    );
    expect(none.size).toBe(0);
    expect(await d().lockCursor(name, at(2), false)).toBe(11);
    // Only duplicates: nothing inserted, the cursor still moves.
    const dupIds = await storage.transaction((s) =>
      s.deliveries.insertDeliveriesAndMoveCursor([fresh(b.id, { event_id: r.event_id })], at(3), {
        name,
        position: 12,
      }),
    );
    expect(dupIds.size).toBe(0);
    expect(await d().lockCursor(name, at(3), false)).toBe(12);
    // A failing transaction moves neither.
    const failed = await storage
      .transaction(async (s) => {
        await s.deliveries.insertDeliveriesAndMoveCursor([fresh(b.id, { id: 'rolled-back' })], at(4), {
          name,
          position: 99,
        });
        throw new Error('boom');
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe('boom');
    expect(await d().lockCursor(name, at(4), false)).toBe(12);
    expect(await d().get('rolled-back')).toBeUndefined();
  });

  it.runIf(dialectName() === 'postgres')(
    'readCursor and insertDeliveriesIfCursorAt: rows and cursor move only from where the pass started (PostgreSQL)',
    async () => {
      const b = await w.bot();
      const name = `c-${newId()}`;
      expect(await d().readCursor(name, at(0))).toBe(0); // created
      expect(await d().readCursor(name, at(1))).toBe(0); // read
      const r = fresh(b.id);
      const ids = await d().insertDeliveriesIfCursorAt([r], at(1), { name, from: 0, to: 10 });
      expect(ids && [...ids]).toEqual([r.id]);
      expect(await d().readCursor(name, at(1))).toBe(10);
      // Another pass that started at 0 (the cursor moved meanwhile): nothing inserted, nothing moved.
      const lost = fresh(b.id);
      expect(await d().insertDeliveriesIfCursorAt([lost], at(2), { name, from: 0, to: 20 })).toBeNull();
      expect(await d().get(lost.id)).toBeUndefined();
      expect(await d().readCursor(name, at(2))).toBe(10);
      // No rows: the cursor still moves; a duplicate (event, bot) pair is not inserted, the cursor moves.
      expect((await d().insertDeliveriesIfCursorAt([], at(3), { name, from: 10, to: 11 }))?.size).toBe(0);
      const dup = fresh(b.id, { event_id: r.event_id });
      expect((await d().insertDeliveriesIfCursorAt([dup], at(4), { name, from: 11, to: 12 }))?.size).toBe(0);
      expect(await d().readCursor(name, at(4))).toBe(12);
      // Two passes racing from the same position: exactly one moves the cursor and inserts.
      const [x, y] = [fresh(b.id), fresh(b.id)];
      const results = await Promise.all([
        d().insertDeliveriesIfCursorAt([x], at(5), { name, from: 12, to: 13 }),
        d().insertDeliveriesIfCursorAt([y], at(5), { name, from: 12, to: 14 }),
      ]);
      expect(results.filter((res) => res !== null)).toHaveLength(1);
      const won = results[0] ? x : y;
      const lostRace = results[0] ? y : x;
      expect(await d().get(won.id)).toBeDefined();
      expect(await d().get(lostRace.id)).toBeUndefined();
      expect(await d().readCursor(name, at(6))).toBe(results[0] ? 13 : 14);
    },
  );

  it('due: pending and due only, earliest first, at most limit; busy bots, busy organizations and paused bots left out', async () => {
    const b1 = await w.bot();
    const b2 = await w.bot();
    const paused = await w.bot();
    const otherOrg = (await storage.stores.orgs.create('Busy')).id;
    const b3 = await w.bot({ org_id: otherOrg });
    const r1 = row(b1.id, { next_attempt_at: at(30) });
    const r2 = row(b2.id, { next_attempt_at: at(10) });
    const r3 = row(b3.id, { org_id: otherOrg, next_attempt_at: at(20) });
    const later = row(b1.id, { next_attempt_at: at(500) });
    const done = row(b1.id, { next_attempt_at: at(0), state: 'delivered' });
    const p = row(paused.id, { next_attempt_at: at(0) });
    await d().insertMany([r1, r2, r3, later, done, p]);
    await d().putHealth({
      bot_id: paused.id,
      consecutive_failures: 50,
      paused_at: at(0),
      paused_reason: 'x',
      updated_at: at(0),
    });
    const due = (o: { limit?: number; busyBots?: string[]; busyOrgs?: string[] } = {}) =>
      storage.transaction(async (s) =>
        (
          await s.deliveries.due({
            now: at(100),
            limit: o.limit ?? 100,
            busyBots: o.busyBots ?? [],
            busyOrgs: o.busyOrgs,
          })
        ).map((x) => x.id),
      );
    expect(await due()).toEqual([r2.id, r3.id, r1.id]);
    expect(await due({ limit: 2 })).toEqual([r2.id, r3.id]);
    expect(await due({ busyBots: [b2.id] })).toEqual([r3.id, r1.id]);
    expect(await due({ busyOrgs: [otherOrg] })).toEqual([r2.id, r1.id]);
    expect(await due({ busyOrgs: [] })).toEqual([r2.id, r3.id, r1.id]);
    const [first] = await storage.transaction((s) =>
      s.deliveries.due({ now: at(100), limit: 1, busyBots: [] }),
    );
    expect(first).toEqual({
      id: r2.id,
      org_id: orgId,
      bot_id: b2.id,
      attempts: 0,
      next_attempt_at: at(10),
      event_position: null,
    });
    // Unpaused: due again.
    await d().putHealth({
      bot_id: paused.id,
      consecutive_failures: 0,
      paused_at: null,
      paused_reason: null,
      updated_at: at(1),
    });
    expect(await due()).toContain(p.id);
  });

  // A backlog the statistics do not know of (the table analyzed while its queue was empty): PostgreSQL
  // planned the look as a read and sort of every due row, so each claim cost the whole backlog. The
  // look reads the due index in order and stops at the limit (migration 0023), whatever the statistics.
  it.runIf(dialectName() === 'postgres')(
    'due on PostgreSQL reads the due index in order up to the limit, not the whole backlog, with stale statistics',
    async () => {
      const [b1, b2] = [await w.bot(), await w.bot()];
      await sql`analyze webhook_deliveries`.execute(storage.stores.db);
      const backlog = Array.from({ length: 2000 }, (_, i) =>
        row(i % 2 ? b1.id : b2.id, { next_attempt_at: at(i % 500) }),
      );
      for (let i = 0; i < backlog.length; i += 500) await d().insertMany(backlog.slice(i, i + 500));
      const earliest = backlog
        .filter((r) => r.bot_id === b1.id)
        .sort((x, y) => (x.next_attempt_at < y.next_attempt_at ? -1 : 1))
        .slice(0, 10)
        .map((r) => r.next_attempt_at);
      const { due, indexRead } = await storage.transaction(async (s) => {
        const due = await s.deliveries.due({ now: at(1000), limit: 10, busyBots: [b2.id] });
        return { due, indexRead: await indexEntriesRead(s.db, 'webhook_deliveries_due') };
      });
      expect(due.map((x) => x.next_attempt_at)).toEqual(earliest);
      expect(due.every((x) => x.bot_id === b1.id)).toBe(true);
      // In order to the limit: 10 of b1's among ~20 entries (b2's left out on the way); the whole
      // backlog is 2,000.
      expect(indexRead).toBeGreaterThanOrEqual(10);
      expect(indexRead).toBeLessThan(100);
    },
  );

  it('lease: only rows still pending and due get the lease; a leased row is not due until it ends; empty input answers empty', async () => {
    const b = await w.bot();
    const r = row(b.id);
    const notDue = row(b.id, { next_attempt_at: at(1000) });
    const delivered = row(b.id, { state: 'delivered' });
    await d().insertMany([r, notDue, delivered]);
    const leased = await storage.transaction((s) =>
      s.deliveries.lease([r.id, notDue.id, delivered.id, newId()], at(10), at(70)),
    );
    expect(leased.map((x) => x.row.id)).toEqual([r.id]);
    expect(leased[0]!.row).toMatchObject({ next_attempt_at: at(70), state: 'pending', bot_id: b.id });
    expect(leased[0]!.data).toBe('null'); // no event in the outbox, no payload
    expect(await claim(69, 10)).toEqual([]);
    expect((await claim(70, 10)).map((x) => x.id)).toEqual([r.id]);
    expect(await storage.transaction((s) => s.deliveries.lease([], at(0), at(1)))).toEqual([]);
  });

  it('lease answers each row with the data its attempt sends: its event from the outbox, else its stored payload', async () => {
    const b = await w.bot();
    const evId = newId();
    await storage.transaction((s) =>
      s.events.append([
        { id: evId, org_id: orgId, type: 'message.created', data: '{"from":"outbox"}', created_at: at(0) },
      ]),
    );
    const ev = (await storage.stores.events.listAfter(0, 100_000, orgId)).find((e) => e.id === evId)!;
    const fromOutbox = row(b.id, { event_id: evId, event_seq: Number(ev.seq) });
    const withPayload = row(b.id, { payload: '{"from":"payload"}' });
    // Its event gone from the outbox (pruned): no data to send rather than another event's.
    const eventGone = row(b.id, { event_seq: 987_654_321 });
    await d().insertMany([fromOutbox, withPayload, eventGone]);
    const leased = await storage.transaction((s) =>
      s.deliveries.lease([fromOutbox.id, withPayload.id, eventGone.id], at(10), at(70)),
    );
    expect(new Map(leased.map((l) => [l.row.id, l.data]))).toEqual(
      new Map([
        [fromOutbox.id, '{"from":"outbox"}'],
        [withPayload.id, '{"from":"payload"}'],
        [eventGone.id, 'null'],
      ]),
    );
  });

  it('due + lease: two concurrent claimers never get the same delivery (SKIP LOCKED on PostgreSQL: the second answers while the first holds its claim open)', async () => {
    const b = await w.bot();
    const rows = Array.from({ length: 6 }, (_, i) => row(b.id, { id: `d-${i}`, next_attempt_at: at(i) }));
    await d().insertMany(rows);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let claimed!: () => void;
    const firstClaimed = new Promise<void>((r) => (claimed = r));
    const first = storage.transaction(async (s) => {
      const due = await s.deliveries.due({ now: at(100), limit: 2, busyBots: [] });
      const got = await s.deliveries.lease(
        due.map((x) => x.id),
        at(100),
        at(200),
      );
      claimed();
      await gate;
      return got.map((l) => l.row);
    });
    await firstClaimed;
    const second = claim(100, 2);
    if (storage.dialect === 'postgres') await second;
    release();
    const [x, y] = await Promise.all([first, second]);
    expect(x.map((r) => r.id).sort()).toEqual(['d-0', 'd-1']);
    expect(y.map((r) => r.id).sort()).toEqual(['d-2', 'd-3']);
    const more = await Promise.all(Array.from({ length: 4 }, () => claim(100, 1)));
    expect(
      more
        .flat()
        .map((r) => r.id)
        .sort(),
    ).toEqual(['d-4', 'd-5']);
  });

  it('eventData / targets: by outbox seq and by bot, with secret and pause; unknown ids absent; empty input answers empty', async () => {
    const evId = newId();
    await storage.transaction((s) =>
      s.events.append([
        { id: evId, org_id: orgId, type: 'message.created', data: '{"k":1}', created_at: at(0) },
      ]),
    );
    const ev = (await storage.stores.events.listAfter(0, 100_000, orgId)).find((e) => e.id === evId)!;
    const data = await d().eventData([Number(ev.seq), 987_654_321]);
    expect(data).toEqual(new Map([[Number(ev.seq), '{"k":1}']]));
    expect(await d().eventData([])).toEqual(new Map());
    const b = await w.bot();
    const plain = await w.bot({ webhook_url: null });
    await storage.stores.bots.putWebhookSecret(b.id, 'enc', at(0));
    await d().putHealth({
      bot_id: b.id,
      consecutive_failures: 3,
      paused_at: at(0),
      paused_reason: 'r',
      updated_at: at(0),
    });
    const t = await d().targets([b.id, plain.id, newId()]);
    expect([...t.keys()].sort()).toEqual([b.id, plain.id].sort());
    expect(t.get(b.id)).toEqual({
      bot_id: b.id,
      org_id: orgId,
      name: b.name,
      created_by: null,
      webhook_url: b.webhook_url,
      status: 'active',
      deleted_at: null,
      builtin: null,
      secret_encrypted: 'enc',
      paused: true,
      hold_until: null,
      max_per_minute: null,
      signing_key_encrypted: null,
    });
    expect(t.get(plain.id)).toMatchObject({ secret_encrypted: null, paused: false, webhook_url: null });
    expect(await d().targets([])).toEqual(new Map());
  });

  it('recordAttempt / markDelivered / attemptsOf: attempts listed per delivery in attempt order; delivered ends the run of failures', async () => {
    const b = await w.bot();
    const r = row(b.id);
    const r2 = row(b.id);
    await d().insertMany([r, r2]);
    const attempt = (deliveryId: string, n: number, status: number | null, error: string | null) => ({
      id: newId(),
      delivery_id: deliveryId,
      attempt: n,
      started_at: at(n),
      duration_ms: 5 * n,
      status,
      error,
      response_snippet: status ? 'ok' : null,
    });
    const a2 = attempt(r.id, 2, 200, null);
    const a1 = attempt(r.id, 1, null, 'timeout');
    const other = attempt(r2.id, 1, 500, 'server error');
    await d().recordAttempt(a2);
    await d().recordAttempt(a1);
    await d().recordAttempt(other);
    expect(await countFailure(b.id, at(1))).toMatchObject({ consecutive_failures: 1 });
    await storage.transaction((s) =>
      s.deliveries.markDelivered({ id: r.id, bot_id: b.id }, 2, at(2), 200, at(3)),
    );
    expect(await d().get(r.id)).toMatchObject({
      state: 'delivered',
      attempts: 2,
      last_attempt_at: at(2),
      last_status: 200,
      last_error: null,
      next_attempt_at: at(3),
      updated_at: at(3),
    });
    expect((await d().getHealth(b.id))?.consecutive_failures).toBe(0);
    const list = await d().attemptsOf([r.id]);
    expect(list).toEqual([a1, a2]);
    const both = await d().attemptsOf([r2.id, r.id]);
    expect(both.map((x) => x.delivery_id)).toEqual(
      [r.id, r.id, r2.id].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)),
    );
    expect(await d().attemptsOf([])).toEqual([]);
    // Attempts go with their delivery.
    await storage.stores.db.deleteFrom('webhook_deliveries').where('id', '=', r.id).execute();
    expect(await d().attemptsOf([r.id])).toEqual([]);
  });

  it('recordDelivered: a batch of attempts recorded, deliveries delivered, those bots’ runs of failures ended; empty batch is a no-op', async () => {
    const b1 = await w.bot();
    const b2 = await w.bot();
    const b3 = await w.bot();
    const r1 = row(b1.id, { last_error: 'earlier' });
    const r2 = row(b2.id);
    const untouched = row(b3.id);
    await d().insertMany([r1, r2, untouched]);
    for (const b of [b1, b2, b3]) await countFailure(b.id, at(0));
    const items: DeliveredAttempt[] = [
      {
        attemptId: newId(),
        deliveryId: r1.id,
        botId: b1.id,
        attempt: 3,
        startedAt: at(4),
        durationMs: 7,
        status: 204,
        snippet: null,
      },
      {
        attemptId: newId(),
        deliveryId: r2.id,
        botId: b2.id,
        attempt: 1,
        startedAt: at(5),
        durationMs: 9,
        status: 200,
        snippet: 'fine',
      },
    ];
    // Outside a transaction: PostgreSQL runs it as one statement (atomic by itself).
    await d().recordDelivered(items, at(6));
    expect(await d().get(r1.id)).toMatchObject({
      state: 'delivered',
      attempts: 3,
      last_attempt_at: at(4),
      last_status: 204,
      last_error: null,
      next_attempt_at: at(6),
      updated_at: at(6),
    });
    expect(await d().get(r2.id)).toMatchObject({ state: 'delivered', attempts: 1, last_status: 200 });
    expect(await d().attemptsOf([r2.id])).toEqual([
      {
        id: items[1]!.attemptId,
        delivery_id: r2.id,
        attempt: 1,
        started_at: at(5),
        duration_ms: 9,
        status: 200,
        error: null,
        response_snippet: 'fine',
      },
    ]);
    expect((await d().getHealth(b1.id))?.consecutive_failures).toBe(0);
    expect((await d().getHealth(b2.id))?.consecutive_failures).toBe(0);
    expect((await d().getHealth(b3.id))?.consecutive_failures).toBe(1);
    expect((await d().get(untouched.id))?.state).toBe('pending');
    await d().recordDelivered([], at(7));
    expect((await d().get(r1.id))?.updated_at).toBe(at(6));
  });

  it('update / failPending: a patch changes only its row; failPending ends the bot’s pending rows and says how many', async () => {
    const b = await w.bot();
    const other = await w.bot();
    const p1 = row(b.id);
    const p2 = row(b.id);
    const delivered = row(b.id, { state: 'delivered' });
    const others = row(other.id);
    await d().insertMany([p1, p2, delivered, others]);
    await d().update(p1.id, { attempts: 4, last_error: 'e', next_attempt_at: at(99) });
    expect(await d().get(p1.id)).toMatchObject({ attempts: 4, last_error: 'e', next_attempt_at: at(99) });
    expect((await d().get(p2.id))?.attempts).toBe(0);
    expect(await d().failPending(b.id, 'gone', at(5))).toBe(2);
    expect(await d().get(p1.id)).toMatchObject({ state: 'failed', last_error: 'gone', updated_at: at(5) });
    expect((await d().get(delivered.id))?.state).toBe('delivered');
    expect((await d().get(others.id))?.state).toBe('pending');
    expect(await d().failPending(b.id, 'gone', at(6))).toBe(0);
  });

  it('listForBot: newest first by (created_at, id), keyset paging, state filter', async () => {
    const b = await w.bot();
    const rows = [
      row(b.id, { id: 'l-a', created_at: at(1) }),
      row(b.id, { id: 'l-b', created_at: at(2) }),
      row(b.id, { id: 'l-c', created_at: at(2), state: 'failed' }),
      row(b.id, { id: 'l-d', created_at: at(3), state: 'delivered' }),
    ];
    await d().insertMany([...rows, row((await w.bot()).id)]);
    const ids = async (o: Parameters<Storage['stores']['deliveries']['listForBot']>[1]) =>
      (await d().listForBot(b.id, o)).map((r) => r.id);
    expect(await ids({ limit: 10 })).toEqual(['l-d', 'l-c', 'l-b', 'l-a']);
    expect(await ids({ limit: 2 })).toEqual(['l-d', 'l-c']);
    expect(await ids({ limit: 10, before: { created_at: at(2), id: 'l-c' } })).toEqual(['l-b', 'l-a']);
    expect(await ids({ limit: 10, state: 'pending' })).toEqual(['l-b', 'l-a']);
    expect(await ids({ limit: 10, state: 'failed', before: { created_at: at(3), id: 'l-d' } })).toEqual([
      'l-c',
    ]);
  });

  it('eventsForBot: the bot’s deliveries after an outbox position, in position order, with the event data, at most limit', async () => {
    const b = await w.bot();
    const evs = [0, 1, 2].map((i) => ({
      id: newId(),
      org_id: orgId,
      type: 'message.created',
      data: `{"i":${i}}`,
      created_at: at(i),
    }));
    await storage.transaction((s) => s.events.append(evs));
    const stored = await storage.stores.events.listAfter(0, 100_000, orgId);
    const seqOf = (id: string) => Number(stored.find((e) => e.id === id)!.seq);
    await d().insertMany([
      row(b.id, { id: 'e-2', event_id: evs[2]!.id, event_seq: seqOf(evs[2]!.id), event_position: 30 }),
      row(b.id, { id: 'e-0', event_id: evs[0]!.id, event_seq: seqOf(evs[0]!.id), event_position: 10 }),
      row(b.id, {
        id: 'e-1',
        event_id: evs[1]!.id,
        event_seq: seqOf(evs[1]!.id),
        event_position: 20,
        state: 'failed',
      }),
      // Not in the outbox (a test event): not listed.
      row(b.id, { id: 'e-x', event_position: 25, payload: '{}' }),
    ]);
    const got = await d().eventsForBot(b.id, 10, 10);
    expect(got.map((e) => [e.delivery_id, Number(e.position), e.data, e.state])).toEqual([
      ['e-1', 20, '{"i":1}', 'failed'],
      ['e-2', 30, '{"i":2}', 'pending'],
    ]);
    expect(got[0]).toMatchObject({
      event_id: evs[1]!.id,
      event_type: 'message.created',
      event_created_at: at(0),
    });
    expect((await d().eventsForBot(b.id, 0, 1)).map((e) => e.delivery_id)).toEqual(['e-0']);
    expect(await d().eventsForBot(b.id, 30, 10)).toEqual([]);
  });

  it('prune: delivered and failed rows changed before the time go, a batch at a time, with their attempts; pending rows stay', async () => {
    const b = await w.bot();
    const oldDelivered = row(b.id, { state: 'delivered', updated_at: at(-100) });
    const oldFailed = row(b.id, { state: 'failed', updated_at: at(-100) });
    const oldPending = row(b.id, { updated_at: at(-100) });
    const recent = row(b.id, { state: 'delivered', updated_at: at(10) });
    await d().insertMany([oldDelivered, oldFailed, oldPending, recent]);
    await d().recordAttempt({
      id: newId(),
      delivery_id: oldDelivered.id,
      attempt: 1,
      started_at: at(-100),
      duration_ms: 1,
      status: 200,
      error: null,
      response_snippet: null,
    });
    expect(await d().prune(at(0), 1)).toBe(1);
    expect(await d().prune(at(0), 10)).toBe(1);
    expect(await d().prune(at(0), 10)).toBe(0);
    expect(await d().get(oldDelivered.id)).toBeUndefined();
    expect(await d().get(oldFailed.id)).toBeUndefined();
    expect(await d().get(oldPending.id)).toBeDefined();
    expect(await d().get(recent.id)).toBeDefined();
    expect(await d().attemptsOf([oldDelivered.id])).toEqual([]);
  });

  it('health: putHealth upserts; countFailure counts from 1 and adds one per call, also concurrently, keeping the pause', async () => {
    const b = await w.bot();
    expect(await d().getHealth(b.id)).toBeUndefined();
    expect(await countFailure(b.id, at(1))).toEqual({
      bot_id: b.id,
      consecutive_failures: 1,
      paused_at: null,
      paused_reason: null,
      updated_at: at(1),
      hold_until: null,
      hold_reason: null,
      max_per_minute: null,
    });
    expect((await countFailure(b.id, at(2))).consecutive_failures).toBe(2);
    await d().putHealth({
      bot_id: b.id,
      consecutive_failures: 9,
      paused_at: at(3),
      paused_reason: 'too many',
      updated_at: at(3),
    });
    expect(await d().getHealth(b.id)).toMatchObject({
      bot_id: b.id,
      consecutive_failures: 9,
      paused_at: at(3),
      paused_reason: 'too many',
      updated_at: at(3),
    });
    const counts = await Promise.all(Array.from({ length: 5 }, (_, i) => countFailure(b.id, at(10 + i))));
    expect(counts.map((h) => h.consecutive_failures).sort((x, y) => x - y)).toEqual([10, 11, 12, 13, 14]);
    expect(await d().getHealth(b.id)).toMatchObject({ consecutive_failures: 14, paused_at: at(3) });
    const fresh2 = await w.bot();
    const many = await Promise.all(Array.from({ length: 5 }, () => countFailure(fresh2.id, at(0))));
    expect(many.map((h) => h.consecutive_failures).sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('hold / setMaxPerMinute / clearHold (migration 0012): the later hold stands; due() and targets() see them', async () => {
    const b = await w.bot();
    await d().hold(b.id, at(60), 'Retry-After: 60', at(0));
    expect(await d().getHealth(b.id)).toMatchObject({ hold_until: at(60), hold_reason: 'Retry-After: 60' });
    // A shorter hold does not shorten it; a longer one extends it with its reason.
    await d().hold(b.id, at(30), 'max_per_minute 2', at(1));
    expect(await d().getHealth(b.id)).toMatchObject({ hold_until: at(60), hold_reason: 'Retry-After: 60' });
    await d().hold(b.id, at(90), 'Retry-After: 90', at(2));
    expect(await d().getHealth(b.id)).toMatchObject({ hold_until: at(90), hold_reason: 'Retry-After: 90' });
    // The failures in a row and a pause are kept by a hold, and the hold by countFailure.
    await countFailure(b.id, at(3));
    expect(await d().getHealth(b.id)).toMatchObject({ consecutive_failures: 1, hold_until: at(90) });
    await d().setMaxPerMinute(b.id, 6, at(4));
    expect((await d().targets([b.id])).get(b.id)).toMatchObject({ hold_until: at(90), max_per_minute: 6 });
    await d().clearHold(b.id, at(5));
    expect(await d().getHealth(b.id)).toMatchObject({
      hold_until: null,
      hold_reason: null,
      max_per_minute: 6,
    });
    await d().setMaxPerMinute(b.id, null, at(6));
    expect((await d().getHealth(b.id))?.max_per_minute).toBeNull();
    // A bot without a health row gets one from setMaxPerMinute and from hold.
    const fresh = await w.bot();
    await d().setMaxPerMinute(fresh.id, 1, at(0));
    expect(await d().getHealth(fresh.id)).toMatchObject({
      consecutive_failures: 0,
      paused_at: null,
      max_per_minute: 1,
    });
  });

  // Outside a transaction, the SQLite engine once took any statement that returns rows for a read, so an
  // INSERT/UPDATE … RETURNING repeated within a millisecond was answered from the committed-read cache
  // and the write skipped (sqlite-engine.ts `isRead` now also asks better-sqlite3's `readonly`).
  it('countFailure outside a transaction: the same call twice counts twice (a write with RETURNING is never answered from a cache)', async () => {
    const b = await w.bot();
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) seen.push((await d().countFailure(b.id, at(0))).consecutive_failures);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect((await d().getHealth(b.id))?.consecutive_failures).toBe(10);
  });
});
