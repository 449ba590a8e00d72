import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/** PATCH /api/bots/{botId}/commands/{commandName}: a custom command's description and usage hint. */
describe('editing a custom command', () => {
  let srv: TestServer;
  let w: World;
  let orgAdmin: UserHandle;
  let deptAdmin: UserHandle;
  let member: UserHandle;
  let bot: BotHandle; // every scope
  let readOnly: BotHandle; // bots:commands:read only
  let other: { id: string; admin: UserHandle };
  const exchanges: RecordedExchange[] = [];
  const cmd = (botId: string, name: string) => `/api/bots/${botId}/commands/${name}`;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    deptAdmin = await w.user({ organization_id: org.id, role: 'dept_admin', department: 'Ops' });
    member = await w.user({ organization_id: org.id });
    bot = await w.bot(member.api);
    readOnly = await w.bot(member.api, { scopes: ['bots:commands:read'] });
    other = await w.org();
    expectStatus(
      await bot.api.post(`/api/bots/${bot.id}/commands`, {
        command: 'deploy',
        description: 'Deploy a service',
        usage_hint: '[service]',
      }),
      201,
    );
    Api.recorder = (x) => {
      if (x.method === 'PATCH') exchanges.push(x);
    };
  });
  afterAll(async () => {
    Api.recorder = undefined;
    await srv?.close();
  });

  it('changes the description and hint; the palette shows it at once; null clears the hint', async () => {
    const before = expectStatus(await orgAdmin.api.get(`/api/bots/${bot.id}/commands`), 200).items[0];
    await new Promise((r) => setTimeout(r, 5));
    const r = expectStatus(
      await orgAdmin.api.patch(cmd(bot.id, 'deploy'), {
        description: '  Deploy a service to an environment ',
        usage_hint: '[service] [env]',
      }),
      200,
    );
    expect(r).toMatchObject({
      id: before.id,
      command: 'deploy',
      description: 'Deploy a service to an environment',
      usage_hint: '[service] [env]',
      created_at: before.created_at,
    });
    expect(r.updated_at > before.updated_at).toBe(true);
    const palette = expectStatus(await member.api.get('/api/commands'), 200).items;
    expect(palette.find((c: any) => c.command === 'deploy')).toMatchObject({
      description: 'Deploy a service to an environment',
      usage_hint: '[service] [env]',
    });

    // Only the hint; the description stays. "/Deploy" names the same command.
    const hintOnly = expectStatus(
      await deptAdmin.api.patch(cmd(bot.id, 'Deploy'), { usage_hint: null }),
      200,
    );
    expect(hintOnly).toMatchObject({ description: 'Deploy a service to an environment', usage_hint: null });
    // The bot itself, with bots:commands:write.
    expect(
      expectStatus(await bot.api.patch(cmd(bot.id, 'deploy'), { description: 'Ship it' }), 200),
    ).toMatchObject({ description: 'Ship it', usage_hint: null });
  });

  it('rejects bad input', async () => {
    const cases: [string, unknown, string][] = [
      [cmd(bot.id, 'deploy'), {}, 'description'],
      [cmd(bot.id, 'deploy'), { description: '   ' }, 'description'],
      [cmd(bot.id, 'deploy'), { description: 5 }, 'description'],
      [cmd(bot.id, 'deploy'), { usage_hint: 'x'.repeat(501) }, 'usage_hint'],
      [cmd(bot.id, 'deploy'), { description: 'ok', extra: 1 }, 'extra'],
      [cmd('not-a-uuid', 'deploy'), { description: 'ok' }, 'bot_id'],
    ];
    for (const [path, body, field] of cases) {
      const r = await orgAdmin.api.patch(path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_input', field });
    }
    expect((await w.anon.patch(cmd(bot.id, 'deploy'), { description: 'x' })).status).toBe(401);
  });

  it('answers 404 for an unknown command, another organization and a bot it cannot see', async () => {
    const unknown = await orgAdmin.api.patch(cmd(bot.id, 'nothing'), { description: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const foreign = await other.admin.api.patch(cmd(bot.id, 'deploy'), { description: 'taken over' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    const missing = await orgAdmin.api.patch(cmd('00000000-0000-4000-8000-000000000000', 'deploy'), {
      description: 'x',
    });
    expect(missing.status).toBe(404);
    // Nothing changed.
    expect(expectStatus(await member.api.get(`/api/bots/${bot.id}/commands`), 200).items[0].description).toBe(
      'Ship it',
    );
  });

  it('refuses members, keys without the scope and keys of another bot', async () => {
    const m = await member.api.patch(cmd(bot.id, 'deploy'), { description: 'mine now' });
    expect(m.status).toBe(403);
    expect(m.body.error.code).toBe('forbidden');
    const scope = await readOnly.api.patch(cmd(readOnly.id, 'deploy'), { description: 'x' });
    expect(scope.status).toBe(403);
    expect(scope.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'bots:commands:write' });
    const another = await (await w.bot(member.api)).api.patch(cmd(bot.id, 'deploy'), { description: 'x' });
    expect(another.status).toBe(403);
    expect(another.body.error.code).toBe('forbidden');
  });

  it('answers as the OpenAPI document says', async () => {
    const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    const { problems, validated } = checkAgainstOpenApi(doc, exchanges);
    expect(problems).toEqual([]);
    expect(validated).toBeGreaterThan(12);
    expect(new Set(exchanges.map((x) => x.status))).toEqual(new Set([200, 400, 401, 403, 404]));
  });
});
