import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { FileRow, TaskRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import { at, dialectName, openContractWorld } from './helpers/store-fixtures.js';

/**
 * Contract of BookmarkStore, FileStore and TaskStore on SQLite and PostgreSQL: uniqueness, ordering
 * (ties broken by id), time ranges, deleted rows hidden, case-insensitive name matching where LIKE
 * wildcards in user text are literal.
 */
describe(`store contract: bookmarks, files, tasks (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let w: Awaited<ReturnType<typeof openContractWorld>>;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close, orgId } = w);
  });
  afterAll(() => close());

  it('bookmarks: one per (user, message); listed by created_at then id, both directions, by user and time range; deleted messages hidden', async () => {
    const c = await w.channel();
    const u1 = await w.user();
    const u2 = await w.user();
    const m1 = await w.message({ channel_id: c.id }, { content: 'one', created_at: at(1) });
    const m2 = await w.message({ channel_id: c.id }, { content: 'two', created_at: at(2) });
    const m3 = await w.message({ channel_id: c.id }, { content: 'three', created_at: at(3) });
    const bm = (id: string, userId: string, messageId: string, s: number) => ({
      id,
      org_id: orgId,
      user_id: userId,
      channel_id: c.id,
      message_id: messageId,
      created_at: at(s),
    });
    await storage.stores.bookmarks.insert(bm('bm-a', u1.id, m1.id, 10));
    await storage.stores.bookmarks.insert(bm('bm-b', u1.id, m2.id, 20));
    await storage.stores.bookmarks.insert(bm('bm-c', u2.id, m2.id, 20));
    await storage.stores.bookmarks.insert(bm('bm-d', u1.id, m3.id, 30));
    const dup = await storage.stores.bookmarks.insert(bm(newId(), u1.id, m1.id, 40)).then(
      () => 'inserted',
      () => 'refused',
    );
    expect(dup).toBe('refused');
    expect(await storage.stores.bookmarks.get(u1.id, m1.id)).toEqual(bm('bm-a', u1.id, m1.id, 10));
    expect(await storage.stores.bookmarks.get(u2.id, m1.id)).toBeUndefined();
    const ids = async (f: Partial<Parameters<Storage['stores']['bookmarks']['list']>[0]>) =>
      (await storage.stores.bookmarks.list({ channelId: c.id, sort: 'asc', limit: 10, ...f })).map(
        (b) => b.id,
      );
    expect(await ids({})).toEqual(['bm-a', 'bm-b', 'bm-c', 'bm-d']);
    expect(await ids({ sort: 'desc' })).toEqual(['bm-d', 'bm-c', 'bm-b', 'bm-a']);
    expect(await ids({ userId: u1.id, limit: 2 })).toEqual(['bm-a', 'bm-b']);
    expect(await ids({ from: at(20), toExclusive: at(30) })).toEqual(['bm-b', 'bm-c']);
    const [first] = await storage.stores.bookmarks.list({ channelId: c.id, sort: 'asc', limit: 1 });
    expect(first).toEqual({
      ...bm('bm-a', u1.id, m1.id, 10),
      message: { content: 'one', sender_type: 'user', sender_id: m1.sender_id, created_at: at(1) },
    });
    await storage.stores.messages.softDelete(m2.id, at(50));
    expect(await ids({})).toEqual(['bm-a', 'bm-d']);
    expect(await storage.stores.bookmarks.delete(u1.id, c.id, m1.id)).toBe(true);
    expect(await storage.stores.bookmarks.delete(u1.id, c.id, m1.id)).toBe(false);
    expect(await storage.stores.bookmarks.delete(u1.id, newId(), m3.id)).toBe(false); // wrong channel
    expect(await ids({})).toEqual(['bm-d']);
  });

  const file = (channelId: string, over: Partial<FileRow> = {}): FileRow => ({
    id: newId(),
    org_id: orgId,
    channel_id: channelId,
    topic_id: null,
    dm_room_id: null,
    uploader_type: 'user',
    uploader_id: 'u',
    filename: 'f.txt',
    content_type: 'text/plain',
    kind: 'document',
    size: 1,
    sha256: 'x',
    storage_path: 'p',
    created_at: at(0),
    deleted_at: null,
    ...over,
  });

  it('files: get hides deleted; listInChannel sorts by name case-insensitively, size or time (ties by id), filters by kind and literal name text, pages', async () => {
    const c = await w.channel();
    const rows = [
      file(c.id, { id: 'f-1', filename: 'beta.PNG', kind: 'image', size: 30, created_at: at(3) }),
      file(c.id, { id: 'f-2', filename: 'Alpha.txt', size: 10, created_at: at(1) }),
      file(c.id, { id: 'f-3', filename: 'gamma_100%.pdf', size: 20, created_at: at(2) }),
      file(c.id, { id: 'f-4', filename: 'gamma-100x.pdf', size: 20, created_at: at(2) }),
      file(c.id, { id: 'f-5', filename: 'deleted.txt', deleted_at: at(9) }),
    ];
    for (const r of rows) await storage.stores.files.insert(r);
    await storage.stores.files.insert(file((await w.channel()).id, { filename: 'elsewhere.txt' }));
    expect(await storage.stores.files.get('f-2')).toEqual(rows[1]);
    expect(await storage.stores.files.get('f-5')).toBeUndefined();
    const ids = async (f: Partial<Parameters<Storage['stores']['files']['listInChannel']>[0]>) =>
      (
        await storage.stores.files.listInChannel({
          channelId: c.id,
          sort: 'created_at',
          order: 'asc',
          limit: 10,
          offset: 0,
          ...f,
        })
      ).map((x) => x.id);
    expect(await ids({ sort: 'filename' })).toEqual(['f-2', 'f-1', 'f-4', 'f-3']);
    expect(await ids({ sort: 'filename', order: 'desc' })).toEqual(['f-3', 'f-4', 'f-1', 'f-2']);
    expect(await ids({ sort: 'size' })).toEqual(['f-2', 'f-3', 'f-4', 'f-1']);
    expect(await ids({ sort: 'created_at', order: 'desc' })).toEqual(['f-1', 'f-4', 'f-3', 'f-2']);
    expect(await ids({ sort: 'size', limit: 2, offset: 1 })).toEqual(['f-3', 'f-4']);
    expect(await ids({ kind: 'image' })).toEqual(['f-1']);
    expect(await ids({ query: 'ALPHA' })).toEqual(['f-2']);
    expect(await ids({ query: '_100%' })).toEqual(['f-3']); // wildcards are literal
    expect(await ids({ query: 'png' })).toEqual(['f-1']);
    const [listed] = await storage.stores.files.listInChannel({
      channelId: c.id,
      sort: 'size',
      order: 'desc',
      limit: 1,
      offset: 0,
    });
    expect(listed).toEqual({
      id: 'f-1',
      uploader_type: 'user',
      uploader_id: 'u',
      filename: 'beta.PNG',
      content_type: 'text/plain',
      kind: 'image',
      size: 30,
      sha256: 'x',
      created_at: at(3),
    });
  });

  const task = (topicId: string, over: Partial<TaskRow> = {}): TaskRow => ({
    id: newId(),
    org_id: orgId,
    topic_id: topicId,
    title: 'Task',
    description: '',
    priority: 'medium',
    status: 'open',
    assignee_id: null,
    due_date: null,
    created_by_type: 'user',
    created_by_id: 'u',
    created_at: at(0),
    updated_at: at(0),
    ...over,
  });

  it('tasks: update patches and stamps; list newest first (ties by id) with status and assignee filters; search in title or description of given topics', async () => {
    const { topic } = await w.projectWithTopic();
    const { topic: other } = await w.projectWithTopic();
    const t1 = task(topic.id, { id: 't-1', title: 'Write REPORT', created_at: at(1), updated_at: at(1) });
    const t2 = task(topic.id, {
      id: 't-2',
      description: 'about the report_v2',
      created_at: at(2),
      updated_at: at(2),
    });
    const t3 = task(topic.id, {
      id: 't-3',
      status: 'done',
      assignee_id: 'a',
      created_at: at(2),
      updated_at: at(3),
    });
    const t4 = task(other.id, { id: 't-4', title: 'report elsewhere', updated_at: at(4) });
    for (const t of [t1, t2, t3, t4]) await storage.stores.tasks.insert(t);
    await storage.stores.tasks.update(
      't-1',
      { status: 'done', assignee_id: 'a', due_date: '2030-02-01' },
      at(10),
    );
    expect(await storage.stores.tasks.get('t-1')).toEqual({
      ...t1,
      status: 'done',
      assignee_id: 'a',
      due_date: '2030-02-01',
      updated_at: at(10),
    });
    expect(await storage.stores.tasks.get(newId())).toBeUndefined();
    const list = async (f: { status?: string; assigneeId?: string; limit?: number }) =>
      (await storage.stores.tasks.list(topic.id, { limit: 10, ...f })).map((t) => t.id);
    expect(await list({})).toEqual(['t-3', 't-2', 't-1']);
    expect(await list({ limit: 1 })).toEqual(['t-3']);
    expect(await list({ status: 'done' })).toEqual(['t-3', 't-1']);
    expect(await list({ status: 'open' })).toEqual(['t-2']);
    expect(await list({ assigneeId: 'a', status: 'done' })).toEqual(['t-3', 't-1']);
    const search = async (topics: string[], q: string, limit = 10) =>
      (await storage.stores.tasks.search(topics, q, limit)).map((t) => t.id);
    // Newest change first.
    expect(await search([topic.id, other.id], 'report')).toEqual(['t-1', 't-4', 't-2']);
    expect(await search([topic.id], 'report')).toEqual(['t-1', 't-2']);
    expect(await search([topic.id], 'report', 1)).toEqual(['t-1']);
    expect(await search([topic.id], 'report_')).toEqual(['t-2']); // '_' is literal
    expect(await search([topic.id], '%')).toEqual([]);
    expect(await search([], 'report')).toEqual([]);
  });

  // Known SQLite difference (reported, not fixed: the fix is not in a store file): containsInsensitive
  // (stores/sql-helpers.ts) compares lower(column) with the JavaScript-lowercased text, and SQLite's
  // lower() folds ASCII only, while PostgreSQL's folds every letter. So on SQLite a search for "émile"
  // does not find "Émile-Übersicht.pdf" (files, tasks, users, directory); on PostgreSQL it does. Run it
  // on SQLite with WORKROOM_TEST_KNOWN_BUGS=1.
  it.skipIf(!process.env.DATABASE_URL && !process.env.WORKROOM_TEST_KNOWN_BUGS)(
    'case-insensitive name matching folds non-ASCII letters too (Émile matches émile and ÉMILE)',
    async () => {
      const c = await w.channel();
      await storage.stores.files.insert(file(c.id, { id: `u-${newId()}`, filename: 'Émile-Übersicht.pdf' }));
      const find = async (query: string) =>
        (
          await storage.stores.files.listInChannel({
            channelId: c.id,
            query,
            sort: 'created_at',
            order: 'asc',
            limit: 10,
            offset: 0,
          })
        ).length;
      expect(await find('émile')).toBe(1);
      expect(await find('ÜBERSICHT')).toBe(1);
    },
  );

  it('reactions: summarize groups by message, emoji in first-used order, reactors capped at 50 with exact counts; any number of messages (prepared per list length, built beyond 200)', async () => {
    const c = await w.channel();
    const messages = [];
    for (let i = 0; i < 3; i++)
      messages.push(await w.message({ channel_id: c.id }, { content: `r${i}`, created_at: at(100 + i) }));
    const [m0, m1, m2] = messages.map((m) => m.id) as [string, string, string];
    const react = (messageId: string, emoji: string, id: string, s: number) =>
      storage.stores.reactions.add({
        message_id: messageId,
        emoji,
        reactor_type: 'user',
        reactor_id: id,
        org_id: orgId,
        created_at: at(s),
      });
    await react(m0, '👍', 'u-b', 1);
    await react(m0, '🎉', 'u-a', 2);
    await react(m0, '👍', 'u-a', 3);
    for (let i = 0; i < 55; i++) await react(m1, '✅', `u-${String(i).padStart(2, '0')}`, 10);
    const summary = await storage.stores.reactions.summarize([m0, m1, m2]);
    expect(summary.get(m0)).toEqual([
      {
        emoji: '👍',
        count: 2,
        reactors: [
          { type: 'user', id: 'u-b' },
          { type: 'user', id: 'u-a' },
        ],
      },
      { emoji: '🎉', count: 1, reactors: [{ type: 'user', id: 'u-a' }] },
    ]);
    expect(summary.get(m1)![0]!.count).toBe(55);
    expect(summary.get(m1)![0]!.reactors.map((r) => r.id)).toEqual(
      Array.from({ length: 50 }, (_, i) => `u-${String(i).padStart(2, '0')}`),
    );
    expect(summary.has(m2)).toBe(false);
    // One id, the same ids again (the statement for 3 is reused), and 250 (past the prepared lengths).
    expect((await storage.stores.reactions.summarize([m2])).size).toBe(0);
    expect(await storage.stores.reactions.summarize([m2, m1, m0])).toEqual(summary);
    const many = [...Array.from({ length: 248 }, () => newId()), m0, m1];
    expect(await storage.stores.reactions.summarize(many)).toEqual(
      new Map([
        [m0, summary.get(m0)],
        [m1, summary.get(m1)],
      ]),
    );
  });
});
