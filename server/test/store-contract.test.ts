import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../src/domain/ids.js';
import { hashSecret } from '../src/domain/secrets.js';
import { isUniqueViolation } from '../src/storage/database.js';
import type { MessageRow, UserRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import { dmMemberKey } from '../src/storage/stores/containers.js';
import { openTestStorage } from './helpers/storage.js';

/**
 * One contract for the stores, run on SQLite (default) and PostgreSQL (DATABASE_URL): both dialects
 * must behave the same for every store method the operations rely on.
 */
describe(`store contract (${process.env.DATABASE_URL ? 'postgres' : 'sqlite'})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;

  beforeAll(async () => {
    ({ storage, close } = await openTestStorage());
    orgId = (await storage.stores.orgs.create('Acme')).id;
  });
  afterAll(() => close());

  const user = (over: Partial<UserRow> = {}): UserRow => {
    const now = nowIso();
    return {
      id: newId(),
      org_id: orgId,
      email: `${newId()}@t.local`,
      display_name: 'User',
      role: 'member',
      status: 'active',
      department_id: null,
      password_hash: 'x',
      created_at: now,
      updated_at: now,
      ...over,
    };
  };

  const channel = async (isPrivate = false) => {
    const now = nowIso();
    const row = {
      id: newId(),
      org_id: orgId,
      name: `c-${newId()}`,
      description: '',
      is_private: isPrivate ? 1 : 0,
      created_by: null,
      created_at: now,
      updated_at: now,
    };
    await storage.stores.containers.createChannel(row);
    return row;
  };

  /** An active custom bot with one live key whose hash is `hashSecret(key)`. */
  const botWithKey = async (key: string, scopes: string | null) => {
    const now = nowIso();
    const bot = {
      id: newId(),
      org_id: orgId,
      type: 'custom' as const,
      name: 'b',
      description: '',
      webhook_url: null,
      events: '[]',
      created_by: null,
      status: 'active' as const,
      builtin: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    await storage.stores.bots.insert(bot);
    const keyId = newId();
    await storage.stores.bots.insertKey({
      id: keyId,
      bot_id: bot.id,
      key_hash: hashSecret(key),
      key_prefix: 'wrbk_x',
      key_type: 'live',
      scopes,
      expires_at: null,
      created_by: null,
      created_at: now,
      last_used_at: null,
      use_count: 0,
      revoked_at: null,
      grants: null,
    });
    return { bot, keyId };
  };

  const message = (channelId: string, over: Partial<MessageRow> = {}): MessageRow => ({
    id: newId(),
    org_id: orgId,
    channel_id: channelId,
    topic_id: null,
    dm_room_id: null,
    sender_type: 'user',
    sender_id: newId(),
    bot_id: null,
    content: 'hello',
    content_html: null,
    actions: null,
    created_at: nowIso(),
    edited_at: null,
    deleted_at: null,
    ...over,
  });

  it('organizations: create, get, count, list', async () => {
    const o = await storage.stores.orgs.create('Beta');
    expect(await storage.stores.orgs.get(o.id)).toEqual(o);
    expect(await storage.stores.orgs.count()).toBeGreaterThanOrEqual(2);
    expect((await storage.stores.orgs.list()).map((x) => x.id)).toContain(o.id);
    expect(await storage.stores.orgs.get(newId())).toBeUndefined();
  });

  it('departments: find-or-create is idempotent, also when racing', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () => storage.stores.orgs.findOrCreateDepartment(orgId, 'Research')),
    );
    expect(new Set(results.map((d) => d.id)).size).toBe(1);
  });

  it('users: department name resolved, email lookup case-insensitive, duplicates are unique violations', async () => {
    const dept = await storage.stores.orgs.findOrCreateDepartment(orgId, 'Platform Engineering');
    const u = user({ email: 'mixed@t.local', department_id: dept.id, display_name: 'Zed' });
    await storage.stores.users.create(u);
    const got = await storage.stores.users.get(u.id);
    expect(got).toMatchObject({ id: u.id, department: 'Platform Engineering' });
    expect((await storage.stores.users.getByEmail('MIXED@t.local'))?.id).toBe(u.id);
    const dup = await storage.stores.users.create(user({ email: 'mixed@t.local' })).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isUniqueViolation(dup)).toBe(true);
  });

  it('users: list filters by partial department (case-insensitive), role and text; LIKE wildcards are literal', async () => {
    const d = await storage.stores.orgs.findOrCreateDepartment(orgId, 'Sales_EMEA 100%');
    await storage.stores.users.create(
      user({ department_id: d.id, role: 'dept_admin', display_name: 'Ann 50%' }),
    );
    await storage.stores.users.create(user({ department_id: d.id, display_name: 'Bob' }));
    const base = { orgId, limit: 50 };
    expect((await storage.stores.users.list({ ...base, department: 'emea' })).length).toBe(2);
    expect(
      (await storage.stores.users.list({ ...base, department: 'emea', role: 'dept_admin' })).map(
        (u) => u.display_name,
      ),
    ).toEqual(['Ann 50%']);
    expect((await storage.stores.users.list({ ...base, department: '100%' })).length).toBe(2);
    expect((await storage.stores.users.list({ ...base, department: 's_e' })).length).toBe(2);
    expect((await storage.stores.users.list({ ...base, department: 'sxe' })).length).toBe(0);
    expect((await storage.stores.users.list({ ...base, query: '%' })).map((u) => u.display_name)).toEqual([
      'Ann 50%',
    ]);
    expect((await storage.stores.users.list({ ...base, query: '_' })).length).toBe(0);
    const page = await storage.stores.users.list({ ...base, limit: 1, offset: 1 });
    expect(page).toHaveLength(1);
  });

  it('tokens: found while valid; not when revoked or expired', async () => {
    const u = user();
    await storage.stores.users.create(u);
    const mk = async (expires: string) => {
      const token = newId();
      const id = newId();
      await storage.stores.users.createToken({
        id,
        user_id: u.id,
        token_hash: hashSecret(token),
        created_at: nowIso(),
        expires_at: expires,
        revoked_at: null,
      });
      return { token, id };
    };
    const now = nowIso();
    const valid = await mk(new Date(Date.now() + 60_000).toISOString());
    const expired = await mk(new Date(Date.now() - 60_000).toISOString());
    expect((await storage.stores.users.findByToken(hashSecret(valid.token), now))?.user_id).toBe(u.id);
    expect(await storage.stores.users.findByToken(hashSecret(expired.token), now)).toBeUndefined();
    await storage.stores.users.revokeToken(valid.id, now);
    expect(await storage.stores.users.findByToken(hashSecret(valid.token), now)).toBeUndefined();
  });

  it('credential with channel: a token or key and a channel with the caller’s membership in one read; the credential’s rules unchanged', async () => {
    const now = nowIso();
    const u = user();
    await storage.stores.users.create(u);
    const tokenId = newId();
    await storage.stores.users.createToken({
      id: tokenId,
      user_id: u.id,
      token_hash: hashSecret('t-with-channel'),
      created_at: now,
      expires_at: new Date(Date.now() + 60_000).toISOString(),
      revoked_at: null,
    });
    const { bot } = await botWithKey('k-with-channel', null);
    const joined = await channel(true);
    const other = await channel(false);
    await storage.stores.containers.addMember('channel', joined.id, { type: 'user', id: u.id }, now);
    await storage.stores.containers.addMember('channel', other.id, { type: 'bot', id: bot.id }, now);
    const { users, bots } = storage.stores;
    const asUser = (channelId: string) =>
      users.findByTokenWithChannel(hashSecret('t-with-channel'), now, channelId);
    const asBot = (channelId: string) =>
      bots.findKeyByHashWithChannel(hashSecret('k-with-channel'), channelId);

    // The same credential row as the lookup alone, and the channel as getChannelFor reads it.
    const token = await users.findByToken(hashSecret('t-with-channel'), now);
    expect((await asUser(joined.id))?.token).toMatchObject(token!);
    expect((await asUser(joined.id))?.channel).toEqual(
      await storage.stores.containers.getChannelFor(joined.id, { type: 'user', id: u.id }),
    );
    expect((await asUser(joined.id))?.channel).toMatchObject({
      id: joined.id,
      is_private: 1,
      is_member: true,
    });
    expect((await asUser(other.id))?.channel).toMatchObject({
      id: other.id,
      org_id: orgId,
      is_member: false,
    });
    expect((await asBot(other.id))?.key).toMatchObject(
      (await bots.findKeyByHash(hashSecret('k-with-channel')))!,
    );
    expect((await asBot(other.id))?.channel).toEqual(
      await storage.stores.containers.getChannelFor(other.id, { type: 'bot', id: bot.id }),
    );
    expect((await asBot(joined.id))?.channel?.is_member).toBe(false);
    // An unknown channel: the credential, no channel. An unknown credential: nothing.
    expect(await asUser(newId())).toMatchObject({ token: { user_id: u.id }, channel: undefined });
    expect(await asBot(newId())).toMatchObject({ key: { bot_id: bot.id }, channel: undefined });
    expect(await users.findByTokenWithChannel(hashSecret('nope'), now, joined.id)).toBeUndefined();
    expect(await bots.findKeyByHashWithChannel(hashSecret('nope'), joined.id)).toBeUndefined();
    // Membership and revocation are read as they are now, not as they were.
    await storage.stores.containers.removeMember('channel', joined.id, { type: 'user', id: u.id });
    expect((await asUser(joined.id))?.channel?.is_member).toBe(false);
    expect(
      await users.findByTokenWithChannel(hashSecret('t-with-channel'), '9999-01-01T00:00:00.000Z', joined.id),
    ).toBeUndefined();
    await users.revokeToken(tokenId, now);
    expect(await asUser(joined.id)).toBeUndefined();
  });

  it('memberships: add is idempotent, remove reports what it did', async () => {
    const c = await channel();
    const m = { type: 'user' as const, id: newId() };
    const now = nowIso();
    expect(await storage.stores.containers.addMember('channel', c.id, m, now)).toBe(true);
    expect(await storage.stores.containers.addMember('channel', c.id, m, now)).toBe(false);
    expect(await storage.stores.containers.isMember('channel', c.id, m)).toBe(true);
    expect(await storage.stores.containers.isMember('channel', c.id, { type: 'bot', id: m.id })).toBe(false);
    expect(await storage.stores.containers.listMembers('channel', c.id)).toHaveLength(1);
    expect(await storage.stores.containers.removeMember('channel', c.id, m)).toBe(true);
    expect(await storage.stores.containers.removeMember('channel', c.id, m)).toBe(false);
  });

  it('channels: users see public ones and private ones they belong to; bots only their own', async () => {
    const viewer = { type: 'user' as const, id: newId() };
    const pub = await channel(false);
    const priv = await channel(true);
    const privMember = await channel(true);
    await storage.stores.containers.addMember('channel', privMember.id, viewer, nowIso());
    const seen = (await storage.stores.containers.listChannels(orgId, viewer, { onlyMemberOf: false })).map(
      (c) => c.id,
    );
    expect(seen).toContain(pub.id);
    expect(seen).toContain(privMember.id);
    expect(seen).not.toContain(priv.id);
    const own = (await storage.stores.containers.listChannels(orgId, viewer, { onlyMemberOf: true })).map(
      (c) => c.id,
    );
    expect(own).toEqual([privMember.id]);
  });

  it('DM rooms: concurrent creation of the same member set yields one room', async () => {
    const members = [
      { type: 'user' as const, id: newId() },
      { type: 'bot' as const, id: newId() },
    ];
    const key = dmMemberKey(members);
    expect(dmMemberKey([...members].reverse())).toBe(key);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        storage.transaction((s) =>
          s.containers.createDmRoomOnce(
            { id: newId(), org_id: orgId, member_key: key, created_at: nowIso() },
            members,
          ),
        ),
      ),
    );
    expect(new Set(results.map((r) => r.room.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await storage.stores.containers.listMembers('dm_room', results[0]!.room.id)).toHaveLength(2);
  });

  it('messages: newest first, paging with before, soft delete hides and is reported once', async () => {
    const c = await channel();
    const rows: MessageRow[] = [];
    for (let i = 0; i < 5; i++) {
      const m = message(c.id, {
        content: `m${i}`,
        created_at: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString(),
      });
      await storage.stores.messages.insert(m);
      rows.push(m);
    }
    const list = await storage.stores.messages.listInContainer({ kind: 'channel', id: c.id }, 3);
    expect(list.map((m) => m.content)).toEqual(['m4', 'm3', 'm2']);
    const older = await storage.stores.messages.listInContainer(
      { kind: 'channel', id: c.id },
      3,
      list[2]!.created_at,
    );
    expect(older.map((m) => m.content)).toEqual(['m1', 'm0']);
    expect(await storage.stores.messages.softDelete(rows[4]!.id, nowIso())).toBe(true);
    expect(await storage.stores.messages.softDelete(rows[4]!.id, nowIso())).toBe(false);
    expect(await storage.stores.messages.get(rows[4]!.id)).toBeUndefined();
    expect(
      (await storage.stores.messages.listInContainer({ kind: 'channel', id: c.id }, 10)).map(
        (m) => m.content,
      ),
    ).not.toContain('m4');
  });

  it('messages: the database enforces exactly one container', async () => {
    const c = await channel();
    const none = await storage.stores.messages.insert(message(c.id, { channel_id: null })).then(
      () => 'ok',
      () => 'refused',
    );
    expect(none).toBe('refused');
    const { projectId, topicId } = await (async () => {
      const now = nowIso();
      const p = {
        id: newId(),
        org_id: orgId,
        name: 'p',
        description: '',
        created_by: null,
        created_at: now,
        updated_at: now,
      };
      await storage.stores.containers.createProject(p);
      const t = {
        id: newId(),
        org_id: orgId,
        project_id: p.id,
        name: 't',
        created_by: null,
        created_at: now,
        updated_at: now,
      };
      await storage.stores.containers.createTopic(t);
      return { projectId: p.id, topicId: t.id };
    })();
    expect(projectId).toBeTruthy();
    const two = await storage.stores.messages.insert(message(c.id, { topic_id: topicId })).then(
      () => 'ok',
      () => 'refused',
    );
    expect(two).toBe('refused');
  });

  it('transactions: all or nothing, events included', async () => {
    const c = await channel();
    const before = await storage.stores.events.listAfter(0, 100_000);
    const failed = await storage
      .transaction(async (s) => {
        await s.messages.insert(message(c.id, { content: 'rolled back' }));
        await s.events.append([
          { id: newId(), org_id: orgId, type: 'message.created', data: '{}', created_at: nowIso() },
        ]);
        throw new Error('boom');
      })
      .then(
        () => 'committed',
        (e: Error) => e.message,
      );
    expect(failed).toBe('boom');
    expect(await storage.stores.messages.listInContainer({ kind: 'channel', id: c.id }, 10)).toHaveLength(0);
    expect(await storage.stores.events.listAfter(0, 100_000)).toHaveLength(before.length);

    await storage.transaction(async (s) => {
      await s.messages.insert(message(c.id, { content: 'kept' }));
      await s.events.append([
        { id: newId(), org_id: orgId, type: 'message.created', data: '{"n":1}', created_at: nowIso() },
        { id: newId(), org_id: orgId, type: 'message.created', data: '{"n":2}', created_at: nowIso() },
      ]);
    });
    const after = await storage.stores.events.listAfter(before.at(-1)?.seq ?? 0, 10);
    expect(after.map((e) => JSON.parse(e.data).n)).toEqual([1, 2]);
    expect(after[1]!.seq).toBeGreaterThan(after[0]!.seq);
    expect(typeof after[0]!.seq).toBe('number');
  });

  it('concurrent transactions: each commits or fails on its own, and is readable once it resolves', async () => {
    const c = await channel();
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        storage.transaction(async (s) => {
          const m = message(c.id, { content: `concurrent ${i}` });
          await s.messages.insert(m);
          if (i % 4 === 3) throw new Error(`boom ${i}`);
          return m.id;
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(3);
    for (const r of results) {
      if (r.status === 'fulfilled') expect(await storage.stores.messages.get(r.value)).toBeDefined();
    }
    const kept = await storage.stores.messages.listInContainer({ kind: 'channel', id: c.id }, 100);
    expect(kept.map((m) => m.content).sort()).toEqual(
      [0, 1, 2, 4, 5, 6, 8, 9, 10].map((i) => `concurrent ${i}`).sort(),
    );
  });

  it('bot keys: lookup by hash, usage adds up, revocation reported once', async () => {
    const now = nowIso();
    const { bot, keyId } = await botWithKey('k1', '["messages:read"]');
    expect(await storage.stores.bots.findKeyByHash(hashSecret('k1'))).toMatchObject({
      key_id: keyId,
      bot_id: bot.id,
      org_id: orgId,
      scopes: '["messages:read"]',
      revoked_at: null,
    });
    expect(await storage.stores.bots.findKeyByHash(hashSecret('k2'))).toBeUndefined();
    await storage.stores.bots.recordKeyUsage(keyId, 3, now);
    await storage.stores.bots.recordKeyUsage(keyId, 2, now);
    expect((await storage.stores.bots.getKey(bot.id, keyId))?.use_count).toBe(5);
    expect(await storage.stores.bots.revokeKey(keyId, now)).toBe(true);
    expect(await storage.stores.bots.revokeKey(keyId, now)).toBe(false);
    await storage.stores.bots.putWebhookSecret(bot.id, 'enc1', now);
    await storage.stores.bots.putWebhookSecret(bot.id, 'enc2', now);
    expect((await storage.stores.bots.getWebhookSecret(bot.id))?.secret_encrypted).toBe('enc2');
    await storage.stores.bots.softDelete(bot.id, now);
    expect(await storage.stores.bots.get(bot.id)).toBeUndefined();
  });

  it('reads outside a transaction neither wait for nor see an open transaction', async () => {
    const c = await channel();
    const m = message(c.id, { content: 'in flight' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const tx = storage.transaction(async (s) => {
      await s.messages.insert(m);
      inserted();
      await gate; // keep the transaction open
    });
    await insertedP;
    try {
      // While it is open: the read answers at once, with committed data only.
      const during = await Promise.race([
        storage.stores.messages.get(m.id).then((r) => ({ r })),
        new Promise<'blocked'>((r) => setTimeout(() => r('blocked'), 2000)),
      ]);
      expect(during).toEqual({ r: undefined });
    } finally {
      release();
      await tx;
    }
    expect((await storage.stores.messages.get(m.id))?.content).toBe('in flight');
  });

  it('repeated reads never answer stale or uncommitted data (SQLite caches committed reads)', async () => {
    const c = await channel();
    const ref = { kind: 'channel' as const, id: c.id };
    const contents = async () =>
      (await storage.stores.messages.listInContainer(ref, 10)).map((m) => m.content).sort();
    expect(await contents()).toEqual([]);
    expect(await contents()).toEqual([]); // the same read again (served from the cache on SQLite)

    // A committed transaction is seen by the next read.
    const m1 = message(c.id, { content: 'one' });
    await storage.transaction((s) => s.messages.insert(m1));
    expect(await contents()).toEqual(['one']);

    // An open transaction is not seen, neither while it is open nor from a result cached meanwhile.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const tx = storage.transaction(async (s) => {
      await s.messages.insert(message(c.id, { content: 'two' }));
      // Inside the transaction its own write is seen.
      expect((await s.messages.listInContainer(ref, 10)).map((m) => m.content).sort()).toEqual([
        'one',
        'two',
      ]);
      inserted();
      await gate;
    });
    await insertedP;
    try {
      expect(await contents()).toEqual(['one']);
      expect(await contents()).toEqual(['one']);
    } finally {
      release();
      await tx;
    }
    expect(await contents()).toEqual(['one', 'two']);

    // A write outside any transaction is seen too.
    expect(await storage.stores.messages.softDelete(m1.id, nowIso())).toBe(true);
    expect(await contents()).toEqual(['two']);

    // The same for a query built per call (not a prepared one).
    const viewer = { type: 'user' as const, id: newId() };
    const names = async () =>
      (
        await storage.stores.containers.listChannels(orgId, viewer, { onlyMemberOf: false, query: 'repeat-' })
      ).map((x) => x.name);
    expect(await names()).toEqual([]);
    expect(await names()).toEqual([]);
    const now = nowIso();
    await storage.transaction((s) =>
      s.containers.createChannel({
        id: newId(),
        org_id: orgId,
        name: 'repeat-1',
        description: '',
        is_private: 0,
        created_by: null,
        created_at: now,
        updated_at: now,
      }),
    );
    expect(await names()).toEqual(['repeat-1']);
  });

  it('health: ping answers', async () => {
    expect(await storage.ping()).toBe(true);
  });
});
