import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/** Custom commands, slash commands, and key management / webhook secret edge cases. */
describe('bot API: custom commands, slash commands, keys', () => {
  let srv: TestServer;
  let w: World;
  let orgId: string;
  let orgAdmin: UserHandle;
  let deptAdmin: UserHandle;
  let member: UserHandle;
  let bot: BotHandle;
  let other: { id: string; admin: UserHandle };
  let otherBot: BotHandle;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    orgId = org.id;
    orgAdmin = org.admin;
    deptAdmin = await w.user({ organization_id: orgId, role: 'dept_admin', department: 'Ops' });
    member = await w.user({ organization_id: orgId });
    bot = await w.bot(member.api); // registered by a plain member
    other = await w.org();
    otherBot = await w.bot(other.admin.api);
  });
  afterAll(() => srv.close());

  const cmds = (botId: string) => `/api/bots/${botId}/commands`;

  describe('GET|POST|DELETE /api/bots/{botId}/commands', () => {
    it('a bot registers, lists and deletes its own commands', async () => {
      const c = expectStatus(
        await bot.api.post(cmds(bot.id), {
          command: 'Deploy',
          description: 'Deploy a service',
          usage_hint: '/deploy <service>',
        }),
        201,
      );
      expect(c).toMatchObject({
        bot_id: bot.id,
        command: 'deploy',
        description: 'Deploy a service',
        usage_hint: '/deploy <service>',
      });
      expectStatus(await bot.api.post(cmds(bot.id), { command: 'status', description: 'Show status' }), 201);
      const list = expectStatus(await bot.api.get(cmds(bot.id)), 200);
      expect(list.items.map((x: any) => x.command)).toEqual(['deploy', 'status']);
      expect(list.items[1].usage_hint).toBeNull();
      // Unique per bot, case-insensitively.
      const dup = await bot.api.post(cmds(bot.id), { command: 'DEPLOY', description: 'again' });
      expect(dup.status).toBe(409);
      expect(dup.body.error.code).toBe('conflict');
      // Another bot may use the same name.
      const bot2 = await w.bot(orgAdmin.api);
      expectStatus(
        await bot2.api.post(cmds(bot2.id), { command: 'deploy', description: 'Other deploy' }),
        201,
      );
      const del = expectStatus(await bot.api.delete(`${cmds(bot.id)}/status`), 200);
      expect(del).toEqual({ bot_id: bot.id, command: 'status', deleted: true });
      expect((await bot.api.delete(`${cmds(bot.id)}/status`)).status).toBe(404);
      expect(expectStatus(await bot.api.get(cmds(bot.id)), 200).items).toHaveLength(1);
    });

    it('validates fields and limits', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ description: 'd' }, 'command'],
        [{ command: 'x' }, 'description'],
        [{ command: 5, description: 'd' }, 'command'],
        [{ command: 'x', description: 5 }, 'description'],
        [{ command: 'x', description: 'd', usage_hint: 5 }, 'usage_hint'],
        [{ command: '', description: 'd' }, 'command'],
        [{ command: '/x', description: 'd' }, 'command'],
        [{ command: 'two words', description: 'd' }, 'command'],
        [{ command: '-dash', description: 'd' }, 'command'],
        [{ command: 'é', description: 'd' }, 'command'],
        [{ command: 'a'.repeat(101), description: 'd' }, 'command'],
        [{ command: 'x', description: '' }, 'description'],
        [{ command: 'x', description: 'd'.repeat(501) }, 'description'],
        [{ command: 'x', description: 'd', usage_hint: 'u'.repeat(501) }, 'usage_hint'],
        [{ command: 'help', description: 'shadow the built-in' }, 'command'],
        [{ command: 'x', description: 'd', extra: true }, 'extra'],
      ];
      for (const [body, field] of cases) {
        const res = await bot.api.post(cmds(bot.id), body);
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expectStatus(
        await bot.api.post(cmds(bot.id), {
          command: 'a'.repeat(100),
          description: 'd'.repeat(500),
          usage_hint: 'u'.repeat(500),
        }),
        201,
      );
      expect((await bot.api.get('/api/bots/not-a-uuid/commands')).status).toBe(400);
    });

    it('a bot key reaches only its own bot: another botId is 403, even another organization’s', async () => {
      const bot2 = await w.bot(orgAdmin.api);
      for (const target of [bot2.id, otherBot.id, '00000000-0000-4000-8000-000000000000']) {
        for (const res of [
          await bot.api.get(cmds(target)),
          await bot.api.post(cmds(target), { command: 'x', description: 'd' }),
          await bot.api.delete(`${cmds(target)}/x`),
        ]) {
          expect(res.status).toBe(403);
          expect(res.body.error.code).toBe('forbidden');
        }
      }
    });

    it('scopes: bots:commands:read to list, bots:commands:write to change', async () => {
      const reader = await w.bot(orgAdmin.api, { scopes: ['bots:commands:read'] });
      expectStatus(await reader.api.get(cmds(reader.id)), 200);
      const w1 = await reader.api.post(cmds(reader.id), { command: 'x', description: 'd' });
      expect(w1.status).toBe(403);
      expect(w1.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'bots:commands:write' });
      const d1 = await reader.api.delete(`${cmds(reader.id)}/x`);
      expect(d1.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'bots:commands:write' });
      const writer = await w.bot(orgAdmin.api, { scopes: ['bots:commands:write'] });
      expectStatus(await writer.api.post(cmds(writer.id), { command: 'x', description: 'd' }), 201);
      const r1 = await writer.api.get(cmds(writer.id));
      expect(r1.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'bots:commands:read' });
      expectStatus(await writer.api.delete(`${cmds(writer.id)}/x`), 200);
      const msg = await w.bot(orgAdmin.api, { scopes: ['messages:write'] });
      expect((await msg.api.get(cmds(msg.id))).status).toBe(403);
    });

    it('user tokens: members read; system_admin, org_admin and dept_admin register and delete; others 403/404', async () => {
      const list = expectStatus(await member.api.get(cmds(bot.id)), 200);
      expect(list.items.length).toBeGreaterThan(0);
      // Even the member who registered the bot may not register commands (rule 8).
      const byMember = await member.api.post(cmds(bot.id), { command: 'm', description: 'd' });
      expect(byMember.status).toBe(403);
      expect((await member.api.delete(`${cmds(bot.id)}/deploy`)).status).toBe(403);
      for (const [who, name] of [
        [orgAdmin, 'by-org-admin'],
        [deptAdmin, 'by-dept-admin'],
        [w.admin, 'by-system-admin'],
      ] as const) {
        expectStatus(await who.api.post(cmds(bot.id), { command: name, description: 'd' }), 201);
        expectStatus(await who.api.delete(`${cmds(bot.id)}/${name}`), 200);
      }
      // Another organization's bot looks like nothing, for reads and writes.
      for (const res of [
        await member.api.get(cmds(otherBot.id)),
        await orgAdmin.api.post(cmds(otherBot.id), { command: 'x', description: 'd' }),
        await orgAdmin.api.delete(`${cmds(otherBot.id)}/x`),
        await orgAdmin.api.get(cmds('00000000-0000-4000-8000-000000000000')),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      expect((await w.anon.get(cmds(bot.id))).status).toBe(401);
    });

    it('a revoked key answers 401 on the very next request', async () => {
      const b = await w.bot(orgAdmin.api);
      expectStatus(await b.api.get(cmds(b.id)), 200);
      expectStatus(await orgAdmin.api.delete(`/api/bots/${b.id}/api-keys/${b.keyId}`), 200);
      const res = await b.api.get(cmds(b.id));
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthenticated');
    });
  });

  describe('GET /api/commands and POST /api/commands/execute', () => {
    let channel: string;
    let palBot: BotHandle;
    beforeAll(async () => {
      palBot = await w.bot(orgAdmin.api, {}, { name: 'palette-bot' });
      expectStatus(
        await palBot.api.post(cmds(palBot.id), {
          command: 'weather',
          description: 'Weather report',
          usage_hint: '/weather <city>',
        }),
        201,
      );
      expectStatus(
        await otherBot.api.post(cmds(otherBot.id), { command: 'foreign', description: 'Not for you' }),
        201,
      );
      channel = await w.channel(member.api);
      expectStatus(await member.api.post(`/api/channels/${channel}/members`, { bot_id: palBot.id }), 201);
    });

    it('lists built-ins and the custom commands of the organization’s bots, at once', async () => {
      const list = expectStatus(await member.api.get('/api/commands'), 200);
      const names = list.items.map((x: any) => x.command);
      expect(list.items[0]).toMatchObject({ command: 'help', source: 'builtin', bot_id: null });
      expect(list.items.find((x: any) => x.command === 'weather')).toMatchObject({
        source: 'bot',
        bot_id: palBot.id,
        bot_name: 'palette-bot',
        description: 'Weather report',
        usage_hint: '/weather <city>',
      });
      expect(names).not.toContain('foreign');
      expect(
        expectStatus(await other.admin.api.get('/api/commands'), 200).items.map((x: any) => x.command),
      ).toContain('foreign');
      // A disabled bot's commands disappear from the palette.
      const off = await w.bot(orgAdmin.api);
      expectStatus(await off.api.post(cmds(off.id), { command: 'offline', description: 'd' }), 201);
      expect(
        expectStatus(await member.api.get('/api/commands'), 200).items.map((x: any) => x.command),
      ).toContain('offline');
      expectStatus(await orgAdmin.api.patch(`/api/bots/${off.id}`, { status: 'disabled' }), 200);
      expect(
        expectStatus(await member.api.get('/api/commands'), 200).items.map((x: any) => x.command),
      ).not.toContain('offline');
      // Bots do not use the slash palette.
      expect((await palBot.api.get('/api/commands')).status).toBe(403);
      expect((await w.anon.get('/api/commands')).status).toBe(401);
    });

    it('/help answers the list as text', async () => {
      const res = expectStatus(await member.api.post('/api/commands/execute', { text: '/help' }), 200);
      expect(res).toMatchObject({ status: 'completed', command: 'help', source: 'builtin' });
      expect(res.text).toContain('/help');
      expect(res.text).toContain('/weather — Weather report (bot palette-bot)');
      const one = expectStatus(
        await member.api.post('/api/commands/execute', { text: '/help weather', channel_id: channel }),
        200,
      );
      expect(one.text).toContain('/weather');
      expect(one.text).not.toContain('/help —');
      expect(one.channel_id).toBe(channel);
    });

    it('a bot command is validated and recorded as command.invoked (202)', async () => {
      const res = await member.api.post('/api/commands/execute', {
        text: '/Weather  Berlin tomorrow',
        channel_id: channel,
      });
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        status: 'dispatched',
        command: 'weather',
        args: 'Berlin tomorrow',
        source: 'bot',
        bot_id: palBot.id,
        channel_id: channel,
      });
      const events = await srv.app.services.storage.stores.events.listAfter(0, 10_000);
      const ev = events.find(
        (e) => e.type === 'command.invoked' && JSON.parse(e.data).invocation_id === res.body.invocation_id,
      );
      expect(ev).toBeDefined();
      expect(ev!.org_id).toBe(orgId);
      expect(JSON.parse(ev!.data)).toMatchObject({
        command: 'weather',
        args: 'Berlin tomorrow',
        user_id: member.id,
        bot_id: palBot.id,
        channel_id: channel,
        topic_id: null,
        dm_room_id: null,
      });
      // Without a container it is fine too.
      expect((await member.api.post('/api/commands/execute', { text: '/weather' })).status).toBe(202);
    });

    it('refuses unknown commands, bad text, bad or invisible containers', async () => {
      const unknown = await member.api.post('/api/commands/execute', { text: '/nope' });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.message).toMatch(
        /Unknown command \/nope; \/help lists the available commands$/,
      );
      // Another organization's command is unknown here.
      expect((await member.api.post('/api/commands/execute', { text: '/foreign' })).status).toBe(404);
      const bad: [Record<string, unknown>, string][] = [
        [{}, 'text'],
        [{ text: 5 }, 'text'],
        [{ text: 'help' }, 'text'],
        [{ text: '/' }, 'text'],
        [{ text: '/ weather' }, 'text'],
        [{ text: `/weather ${'x'.repeat(1000)}` }, 'text'],
        [{ text: '/help', channel_id: 'x' }, 'channel_id'],
        [{ text: '/help', channel_id: channel, dm_room_id: channel }, 'channel_id'],
        [{ text: '/help', extra: 1 }, 'extra'],
      ];
      for (const [body, field] of bad) {
        const res = await member.api.post('/api/commands/execute', body);
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expect(
        (await member.api.post('/api/commands/execute', { text: `/weather ${'x'.repeat(991)}` })).status,
      ).toBe(202);
      const otherChannel = await w.channel(other.admin.api);
      expect(
        (await member.api.post('/api/commands/execute', { text: '/help', channel_id: otherChannel })).status,
      ).toBe(404);
      const priv = await w.channel(orgAdmin.api, { is_private: true });
      expect(
        (await member.api.post('/api/commands/execute', { text: '/weather', channel_id: priv })).status,
      ).toBe(404);
      // The bot must be in the channel where its command runs.
      const without = await w.channel(member.api);
      const res = await member.api.post('/api/commands/execute', { text: '/weather', channel_id: without });
      expect(res.status).toBe(403);
      expect((await palBot.api.post('/api/commands/execute', { text: '/help' })).status).toBe(403);
    });

    it('two bots with one command name: 409 unless bot_id says which', async () => {
      const twin = await w.bot(orgAdmin.api);
      expectStatus(
        await twin.api.post(cmds(twin.id), { command: 'weather', description: 'Twin weather' }),
        201,
      );
      const amb = await member.api.post('/api/commands/execute', { text: '/weather' });
      expect(amb.status).toBe(409);
      const chosen = await member.api.post('/api/commands/execute', { text: '/weather', bot_id: twin.id });
      expect(chosen.status).toBe(202);
      expect(chosen.body.bot_id).toBe(twin.id);
      expectStatus(await twin.api.delete(`${cmds(twin.id)}/weather`), 200);
    });
  });

  describe('key management and webhook secret', () => {
    const keys = (botId: string) => `/api/bots/${botId}/api-keys`;

    it('rejects bad key input', async () => {
      const b = await w.bot(orgAdmin.api);
      const cases: [Record<string, unknown>, string][] = [
        [{ key_type: 'prod' }, 'key_type'],
        [{ scopes: ['messages:delete'] }, 'scopes.0'],
        [{ scopes: 'messages:read' }, 'scopes'],
        [{ expires_in_days: 0 }, 'expires_in_days'],
        [{ expires_in_days: 1.5 }, 'expires_in_days'],
        [{ expires_in_days: '7' }, 'expires_in_days'],
        [{ unknown: 1 }, 'unknown'],
      ];
      for (const [body, field] of cases) {
        const res = await orgAdmin.api.post(keys(b.id), body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      const k = expectStatus(
        await orgAdmin.api.post(keys(b.id), { key_type: 'test', scopes: [], expires_in_days: 7 }),
        201,
      );
      expect(k.scopes).toBeNull();
      expect(Date.parse(k.expires_at) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    });

    it('other organization and non-managers cannot issue, revoke or create secrets', async () => {
      const b = await w.bot(orgAdmin.api);
      for (const res of [
        await other.admin.api.post(keys(b.id), {}),
        await other.admin.api.delete(`${keys(b.id)}/${b.keyId}`),
        await other.admin.api.post(`/api/bots/${b.id}/webhook-secret`),
        await other.admin.api.get(keys(b.id)),
      ]) {
        expect(res.status).toBe(404);
      }
      for (const res of [
        await member.api.post(keys(b.id), {}),
        await member.api.delete(`${keys(b.id)}/${b.keyId}`),
        await member.api.post(`/api/bots/${b.id}/webhook-secret`),
      ]) {
        expect(res.status).toBe(403);
      }
      // A bot key cannot manage keys.
      expect((await b.api.post(keys(b.id), {})).status).toBe(403);
      // A key of another bot cannot be revoked through this bot.
      const b2 = await w.bot(orgAdmin.api);
      expect((await orgAdmin.api.delete(`${keys(b.id)}/${b2.keyId}`)).status).toBe(404);
      expectStatus(await b2.api.post('/api/bots/auth'), 200);
    });

    it('revocation is effective on the very next request, on every endpoint', async () => {
      const b = await w.bot(orgAdmin.api);
      const ch = await w.channel(orgAdmin.api);
      expectStatus(await orgAdmin.api.post(`/api/channels/${ch}/members`, { bot_id: b.id }), 201);
      expectStatus(await b.api.post(`/api/channels/${ch}/messages`, { content: 'before' }), 201);
      const r = expectStatus(await orgAdmin.api.delete(`${keys(b.id)}/${b.keyId}`), 200);
      expect(r.state).toBe('revoked');
      for (const res of [
        await b.api.post('/api/bots/auth'),
        await b.api.post(`/api/channels/${ch}/messages`, { content: 'after' }),
        await b.api.get(cmds(b.id)),
        await b.api.get(`/api/channels/${ch}/files`),
      ]) {
        expect(res.status).toBe(401);
      }
      // Revoking twice is harmless; the other keys of the bot keep working.
      expectStatus(await orgAdmin.api.delete(`${keys(b.id)}/${b.keyId}`), 200);
      const k2 = expectStatus(await orgAdmin.api.post(keys(b.id), {}), 201);
      expectStatus(await b.api.post('/api/bots/auth', undefined, { token: k2.key }), 200);
    });

    it('webhook secret: created, replaced on re-creation, shown once', async () => {
      const b = await w.bot(orgAdmin.api);
      const s1 = expectStatus(await orgAdmin.api.post(`/api/bots/${b.id}/webhook-secret`), 201);
      expect(s1.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const s2 = expectStatus(await orgAdmin.api.post(`/api/bots/${b.id}/webhook-secret`), 201);
      expect(s2.secret).not.toBe(s1.secret);
      const bot = expectStatus(await orgAdmin.api.get(`/api/bots/${b.id}`), 200);
      expect(JSON.stringify(bot)).not.toContain(s2.secret);
    });
  });
});
