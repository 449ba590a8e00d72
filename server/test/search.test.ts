import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { rawMcp, rawSession } from './helpers/mcp.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * Full-text search (docs/SEARCH.md) through the real REST endpoint and MCP tool, on the database the
 * suite runs on (SQLite, or PostgreSQL with DATABASE_URL): syntax, ranking, snippets, filters,
 * changes seen at once, and visibility.
 */
let srv: TestServer;
let w: World;
let org: { id: string; admin: UserHandle };
let alice: UserHandle;
let chan: string;
let other: string;
let bot: BotHandle;
/** A word unique to this run, so that nothing else in the database matches it. */
const W = uniq('kw').replace('-', '');

async function post(by: UserHandle | BotHandle, channelId: string, content: string): Promise<string> {
  return expectStatus(await by.api.post(`/api/channels/${channelId}/messages`, { content }), 201).id;
}

async function find(by: UserHandle | BotHandle, query: string, extra: Record<string, string | number> = {}) {
  const res = await by.api.get('/api/search', { query: { query, type: 'messages', ...extra } });
  return expectStatus(res, 200).messages as { id: string; content: string; snippet: string }[];
}
const contents = (ms: { content: string }[]) => ms.map((m) => m.content);

beforeAll(async () => {
  srv = await startTestServer();
  w = await World.create(srv.url);
  org = await w.org();
  alice = await w.user({ organization_id: org.id, display_name: 'Alice Élodie' }, org.admin.api);
  chan = await w.channel(org.admin.api, { name: uniq('general') });
  other = await w.channel(org.admin.api, { name: uniq('random') });
  bot = await w.bot(org.admin.api, {}, { name: uniq('helperbot') });
  for (const c of [chan, other]) {
    expectStatus(await org.admin.api.post(`/api/channels/${c}/members`, { user_id: alice.id }), 201);
    expectStatus(await org.admin.api.post(`/api/channels/${c}/members`, { bot_id: bot.id }), 201);
  }
});
afterAll(() => srv?.close());

describe('search syntax', () => {
  beforeAll(async () => {
    await post(alice, chan, `${W} the quick brown fox jumps over the lazy dog`);
    await post(alice, chan, `${W} dog bites quick man`);
    await post(alice, chan, `${W} Crème brûlée at the CAFÉ`);
    await post(alice, chan, `${W} deployment of version 2 to production`);
    await post(alice, chan, `${W} <b>bold</b> & "quoted" marker`);
  });

  it('all words must match, in any order, case-insensitive', async () => {
    expect(contents(await find(alice, `${W} DOG quick`)).sort()).toEqual([
      `${W} dog bites quick man`,
      `${W} the quick brown fox jumps over the lazy dog`,
    ]);
    expect(await find(alice, `${W} dog elephant`)).toEqual([]);
  });

  it('a quoted phrase needs its words next to each other, in order', async () => {
    expect(contents(await find(alice, `${W} "quick brown"`))).toEqual([
      `${W} the quick brown fox jumps over the lazy dog`,
    ]);
    expect(await find(alice, `${W} "brown quick"`)).toEqual([]);
    expect(await find(alice, `${W} "quick fox"`)).toEqual([]);
  });

  it('the last word matches as a prefix while typing; word* anywhere; not inside a phrase', async () => {
    expect(contents(await find(alice, `${W} deplo`))).toEqual([`${W} deployment of version 2 to production`]);
    expect(contents(await find(alice, `produ* ${W}`))).toEqual([
      `${W} deployment of version 2 to production`,
    ]);
    expect(await find(alice, `${W} "deplo"`)).toEqual([]);
    expect(await find(alice, `deplo ${W}`)).toEqual([]); // not the last word: a whole word
  });

  it('accents and case never matter, either way', async () => {
    const want = [`${W} Crème brûlée at the CAFÉ`];
    expect(contents(await find(alice, `${W} creme brulee cafe`))).toEqual(want);
    expect(contents(await find(alice, `${W} CRÈME Café`))).toEqual(want);
    expect(contents(await find(alice, `${W} "brulee at the"`))).toEqual(want);
  });

  it('snippets are HTML-escaped with the matched words in <mark>', async () => {
    const [m] = await find(alice, `${W} bold quoted`);
    expect(m!.snippet).toBe(
      `<mark>${W}</mark> &lt;b&gt;<mark>bold</mark>&lt;/b&gt; &amp; &quot;<mark>quoted</mark>&quot; marker`,
    );
    const long = `${'filler '.repeat(60)}${W}needle sits here ${'tail '.repeat(60)}`;
    await post(alice, chan, long);
    const [s] = await find(alice, `${W}needle`);
    expect(s!.snippet).toMatch(/^….*<mark>/);
    expect(s!.snippet).toContain(`<mark>${W}needle</mark> sits here`);
    expect(s!.snippet.endsWith('…')).toBe(true);
    expect(s!.snippet.length).toBeLessThan(260);
  });

  it('bad filters and empty queries are a 400 naming the query', async () => {
    for (const q of ['before:2025-13-01', 'after:yesterday', 'has:image', '"" !!', 'in:']) {
      const res = await alice.api.get('/api/search', { query: { query: q } });
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe('invalid_input');
      expect(res.body.error.message).toContain('query');
    }
    const res = await alice.api.get('/api/search', { query: { query: 'x', sort: 'oldest' } });
    expect(res.status).toBe(400);
  });
});

describe('ranking', () => {
  const R = uniq('rk').replace('-', '');
  it('more relevant first, the newer first among equals; sort=newest is by time only', async () => {
    const once = await post(
      alice,
      chan,
      `${R} appears once in this rather long message about other things entirely`,
    );
    const twice = await post(alice, chan, `${R} and ${R} again`);
    const oldEqual = await post(alice, chan, `${R} alpha beta`);
    const newEqual = await post(alice, chan, `${R} gamma delta`);
    const ids = (await find(alice, R)).map((m) => m.id);
    expect(ids[0]).toBe(twice);
    expect(ids.indexOf(newEqual)).toBeLessThan(ids.indexOf(oldEqual));
    expect(ids.at(-1)).toBe(once);
    expect((await find(alice, R, { sort: 'newest' })).map((m) => m.id)).toEqual([
      newEqual,
      oldEqual,
      twice,
      once,
    ]);
    expect((await find(alice, R, { limit: 2 })).map((m) => m.id)).toEqual([twice, newEqual]);
  });

  it('words next to each other in the query order rank above scattered ones', async () => {
    const P = uniq('ph').replace('-', '');
    const near = await post(alice, chan, `${P} release notes are ready`);
    await post(alice, chan, `${P} notes about the next release`);
    expect((await find(alice, `${P} release notes`))[0]!.id).toBe(near);
  });
});

describe('filters', () => {
  const F = uniq('flt').replace('-', '');
  let inChan: string;
  let inOther: string;
  let byBot: string;
  let withFile: string;
  beforeAll(async () => {
    inChan = await post(alice, chan, `${F} from alice in chan`);
    inOther = await post(alice, other, `${F} from alice in other`);
    byBot = await post(bot, chan, `${F} from the bot`);
    withFile = await post(alice, chan, `${F} see /api/files/0190c0de-0000-7000-8000-000000000000`);
  });
  const ids = async (q: string) => (await find(alice, q)).map((m) => m.id).sort();

  it('in: by #name or by id', async () => {
    const chanName = expectStatus(await alice.api.get(`/api/channels/${chan}`), 200).name as string;
    expect(await ids(`${F} in:#${chanName}`)).toEqual([inChan, byBot, withFile].sort());
    expect(await ids(`${F} in:${other}`)).toEqual([inOther]);
    expect(await ids(`${F} in:#no-such-channel`)).toEqual([]);
  });

  it('from: by @name, e-mail or id, users and bots', async () => {
    expect(await ids(`${F} from:@"Alice Élodie"`)).toEqual([inChan, inOther, withFile].sort());
    expect(await ids(`${F} from:@${alice.email}`)).toEqual([inChan, inOther, withFile].sort());
    expect(await ids(`${F} from:${bot.id}`)).toEqual([byBot]);
    expect(await ids(`from:${bot.id} ${F} in:${chan}`)).toEqual([byBot]);
    expect(await ids(`${F} from:@nobody-here`)).toEqual([]);
  });

  it('before:/after: by day (UTC), has:file, and filters alone', async () => {
    const today = new Date().toISOString().slice(0, 10);
    expect(await ids(`${F} before:${today}`)).toEqual([]);
    expect(await ids(`${F} after:2000-01-01`)).toHaveLength(4);
    expect(await ids(`${F} after:${today}`)).toEqual([]);
    expect(await ids(`${F} has:file`)).toEqual([withFile]);
    expect(await ids(`has:file in:${chan}`)).toContain(withFile);
  });
});

describe('changes are seen at once', () => {
  it('a new message, an edit and a delete show in the very next search', async () => {
    const A = uniq('fresh').replace('-', '');
    const B = uniq('edited').replace('-', '');
    const id = await post(alice, chan, `${A} first words`);
    expect((await find(alice, A)).map((m) => m.id)).toEqual([id]);
    expectStatus(await alice.api.put(`/api/messages/${id}`, { content: `${B} second words` }), 200);
    expect(await find(alice, A)).toEqual([]);
    expect((await find(alice, B)).map((m) => m.id)).toEqual([id]);
    expect((await find(alice, `${B} second`))[0]!.content).toBe(`${B} second words`);
    expectStatus(await alice.api.delete(`/api/messages/${id}`), 200);
    expect(await find(alice, B)).toEqual([]);
    expect(await find(alice, `${B} second`)).toEqual([]);
  });
});

describe('visibility', () => {
  it("another organization's unique word is never found, whatever the query", async () => {
    const otherOrg = await w.org();
    const theirChan = await w.channel(otherOrg.admin.api);
    const U = uniq('secret').replace('-', '');
    await post(otherOrg.admin, theirChan, `${U} top secret plans`);
    expect((await find(otherOrg.admin, U)).length).toBe(1); // it is there, for them
    for (const q of [
      U,
      `"${U} top"`,
      U.slice(0, 6),
      `${U} in:${theirChan}`,
      `${U} from:${otherOrg.admin.id}`,
    ]) {
      const res = await org.admin.api.get('/api/search', { query: { query: q } });
      const { query, ...results } = expectStatus(res, 200);
      expect(query).toBe(q);
      expect(JSON.stringify(results), q).not.toContain(U);
    }
  });

  it('a channel the caller left, a private one and a channel a bot was not added to are not searched', async () => {
    const L = uniq('left').replace('-', '');
    const carol = await w.user({ organization_id: org.id }, org.admin.api);
    const priv = await w.channel(org.admin.api, { is_private: true });
    expectStatus(await org.admin.api.post(`/api/channels/${priv}/members`, { user_id: carol.id }), 201);
    await post(org.admin, priv, `${L} private words`);
    expect(await find(carol, L)).toHaveLength(1);
    expectStatus(await carol.api.delete(`/api/channels/${priv}/members/users/${carol.id}`), 200);
    expect(await find(carol, L)).toEqual([]);
    expect(await find(carol, `${L} in:${priv}`)).toEqual([]);
    const notAdded = await w.channel(org.admin.api);
    await post(org.admin, notAdded, `${L} public but the bot is not in it`);
    expect(await find(bot, L)).toEqual([]);
    expect(await find(alice, L)).toHaveLength(1); // public: users see it
  });
});

describe('users, tasks and channels', () => {
  it('are found by words, prefixes and accents, ranked the same way', async () => {
    const T = uniq('zq').replace('-', '');
    const u = await w.user({ organization_id: org.id, display_name: `Zoë ${T}` }, org.admin.api);
    const { topicId, projectId } = await w.project(org.admin.api);
    expectStatus(await org.admin.api.post(`/api/projects/${projectId}/members`, { bot_id: bot.id }), 201);
    const task = expectStatus(
      await org.admin.api.post(`/api/topics/${topicId}/tasks`, { title: `${T} migrate the café database` }),
      201,
    );
    const ch = await w.channel(org.admin.api, { name: `${T}-ops`, description: 'Opérations quotidiennes' });
    const all = expectStatus(await org.admin.api.get('/api/search', { query: { query: `${T}` } }), 200);
    expect(all.users.map((x: { id: string }) => x.id)).toEqual([u.id]);
    expect(all.tasks.map((x: { id: string }) => x.id)).toEqual([task.id]);
    expect(all.channels.map((x: { id: string }) => x.id)).toEqual([ch]);
    const r = async (query: string, type: string) =>
      expectStatus(await bot.api.get('/api/search', { query: { query, type } }), 200)[type] as {
        id: string;
      }[];
    expect((await r(`zoe ${T.slice(0, 5)}`, 'users')).map((x) => x.id)).toEqual([u.id]);
    expect((await r(`cafe ${T}`, 'tasks')).map((x) => x.id)).toEqual([task.id]);
    expect(await r(`${T} operations`, 'channels')).toEqual([]); // the bot is not in that channel
    expect((await r(`${T} operations`, 'channels').catch(() => [])).length).toBe(0);
    const adminChannels = expectStatus(
      await org.admin.api.get('/api/search', { query: { query: `operations ${T}`, type: 'channels' } }),
      200,
    ).channels;
    expect(adminChannels.map((x: { id: string }) => x.id)).toEqual([ch]);
  });
});

describe('MCP search tool', () => {
  it('takes the same syntax and answers with snippets; the description documents it', async () => {
    const M = uniq('mcpword').replace('-', '');
    await post(alice, chan, `${M} over MCP, café`);
    const session = await rawSession(srv.url, bot.key);
    const mcp = (body: unknown) => rawMcp(srv.url, { key: bot.key, session, body });
    const list = await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const tool = list.body.result.tools.find((t: { name: string }) => t.name === 'search');
    expect(tool.description).toContain('"quoted phrases"');
    expect(tool.description).toContain('from:@name');
    expect(tool.inputSchema.properties.sort.enum).toEqual(['relevance', 'newest']);
    const res = await mcp({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'search', arguments: { query: `${M} CAFE`, type: 'messages' } },
    });
    expect(res.body.result.isError).toBeFalsy();
    expect(
      res.body.result.structuredContent?.messages?.[0]?.snippet ?? res.body.result.content[0].text,
    ).toContain(M);
    const bad = await mcp({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'search', arguments: { query: 'before:soon' } },
    });
    expect(JSON.stringify(bad.body)).toContain('before:soon is not a date');
  });
});
