import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { BotCommandRow, NotificationRow, ToolCallRow } from '../src/storage/schema.js';
import type { Storage } from '../src/storage/storage.js';
import { at, dialectName, openContractWorld } from './helpers/store-fixtures.js';

/**
 * Contract of the smaller stores on SQLite and PostgreSQL: QuotaStore (conditional counters that two
 * transactions can never both push past a limit; the count-then-insert lock), IncomingTokenStore (one
 * token per bot, replaced), NotificationStore and ToolCallStore (newest first, paging, filters) and
 * CommandStore (unique per bot, ordering, what an organization may use).
 */
describe(`store contract: quotas, incoming tokens, notifications, tool calls, commands (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let orgId: string;
  let w: Awaited<ReturnType<typeof openContractWorld>>;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close, orgId } = w);
  });
  afterAll(() => close());

  // --- quotas ---

  const quotas = () => storage.stores.quotas;

  it('quotas: a counter starts at 0, adds within the limit, refuses (unchanged) past it; decreases always apply; subjects are separate', async () => {
    const org = (await storage.stores.orgs.create('Q')).id;
    expect(await quotas().used(org, 'upload_bytes')).toBe(0);
    expect(await quotas().add(org, 'upload_bytes', '', 60, 100)).toBe(true);
    expect(await quotas().add(org, 'upload_bytes', '', 40, 100)).toBe(true); // exactly at the limit
    expect(await quotas().add(org, 'upload_bytes', '', 1, 100)).toBe(false);
    expect(await quotas().used(org, 'upload_bytes')).toBe(100);
    expect(await quotas().add(org, 'upload_bytes', '', -30, 50)).toBe(true); // over a lower limit: still applies
    expect(await quotas().used(org, 'upload_bytes')).toBe(70);
    expect(await quotas().add(org, 'upload_bytes', '', 0, 0)).toBe(true);
    expect(await quotas().add(org, 'upload_bytes', 'user:u1', 5, 10)).toBe(true);
    expect(await quotas().used(org, 'upload_bytes', 'user:u1')).toBe(5);
    expect(await quotas().used(org, 'bot_data_bytes')).toBe(0);
    // A first add past the limit creates nothing but a zero counter.
    expect(await quotas().add(org, 'bot_data_bytes', '', 11, 10)).toBe(false);
    expect(await quotas().used(org, 'bot_data_bytes')).toBe(0);
  });

  it('quotas: concurrent transactions never pass the limit together (8 × 3 bytes under 10: three fit)', async () => {
    const org = (await storage.stores.orgs.create('Q2')).id;
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        storage.transaction((s) => s.quotas.add(org, 'upload_bytes', '', 3, 10)),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(await quotas().used(org, 'upload_bytes')).toBe(9);
  });

  it('quotas: countCustomBots counts custom bots not deleted, and those one user registered; lock keeps a count-then-insert limit under concurrency', async () => {
    const org = (await storage.stores.orgs.create('Q3')).id;
    const u = newId();
    expect(await quotas().countCustomBots(org, u)).toEqual({ org: 0, member: 0 });
    await w.bot({ org_id: org, created_by: u });
    await w.bot({ org_id: org });
    await w.bot({ org_id: org, type: 'system', builtin: 'search' });
    const gone = await w.bot({ org_id: org, created_by: u });
    await storage.stores.bots.softDelete(gone.id, at(0));
    expect(await quotas().countCustomBots(org, u)).toEqual({ org: 2, member: 1 });
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        storage.transaction(async (s) => {
          await s.quotas.lock(org, 'bots');
          if ((await s.quotas.countCustomBots(org, u)).org >= 4) return false;
          await s.bots.insert({
            id: newId(),
            org_id: org,
            type: 'custom',
            name: `b-${newId()}`,
            description: '',
            webhook_url: null,
            events: '[]',
            created_by: u,
            status: 'active',
            builtin: null,
            created_at: at(0),
            updated_at: at(0),
            deleted_at: null,
          });
          return true;
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(2);
    expect(await quotas().countCustomBots(org, u)).toEqual({ org: 4, member: 3 });
  });

  // --- incoming tokens ---

  it('incoming tokens: one per bot; put replaces; delete says whether there was one', async () => {
    const b = await w.bot();
    const tokens = storage.stores.incomingTokens;
    expect(await tokens.get(b.id)).toBeUndefined();
    await tokens.put({ bot_id: b.id, token_hash: 'h1', created_by: 'u1', created_at: at(1) });
    await tokens.put({ bot_id: b.id, token_hash: 'h2', created_by: 'u2', created_at: at(2) });
    expect(await tokens.get(b.id)).toEqual({
      bot_id: b.id,
      token_hash: 'h2',
      created_by: 'u2',
      created_at: at(2),
    });
    expect(await tokens.delete(b.id)).toBe(true);
    expect(await tokens.delete(b.id)).toBe(false);
    expect(await tokens.get(b.id)).toBeUndefined();
  });

  // --- notifications ---

  it('notifications: newest first by (created_at, id), keyset paging, unread only; markRead counts only the user’s unread ones', async () => {
    const u = await w.user();
    const other = await w.user();
    const n = (id: string, s: number, userId = u.id): NotificationRow => ({
      id,
      org_id: orgId,
      user_id: userId,
      kind: 'webhook.failed',
      title: 't',
      body: 'b',
      data: '{}',
      created_at: at(s),
      read_at: null,
    });
    await storage.stores.notifications.insertMany([
      n('n-a', 1),
      n('n-b', 2),
      n('n-c', 2),
      n('n-d', 3),
      n('n-x', 4, other.id),
    ]);
    await storage.stores.notifications.insertMany([]);
    const ids = async (o: {
      unreadOnly?: boolean;
      before?: { created_at: string; id: string };
      limit?: number;
    }) =>
      (await storage.stores.notifications.listForUser(u.id, { unreadOnly: false, limit: 10, ...o })).map(
        (x) => x.id,
      );
    expect(await ids({})).toEqual(['n-d', 'n-c', 'n-b', 'n-a']);
    expect(await ids({ limit: 2 })).toEqual(['n-d', 'n-c']);
    expect(await ids({ before: { created_at: at(2), id: 'n-c' } })).toEqual(['n-b', 'n-a']);
    expect(await storage.stores.notifications.markRead(u.id, ['n-c', 'n-a', 'n-x', 'nope'], at(9))).toBe(2);
    expect(await storage.stores.notifications.markRead(u.id, ['n-c'], at(10))).toBe(0); // already read
    expect(await storage.stores.notifications.markRead(u.id, [], at(10))).toBe(0);
    expect(await ids({ unreadOnly: true })).toEqual(['n-d', 'n-b']);
    const read = await storage.stores.notifications.listForUser(u.id, { unreadOnly: false, limit: 10 });
    expect(read.find((x) => x.id === 'n-c')?.read_at).toBe(at(9));
    // The other user's stays unread.
    expect(
      (await storage.stores.notifications.listForUser(other.id, { unreadOnly: true, limit: 10 })).map(
        (x) => x.id,
      ),
    ).toEqual(['n-x']);
  });

  // --- tool calls ---

  it('tool calls: newest first (then id), before by created_at, tool filter, limit; empty insert is a no-op', async () => {
    const b = await w.bot();
    const t = (id: string, s: number, tool: string): ToolCallRow => ({
      id,
      org_id: orgId,
      bot_id: b.id,
      key_id: 'k',
      tool,
      outcome: 'ok',
      error_code: null,
      duration_ms: 3,
      created_at: at(s),
      detail: null,
    });
    await storage.stores.toolCalls.insertMany([
      t('t-a', 1, 'send'),
      t('t-b', 2, 'read'),
      t('t-c', 2, 'send'),
      t('t-d', 3, 'send'),
    ]);
    await storage.stores.toolCalls.insertMany([]);
    await storage.stores.toolCalls.insertMany([{ ...t('t-other', 5, 'send'), bot_id: newId() }]);
    const ids = async (f: { limit?: number; before?: string; tool?: string }) =>
      (await storage.stores.toolCalls.listForBot(b.id, { limit: 10, ...f })).map((x) => x.id);
    expect(await ids({})).toEqual(['t-d', 't-c', 't-b', 't-a']);
    expect(await ids({ limit: 1 })).toEqual(['t-d']);
    expect(await ids({ before: at(3) })).toEqual(['t-c', 't-b', 't-a']);
    expect(await ids({ tool: 'send' })).toEqual(['t-d', 't-c', 't-a']);
    expect(await ids({ tool: 'send', before: at(2) })).toEqual(['t-a']);
    expect((await storage.stores.toolCalls.listForBot(b.id, { limit: 1 }))[0]).toEqual(t('t-d', 3, 'send'));
  });

  // --- commands ---

  const cmd = (botId: string, command: string, over: Partial<BotCommandRow> = {}): BotCommandRow => ({
    id: newId(),
    bot_id: botId,
    org_id: orgId,
    command,
    description: `does ${command}`,
    usage_hint: null,
    created_at: at(0),
    updated_at: at(0),
    ...over,
  });

  it('commands: one per (bot, command) (a duplicate is refused), listed by command; get, update, delete', async () => {
    const b = await w.bot();
    const c1 = cmd(b.id, 'zeta');
    await storage.stores.commands.insert(c1);
    await storage.stores.commands.insert(cmd(b.id, 'alpha'));
    const dup = await storage.stores.commands.insert(cmd(b.id, 'zeta')).then(
      () => 'inserted',
      () => 'refused',
    );
    expect(dup).toBe('refused');
    expect((await storage.stores.commands.listForBot(b.id)).map((c) => c.command)).toEqual(['alpha', 'zeta']);
    expect(await storage.stores.commands.get(b.id, 'zeta')).toEqual(c1);
    await storage.stores.commands.update(c1.id, { description: 'new', usage_hint: '<x>' }, at(5));
    expect(await storage.stores.commands.get(b.id, 'zeta')).toEqual({
      ...c1,
      description: 'new',
      usage_hint: '<x>',
      updated_at: at(5),
    });
    expect(await storage.stores.commands.delete(b.id, 'zeta')).toBe(true);
    expect(await storage.stores.commands.delete(b.id, 'zeta')).toBe(false);
    expect(await storage.stores.commands.get(b.id, 'zeta')).toBeUndefined();
    expect(await storage.stores.commands.listForBot(newId())).toEqual([]);
  });

  it('commands: listAvailable — the organization’s active bots and API platform bots of any organization, by command then bot name; listDisabledBuiltin', async () => {
    const org = (await storage.stores.orgs.create('C')).id;
    const elsewhere = (await storage.stores.orgs.create('D')).id;
    const name = `go${newId().slice(-6)}`;
    const mine = await w.bot({ org_id: org, name: 'b-mine' });
    const zed = await w.bot({ org_id: org, name: 'a-zed' });
    const disabled = await w.bot({ org_id: org, status: 'disabled' });
    const gone = await w.bot({ org_id: org });
    await storage.stores.bots.softDelete(gone.id, at(0));
    const foreign = await w.bot({ org_id: elsewhere });
    const platform = await w.bot({ org_id: elsewhere, type: 'platform', name: 'c-platform' });
    const foreignBuiltinPlatform = await w.bot({
      org_id: elsewhere,
      type: 'platform',
      builtin: `x-${newId()}`,
    });
    const disabledBuiltin = await w.bot({
      org_id: org,
      type: 'system',
      builtin: `poll-${newId()}`,
      status: 'disabled',
      name: 'Poll',
    });
    for (const b of [mine, zed, disabled, gone, foreign, platform, foreignBuiltinPlatform, disabledBuiltin])
      await storage.stores.commands.insert(cmd(b.id, name, { org_id: b.org_id }));
    await storage.stores.commands.insert(cmd(mine.id, `${name}-b`, { org_id: org }));
    const avail = await storage.stores.commands.listAvailable(org, name);
    expect(avail.map((c) => c.bot_id)).toEqual([zed.id, mine.id, platform.id]);
    expect(avail[0]).toMatchObject({
      command: name,
      bot_name: 'a-zed',
      bot_type: 'custom',
      bot_builtin: null,
    });
    const all = (await storage.stores.commands.listAvailable(org)).filter((c) => c.command.startsWith(name));
    expect(all.map((c) => `${c.command}/${c.bot_name}`)).toEqual([
      `${name}/a-zed`,
      `${name}/b-mine`,
      `${name}/c-platform`,
      `${name}-b/b-mine`,
    ]);
    expect(await storage.stores.commands.listAvailable(org, 'no-such')).toEqual([]);
    expect(await storage.stores.commands.listDisabledBuiltin(org, name)).toEqual([
      { bot_id: disabledBuiltin.id, bot_name: 'Poll' },
    ]);
    expect(await storage.stores.commands.listDisabledBuiltin(elsewhere, name)).toEqual([]);
  });
});
