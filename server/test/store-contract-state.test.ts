import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { BotDataRow, ReadMarkerRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import { dmMemberKey } from '../src/storage/stores/containers.js';
import { at, dialectName, openContractWorld } from './helpers/store-fixtures.js';

/**
 * Contract of three small stores that keep state across requests, on SQLite and PostgreSQL:
 * IdempotencyStore (one claim per key, also under concurrency), BotDataStore (byte-wise key order,
 * compare-and-set versions, per-bot limits under the bot lock) and ReadMarkerStore (markers only move
 * forward in (created_at, id) order; capped unread counts per container kind).
 */
describe(`store contract: idempotency, bot data, read markers (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let w: Awaited<ReturnType<typeof openContractWorld>>;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close, orgId } = w);
  });
  afterAll(() => close());

  // --- idempotency ---

  const idem = () => storage.stores.idempotency;

  it('idempotency: claim once per key; the claim is pending until complete stores the answer', async () => {
    const key = `user:u1:${newId()}`;
    expect(await idem().claim(key, 'h1', at(0))).toBe(true);
    expect(await idem().claim(key, 'h2', at(1))).toBe(false);
    expect(await idem().get(key)).toEqual({
      key,
      request_hash: 'h1',
      state: 'pending',
      status_code: null,
      response: null,
      created_at: at(0),
    });
    await idem().complete(key, 201, '{"ok":true}');
    expect(await idem().get(key)).toMatchObject({
      state: 'done',
      status_code: 201,
      response: '{"ok":true}',
      request_hash: 'h1',
    });
    expect(await idem().get(newId())).toBeUndefined();
  });

  it('idempotency: concurrent claims of one key: exactly one wins', async () => {
    const key = `k-${newId()}`;
    const wins = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        storage.transaction((s) => s.idempotency.claim(key, `h${i}`, at(0))),
      ),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('idempotency: release removes only the same pending claim; deleteIfOlder and purgeOlderThan go by created_at', async () => {
    const key = `k-${newId()}`;
    await idem().claim(key, 'h', at(10));
    await idem().release(key, at(9)); // not this claim
    expect(await idem().get(key)).toBeDefined();
    await idem().release(key, at(10));
    expect(await idem().get(key)).toBeUndefined();
    // A completed record is not released.
    await idem().claim(key, 'h', at(20));
    await idem().complete(key, 200, '{}');
    await idem().release(key, at(20));
    expect((await idem().get(key))?.state).toBe('done');
    await idem().deleteIfOlder(key, at(20)); // created at 20: not older
    expect(await idem().get(key)).toBeDefined();
    await idem().deleteIfOlder(key, at(21));
    expect(await idem().get(key)).toBeUndefined();
    // purge: strictly before, counted.
    const prefix = `p-${newId()}`;
    await idem().claim(`${prefix}-1`, 'h', at(-5000));
    await idem().claim(`${prefix}-2`, 'h', at(-4000));
    await idem().claim(`${prefix}-3`, 'h', at(-3000));
    expect(await idem().purgeOlderThan(at(-3000))).toBe(2);
    expect(await idem().get(`${prefix}-3`)).toBeDefined();
    expect(await idem().purgeOlderThan(at(-3000))).toBe(0);
  });

  // --- bot data ---

  const data = () => storage.stores.botData;
  const doc = (botId: string, key: string, over: Partial<BotDataRow> = {}): BotDataRow => ({
    bot_id: botId,
    key,
    org_id: orgId,
    value: `"${key}"`,
    version: 1,
    created_at: at(0),
    updated_at: at(0),
    ...over,
  });

  it('bot data: insert once per (bot, key), get, count; other bots keep their own keys', async () => {
    const b = await w.bot();
    const other = await w.bot();
    expect(await data().insert(doc(b.id, 'a'))).toBe(true);
    expect(await data().insert(doc(b.id, 'a', { value: '"second"' }))).toBe(false);
    expect(await data().insert(doc(other.id, 'a'))).toBe(true);
    expect(await data().get(b.id, 'a')).toEqual(doc(b.id, 'a'));
    expect(await data().get(b.id, 'missing')).toBeUndefined();
    expect(await data().count(b.id)).toBe(1);
    expect(await data().count(newId())).toBe(0);
    // forUpdate inside a transaction answers the same row.
    expect(await storage.transaction((s) => s.botData.get(b.id, 'a', true))).toEqual(doc(b.id, 'a'));
  });

  it('bot data: list is in byte-wise key order on both databases (upper case before lower case, punctuation by code), by prefix, after a key, limited', async () => {
    const b = await w.bot();
    const keys = [
      'poll/b',
      'poll/B',
      'poll/a',
      'poll/_x',
      'poll/1',
      'poll/a.b',
      'poll/a-b',
      'poll/a:b',
      'polls',
      'pol',
      'other',
    ];
    for (const k of keys) await data().insert(doc(b.id, k));
    const list = async (o: { prefix: string; after?: string; limit?: number }) =>
      (await data().list(b.id, { limit: 100, ...o })).map((r) => r.key);
    const bytewise = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(bytewise.slice(0, 3)).toEqual(['other', 'pol', 'poll/1']);
    expect(await list({ prefix: '' })).toEqual(bytewise);
    expect(await list({ prefix: 'poll/' })).toEqual([
      'poll/1',
      'poll/B',
      'poll/_x',
      'poll/a',
      'poll/a-b',
      'poll/a.b',
      'poll/a:b',
      'poll/b',
    ]);
    expect(await list({ prefix: 'poll/a' })).toEqual(['poll/a', 'poll/a-b', 'poll/a.b', 'poll/a:b']);
    expect(await list({ prefix: 'poll/', after: 'poll/_x', limit: 3 })).toEqual([
      'poll/a',
      'poll/a-b',
      'poll/a.b',
    ]);
    expect(await list({ prefix: 'poll' })).toEqual([
      'poll/1',
      'poll/B',
      'poll/_x',
      'poll/a',
      'poll/a-b',
      'poll/a.b',
      'poll/a:b',
      'poll/b',
      'polls',
    ]);
    // '_' and '.' in a prefix are literal (no LIKE).
    expect(await list({ prefix: 'poll/_' })).toEqual(['poll/_x']);
    expect(await list({ prefix: 'zzz' })).toEqual([]);
    expect(await list({ prefix: '', after: 'polls' })).toEqual([]);
  });

  it('bot data: update is compare-and-set on the version (version + 1); concurrent writers of one version: one wins', async () => {
    const b = await w.bot();
    await data().insert(doc(b.id, 'k'));
    const upd = (version: number, value: string, now: string) =>
      storage.transaction((s) => s.botData.update(b.id, 'k', version, value, now));
    expect(await upd(1, '"v2"', at(5))).toEqual(
      doc(b.id, 'k', { value: '"v2"', version: 2, updated_at: at(5) }),
    );
    expect(await upd(1, '"stale"', at(6))).toBeUndefined();
    expect((await data().get(b.id, 'k'))?.value).toBe('"v2"');
    expect(await storage.transaction((s) => s.botData.update(b.id, 'nope', 1, '1', at(6)))).toBeUndefined();
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => upd(2, `"w${i}"`, at(7))));
    const winners = results.filter((r) => r !== undefined);
    expect(winners).toHaveLength(1);
    expect(await data().get(b.id, 'k')).toMatchObject({ version: 3, value: winners[0]!.value });
  });

  it('bot data: delete, optionally only at a version; says whether it deleted', async () => {
    const b = await w.bot();
    await data().insert(doc(b.id, 'x', { version: 4 }));
    await data().insert(doc(b.id, 'y'));
    expect(await data().delete(b.id, 'x', 3)).toBe(false);
    expect(await data().delete(b.id, 'x', 4)).toBe(true);
    expect(await data().delete(b.id, 'x')).toBe(false);
    expect(await data().delete(b.id, 'y')).toBe(true);
    expect(await data().count(b.id)).toBe(0);
  });

  it('bot data: count-then-insert under lockBot holds a per-bot limit of 3 against 8 concurrent writers', async () => {
    const b = await w.bot();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        storage.transaction(async (s) => {
          await s.botData.lockBot(b.id);
          if ((await s.botData.count(b.id)) >= 3) return false;
          return s.botData.insert(doc(b.id, `k${i}`));
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(await data().count(b.id)).toBe(3);
  });

  // --- read markers ---

  const markers = () => storage.stores.readMarkers;
  const marker = (userId: string, containerId: string, atS: number, msg: string | null): ReadMarkerRow => ({
    user_id: userId,
    container_type: 'channel',
    container_id: containerId,
    last_read_at: at(atS),
    last_read_message_id: msg,
    updated_at: at(atS),
  });

  it('read markers: advance creates, then moves only forward in (created_at, id) order; answers whether it moved', async () => {
    const u = await w.user();
    const c = newId();
    expect(await markers().get(u.id, 'channel', c)).toBeUndefined();
    expect(await markers().advance(marker(u.id, c, 10, null))).toBe(true);
    expect(await markers().advance(marker(u.id, c, 10, 'm-b'))).toBe(true); // same time, an id beats none
    expect(await markers().advance(marker(u.id, c, 10, 'm-b'))).toBe(false); // already there
    expect(await markers().advance(marker(u.id, c, 10, 'm-a'))).toBe(false); // same time, smaller id
    expect(await markers().advance(marker(u.id, c, 9, 'm-z'))).toBe(false); // earlier
    expect(await markers().get(u.id, 'channel', c)).toEqual(marker(u.id, c, 10, 'm-b'));
    expect(await markers().advance(marker(u.id, c, 11, 'm-a'))).toBe(true);
    expect(await markers().get(u.id, 'channel', c)).toEqual(marker(u.id, c, 11, 'm-a'));
    // Per (user, kind, container).
    expect(await markers().get(u.id, 'topic', c)).toBeUndefined();
  });

  it('read markers: racing advances (two tabs) end at the furthest position, whatever the order', async () => {
    const u = await w.user();
    const c = newId();
    const positions = [3, 7, 1, 9, 5, 8, 2].map((s) => marker(u.id, c, s, `m-${s}`));
    await Promise.all(positions.map((p) => storage.transaction((s) => s.readMarkers.advance(p))));
    expect((await markers().get(u.id, 'channel', c))?.last_read_message_id).toBe('m-9');
  });

  it('read markers: countOne counts messages after the marker (or from since), not deleted, not the user’s own, up to the cap', async () => {
    const u = await w.user();
    const c = await w.channel();
    const msgs = [];
    for (let i = 1; i <= 6; i++)
      msgs.push(await w.message({ channel_id: c.id }, { id: `cm-${i}-${newId()}`, created_at: at(i) }));
    await w.message({ channel_id: c.id }, { created_at: at(7), sender_id: u.id }); // own
    await w.message({ channel_id: c.id }, { created_at: at(8), deleted_at: at(9) }); // deleted
    expect(await markers().countOne(u.id, 'channel', c.id, at(0), 100)).toBe(6);
    // `since` without a marker: messages at that instant count too (4, 5, 6).
    expect(await markers().countOne(u.id, 'channel', c.id, at(4), 100)).toBe(3);
    expect(await markers().countOne(u.id, 'channel', c.id, at(0), 4)).toBe(4);
    // A marker at message 3 (its time and id): 4, 5, 6 remain; since is ignored.
    await markers().advance({ ...marker(u.id, c.id, 3, msgs[2]!.id) });
    expect(await markers().countOne(u.id, 'channel', c.id, at(0), 100)).toBe(3);
    // Same created_at, larger id after the marker counts.
    await w.message({ channel_id: c.id }, { id: `${msgs[2]!.id}z`, created_at: at(3) });
    expect(await markers().countOne(u.id, 'channel', c.id, at(0), 100)).toBe(4);
    expect(await markers().countOne(u.id, 'channel', newId(), at(0), 100)).toBe(0);
  });

  it('read markers: unread per kind — joined channels from joined_at, public channels with a marker, private ones only for admins; only containers with unread, by id', async () => {
    const u = await w.user();
    const joined = await w.channel();
    const pubMarked = await w.channel();
    const privMarked = await w.channel(true);
    const quiet = await w.channel();
    await storage.stores.containers.addMember('channel', joined.id, { type: 'user', id: u.id }, at(5));
    await storage.stores.containers.addMember('channel', quiet.id, { type: 'user', id: u.id }, at(5));
    for (const c of [joined, pubMarked, privMarked])
      for (let i = 1; i <= 4; i++) await w.message({ channel_id: c.id }, { created_at: at(2 * i) }); // 2, 4, 6, 8
    await w.message({ channel_id: quiet.id }, { created_at: at(9), sender_id: u.id });
    await markers().advance(marker(u.id, pubMarked.id, 2, null));
    await markers().advance(marker(u.id, privMarked.id, 2, null));
    const view = { userId: u.id, orgId, orgAdmin: false };
    const rows = await markers().unread('channel', view, 100);
    const expected = [
      {
        container_type: 'channel',
        container_id: joined.id,
        unread: 2,
        last_read_at: null,
        last_read_message_id: null,
      },
      {
        container_type: 'channel',
        container_id: pubMarked.id,
        // A marker without a message id: messages at its instant are unread (2, 4, 6, 8).
        unread: 4,
        last_read_at: at(2),
        last_read_message_id: null,
      },
    ].sort((a, b) => (a.container_id < b.container_id ? -1 : 1));
    expect(rows).toEqual(expected);
    const admin = await markers().unread('channel', { ...view, orgAdmin: true }, 2);
    expect(admin.map((r) => [r.container_id, r.unread])).toEqual(
      [
        [joined.id, 2],
        [pubMarked.id, 2],
        [privMarked.id, 2],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
    // Another organization's view sees none of the marked ones it has not joined.
    const elsewhere = await markers().unread('channel', { ...view, orgId: newId() }, 100);
    expect(elsewhere.map((r) => r.container_id)).toEqual([joined.id]);
  });

  it('read markers: unread topics (project members; admins also marked topics) and DM rooms', async () => {
    const u = await w.user();
    const member = await w.projectWithTopic();
    const foreign = await w.projectWithTopic();
    await storage.stores.containers.addMember(
      'project',
      member.project.id,
      { type: 'user', id: u.id },
      at(0),
    );
    for (const t of [member.topic, foreign.topic]) await w.message({ topic_id: t.id }, { created_at: at(3) });
    await markers().advance({ ...marker(u.id, foreign.topic.id, 1, null), container_type: 'topic' });
    const view = { userId: u.id, orgId, orgAdmin: false };
    expect((await markers().unread('topic', view, 10)).map((r) => [r.container_id, r.unread])).toEqual([
      [member.topic.id, 1],
    ]);
    const asAdmin = await markers().unread('topic', { ...view, orgAdmin: true }, 10);
    expect(asAdmin.map((r) => r.container_id).sort()).toEqual([member.topic.id, foreign.topic.id].sort());
    const members = [
      { type: 'user' as const, id: u.id },
      { type: 'bot' as const, id: newId() },
    ];
    const { room } = await storage.transaction((s) =>
      s.containers.createDmRoomOnce(
        { id: newId(), org_id: orgId, member_key: dmMemberKey(members), created_at: at(0) },
        members,
      ),
    );
    await w.message({ dm_room_id: room.id }, { created_at: at(1) });
    await w.message({ dm_room_id: room.id }, { created_at: at(2) });
    expect(await markers().unread('dm_room', view, 10)).toEqual([
      {
        container_type: 'dm_room',
        container_id: room.id,
        unread: 2,
        last_read_at: null,
        last_read_message_id: null,
      },
    ]);
    await markers().advance({ ...marker(u.id, room.id, 2, 'zzzz'), container_type: 'dm_room' });
    expect(await markers().unread('dm_room', view, 10)).toEqual([]);
  });
});
