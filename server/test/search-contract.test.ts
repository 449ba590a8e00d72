import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The same query gives the same results on SQLite and on PostgreSQL: one server on each, the same
 * data posted through the API in the same order, then every query below asked of both and the answers
 * compared (contents, order, snippets). Runs when DATABASE_URL points at PostgreSQL.
 */
const PG_URL = process.env.DATABASE_URL;

const MESSAGES = [
  'Deploy to production finished at 10:42',
  'deploy the staging build first, then production',
  'Le café est très bon — crème brûlée, naïve façade',
  'CAFE closed today. Cafe reopens Monday',
  'Mail ada.lovelace@example.com or see https://docs.example.com/path/to/page?x=1',
  'version 2.0.1 released; v2 is stable; e-mail the release notes',
  'Größe über alles: Straße, Übung, ÉCOLE',
  'Привет мир, йогурт и ёлка',
  'the the the the the',
  'the quick brown fox jumps over the lazy dog near the river bank',
  '<script>alert("x")</script> & friends',
  'see /api/files/0190c0de-0000-7000-8000-000000000000 for the deploy log',
  'deployment deployed deploys deploying',
  'x marks the spot',
  `${'long filler text '.repeat(40)}deploy hidden deep inside ${'more filler '.repeat(30)}`,
];

const QUERIES = [
  'deploy',
  'deploy production',
  '"deploy to production"',
  'production deploy',
  'depl',
  'deploy*',
  'café',
  'CAFE',
  'creme brulee',
  'naive',
  'ada lovelace',
  'ada.lovelace@example.com',
  'example',
  'https',
  'path page',
  'version 2',
  '2.0',
  'e-mail',
  'ubung ecole',
  'über straße',
  'ecole',
  'привет',
  'йогурт',
  'ёлка',
  'the',
  '"the lazy dog"',
  'the dog',
  'script',
  'x',
  'has:file',
  'has:file deploy',
  'from:@"Ada Lovelace"',
  'from:@Ada',
  'from:@Nobody deploy',
  'in:#ops deploy',
  'in:#general deploy',
  'after:2000-01-01 deploy',
  'before:2000-01-01 deploy',
  'zzzmissing',
  'ops',
  'operations',
  'migrate',
];

interface Side {
  srv: TestServer;
  ada: UserHandle;
}

async function build(): Promise<Side> {
  const srv = await startTestServer();
  const w = await World.create(srv.url);
  const org = await w.org();
  const ada = await w.user({ organization_id: org.id, display_name: 'Ada Lovelace' }, org.admin.api);
  await w.user({ organization_id: org.id, display_name: 'Zoë Deployer' }, org.admin.api);
  const general = await w.channel(org.admin.api, { name: 'general', description: 'Everything' });
  const ops = await w.channel(org.admin.api, { name: 'ops', description: 'Opérations et déploiements' });
  for (const c of [general, ops])
    expectStatus(await org.admin.api.post(`/api/channels/${c}/members`, { user_id: ada.id }), 201);
  const { topicId } = await w.project(org.admin.api);
  for (const title of ['Deploy the new café menu', 'Migrate the database', 'deploy monitoring'])
    expectStatus(await org.admin.api.post(`/api/topics/${topicId}/tasks`, { title }), 201);
  for (const [i, content] of MESSAGES.entries()) {
    const by = i % 3 === 0 ? ada : org.admin;
    const chan = i % 4 === 0 ? ops : general;
    expectStatus(await by.api.post(`/api/channels/${chan}/messages`, { content }), 201);
  }
  return { srv, ada: org.admin };
}

/** What must be equal on both sides: everything but ids and timestamps. */
async function answer(side: Side, query: string, sort: string) {
  const res = await side.ada.api.get('/api/search', { query: { query, sort, limit: 50 } });
  if (res.status !== 200) return { status: res.status, code: res.body?.error?.code };
  const b = res.body;
  return {
    messages: b.messages.map((m: { content: string; snippet: string }) => [m.content, m.snippet]),
    users: b.users.map((u: { display_name: string }) => u.display_name),
    tasks: b.tasks.map((t: { title: string }) => t.title),
    channels: b.channels.map((c: { name: string }) => c.name),
  };
}

describe.skipIf(!PG_URL)('search contract: SQLite and PostgreSQL answer alike', () => {
  let sqlite: Side;
  let postgres: Side;
  beforeAll(async () => {
    // startTestServer picks PostgreSQL when DATABASE_URL is set: start the SQLite one without it.
    delete process.env.DATABASE_URL;
    try {
      sqlite = await build();
    } finally {
      process.env.DATABASE_URL = PG_URL;
    }
    postgres = await build();
    expect([sqlite.srv.dialect, postgres.srv.dialect]).toEqual(['sqlite', 'postgres']);
  }, 120_000);
  afterAll(async () => {
    await sqlite?.srv.close();
    await postgres?.srv.close();
  });

  it.each(QUERIES)('%s', async (query) => {
    for (const sort of ['relevance', 'newest']) {
      const [a, b] = await Promise.all([answer(sqlite, query, sort), answer(postgres, query, sort)]);
      expect(b, `${query} (${sort})`).toEqual(a);
    }
  });

  it('the queries find something (the comparison is not of empty answers), except these', async () => {
    const found = await Promise.all(QUERIES.map((q) => answer(sqlite, q, 'relevance')));
    const empty = QUERIES.filter((_, i) => {
      const f = found[i]!;
      return 'messages' in f && f.messages.length + f.tasks.length + f.users.length + f.channels.length === 0;
    });
    // @Ada is not a whole display name (from: compares whole names).
    expect(empty).toEqual(['from:@Ada', 'zzzmissing']);
  });
});
