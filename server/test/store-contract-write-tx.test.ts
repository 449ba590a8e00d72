import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { MessageRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import { chunks, combineStatements } from '../src/storage/pg-deferred-transaction.js';
import { at, dialectName, openContractWorld } from './helpers/store-fixtures.js';

/**
 * Write transactions on both databases, as operations use them. On PostgreSQL a transaction holds its
 * deferrable INSERTs (a message, its outbox event) and sends them with the next statement, or as one
 * statement when nothing else comes (storage/pg-deferred-transaction.ts); these cases pin down that
 * nothing an operation can observe changes: every statement sees what came before it, a failure
 * anywhere writes nothing, and concurrent transactions stay apart.
 */
describe(`store contract: write transactions (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let w: Awaited<ReturnType<typeof openContractWorld>>;
  let channelId: string;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close, orgId } = w);
    channelId = (await w.channel()).id;
  });
  afterAll(() => close());

  const messageRow = (content: string, over: Partial<MessageRow> = {}): MessageRow => ({
    id: newId(),
    org_id: orgId,
    channel_id: channelId,
    topic_id: null,
    dm_room_id: null,
    sender_type: 'user',
    sender_id: newId(),
    bot_id: null,
    content,
    content_html: null,
    actions: null,
    created_at: at(1),
    edited_at: null,
    deleted_at: null,
    ...over,
  });
  const eventRow = (type = 'message.created') => ({
    id: newId(),
    org_id: orgId,
    type,
    data: '{}',
    created_at: at(1),
  });
  const eventExists = async (id: string) =>
    (await storage.stores.db.selectFrom('events').select('id').where('id', '=', id).executeTakeFirst()) !==
    undefined;

  it('a message and its events commit together (inserts only: one statement on PostgreSQL)', async () => {
    const m = messageRow('together');
    const e1 = eventRow();
    const e2 = eventRow('resources.changed');
    const value = await storage.transaction(async (s) => {
      await s.messages.insert(m);
      await s.events.append([e1, e2]);
      return 'done';
    });
    expect(value).toBe('done');
    expect((await storage.stores.messages.get(m.id))?.content).toBe('together');
    expect(await eventExists(e1.id)).toBe(true);
    expect(await eventExists(e2.id)).toBe(true);
  });

  it('a statement after held inserts sees them (read-your-writes inside the transaction)', async () => {
    const m = messageRow('seen inside');
    const seen = await storage.transaction(async (s) => {
      await s.messages.insert(m);
      const again = await s.messages.get(m.id);
      await s.events.append([eventRow()]);
      return again?.content;
    });
    expect(seen).toBe('seen inside');
    expect((await storage.stores.messages.get(m.id))?.content).toBe('seen inside');
  });

  it('a transaction that throws after its inserts writes nothing', async () => {
    const m = messageRow('thrown');
    const e = eventRow();
    await expect(
      storage.transaction(async (s) => {
        await s.messages.insert(m);
        await s.events.append([e]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await storage.stores.messages.get(m.id)).toBeUndefined();
    expect(await eventExists(e.id)).toBe(false);
  });

  it('a failing held insert fails the transaction and leaves nothing behind, also after a read', async () => {
    const existing = messageRow('first');
    await storage.transaction(async (s) => s.messages.insert(existing));
    // The same id again: a primary-key violation, thrown by the insert (SQLite) or by the commit
    // (PostgreSQL: the statement was held); either way the event must not stay.
    const e = eventRow();
    await expect(
      storage.transaction(async (s) => {
        await s.messages.insert({ ...existing, content: 'duplicate' });
        await s.events.append([e]);
      }),
    ).rejects.toThrow();
    expect(await eventExists(e.id)).toBe(false);
    const e2 = eventRow();
    await expect(
      storage.transaction(async (s) => {
        await s.events.append([e2]);
        await s.messages.insert({ ...existing, content: 'duplicate' });
        await s.messages.get(existing.id); // a read: the held statements go first, and fail
      }),
    ).rejects.toThrow();
    expect(await eventExists(e2.id)).toBe(false);
    expect((await storage.stores.messages.get(existing.id))?.content).toBe('first');
  });

  it('a transaction with only reads, or nothing at all, commits and returns its value', async () => {
    expect(await storage.transaction(async () => 7)).toBe(7);
    const m = messageRow('read only');
    await storage.transaction(async (s) => s.messages.insert(m));
    expect(await storage.transaction(async (s) => (await s.messages.get(m.id))?.content)).toBe('read only');
  });

  it('concurrent transactions each commit their own rows (50 at once)', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => messageRow(`concurrent ${i}`));
    const events = rows.map(() => eventRow());
    await Promise.all(
      rows.map((m, i) =>
        storage.transaction(async (s) => {
          await s.messages.insert(m);
          await s.events.append([events[i]!]);
        }),
      ),
    );
    for (const [i, m] of rows.entries()) {
      expect((await storage.stores.messages.get(m.id))?.content).toBe(`concurrent ${i}`);
      expect(await eventExists(events[i]!.id)).toBe(true);
    }
  });

  it('several events of one transaction keep the order they were made in (seq), with or without other statements', async () => {
    for (const withRead of [false, true]) {
      const m = messageRow('ordered');
      const events = [1, 2, 3].map((n) => ({ ...eventRow(), data: JSON.stringify({ n, withRead }) }));
      await storage.transaction(async (s) => {
        await s.messages.insert(m);
        if (withRead) await s.messages.get(m.id);
        await s.events.append(events);
      });
      const rows = await storage.stores.db
        .selectFrom('events')
        .select(['id', 'seq'])
        .where(
          'id',
          'in',
          events.map((e) => e.id),
        )
        .orderBy('seq')
        .execute();
      expect(rows.map((r) => r.id)).toEqual(events.map((e) => e.id));
    }
  });

  it('held statements split into runs of distinct SQL, in order', () => {
    const a = (n: number) => ({ sql: 'insert into a (x) values ($1)', parameters: [n] });
    const b = (n: number) => ({ sql: 'insert into b (x) values ($1)', parameters: [n] });
    expect(chunks([a(1), b(2), a(3), a(4), b(5)])).toEqual([[a(1), b(2)], [a(3)], [a(4), b(5)]]);
    expect(chunks([b(1)])).toEqual([[b(1)]]);
    expect(chunks([])).toEqual([]);
  });

  it('combined statements renumber their parameters in order', () => {
    expect(
      combineStatements([
        { sql: 'insert into a (x, y) values ($1, $2)', parameters: [1, 2] },
        { sql: 'insert into b (x) values ($1)', parameters: [3] },
        { sql: 'insert into c (x, y, z) values ($1, $2, $3)', parameters: [4, 5, 6] },
      ]),
    ).toEqual({
      sql: 'with w0 as (insert into a (x, y) values ($1, $2)), w1 as (insert into b (x) values ($3)) insert into c (x, y, z) values ($4, $5, $6)',
      parameters: [1, 2, 3, 4, 5, 6],
    });
    // The text is made once per sequence of texts; the parameters are each call's own.
    expect(
      combineStatements([
        { sql: 'insert into a (x, y) values ($1, $2)', parameters: [7, 8] },
        { sql: 'insert into b (x) values ($1)', parameters: [9] },
        { sql: 'insert into c (x, y, z) values ($1, $2, $3)', parameters: [10, 11, 12] },
      ]),
    ).toEqual({
      sql: 'with w0 as (insert into a (x, y) values ($1, $2)), w1 as (insert into b (x) values ($3)) insert into c (x, y, z) values ($4, $5, $6)',
      parameters: [7, 8, 9, 10, 11, 12],
    });
    expect(
      combineStatements([
        { sql: 'insert into b (x) values ($1)', parameters: [1] },
        { sql: 'insert into a (x, y) values ($1, $2)', parameters: [2, 3] },
      ]),
    ).toEqual({
      sql: 'with w0 as (insert into b (x) values ($1)) insert into a (x, y) values ($2, $3)',
      parameters: [1, 2, 3],
    });
    const one = { sql: 'insert into a (x) values ($1)', parameters: ['v'] };
    expect(combineStatements([one])).toBe(one);
  });
});
