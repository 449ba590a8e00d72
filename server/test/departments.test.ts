import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus, type RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { uniq, World, type BotHandle, type UserHandle } from './helpers/world.js';

/** Departments: GET/POST /api/departments, PATCH/DELETE /api/departments/{departmentId}. */
describe('departments', () => {
  let srv: TestServer;
  let w: World;
  let admin: UserHandle; // org_admin
  let deptAdmin: UserHandle;
  let member: UserHandle;
  let reader: BotHandle; // users:read
  let noScope: BotHandle; // messages:read only
  let other: { id: string; admin: UserHandle };
  const exchanges: RecordedExchange[] = [];

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    const org = await w.org();
    admin = org.admin;
    deptAdmin = await w.user({ organization_id: org.id, role: 'dept_admin', department: 'Support' });
    member = await w.user({ organization_id: org.id, department: 'Support' });
    reader = await w.bot(admin.api, { scopes: ['users:read'] });
    noScope = await w.bot(admin.api, { scopes: ['messages:read'] });
    other = await w.org();
    Api.recorder = (x) => {
      if (x.path.startsWith('/api/departments')) exchanges.push(x);
    };
  });
  afterAll(async () => {
    Api.recorder = undefined;
    await srv?.close();
  });

  const list = async (who: { api: Api }) =>
    expectStatus(await who.api.get('/api/departments'), 200).items as {
      id: string;
      name: string;
      member_count: number;
    }[];

  it('lists, creates, renames and deletes; users of a deleted department stay without one', async () => {
    // Support exists since users were created in it: two active users.
    const support = (await list(member)).find((d) => d.name === 'Support')!;
    expect(support).toMatchObject({ member_count: 2 });

    const created = expectStatus(await admin.api.post('/api/departments', { name: '  Finance  ' }), 201);
    expect(created).toMatchObject({ name: 'Finance', member_count: 0 });
    expect((await list(reader)).map((d) => d.name)).toEqual(['Finance', 'Support']);

    // A user put in it through PATCH /api/users counts.
    expectStatus(await admin.api.patch(`/api/users/${member.id}`, { department: 'Finance' }), 200);
    expect((await list(admin)).find((d) => d.id === created.id)!.member_count).toBe(1);

    const renamed = expectStatus(
      await admin.api.patch(`/api/departments/${created.id}`, { name: 'Accounting' }),
      200,
    );
    expect(renamed).toMatchObject({ id: created.id, name: 'Accounting', member_count: 1 });
    expect(expectStatus(await admin.api.get(`/api/users/${member.id}`), 200).department).toBe('Accounting');
    // Renaming to its own name is fine.
    expectStatus(await admin.api.patch(`/api/departments/${created.id}`, { name: 'Accounting' }), 200);

    const gone = expectStatus(await admin.api.delete(`/api/departments/${created.id}`), 200);
    expect(gone).toEqual({ id: created.id, deleted: true, users_unassigned: 1 });
    expect(expectStatus(await admin.api.get(`/api/users/${member.id}`), 200).department).toBeNull();
    expect((await list(admin)).some((d) => d.id === created.id)).toBe(false);
    expect((await admin.api.delete(`/api/departments/${created.id}`)).status).toBe(404);
  });

  it('answers 409 for a name the organization already has', async () => {
    const name = uniq('Legal');
    const a = expectStatus(await admin.api.post('/api/departments', { name }), 201);
    const dup = await admin.api.post('/api/departments', { name });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('conflict');
    const b = expectStatus(await admin.api.post('/api/departments', { name: `${name}-2` }), 201);
    expect((await admin.api.patch(`/api/departments/${b.id}`, { name })).status).toBe(409);
    // Another organization may use the same name.
    expectStatus(await other.admin.api.post('/api/departments', { name }), 201);
    expectStatus(await admin.api.delete(`/api/departments/${a.id}`), 200);
  });

  it('rejects bad input', async () => {
    const d = expectStatus(await admin.api.post('/api/departments', { name: uniq('Ops') }), 201);
    const cases: [() => Promise<{ status: number; body: any }>, string][] = [
      [() => admin.api.post('/api/departments', {}), 'name'],
      [() => admin.api.post('/api/departments', { name: '   ' }), 'name'],
      [() => admin.api.post('/api/departments', { name: 'x'.repeat(201) }), 'name'],
      [() => admin.api.post('/api/departments', { name: 5 }), 'name'],
      [() => admin.api.post('/api/departments', { name: 'ok', extra: true }), 'extra'],
      [() => admin.api.patch(`/api/departments/${d.id}`, {}), 'name'],
      [() => admin.api.patch('/api/departments/not-a-uuid', { name: 'x' }), 'department_id'],
      [() => admin.api.delete('/api/departments/not-a-uuid'), 'department_id'],
      [() => admin.api.get('/api/departments', { query: { q: 'x' } }), 'q'],
    ];
    for (const [call, field] of cases) {
      const r = await call();
      expect(r.status, field).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_input', field });
    }
    expect((await w.anon.get('/api/departments')).status).toBe(401);
  });

  it('lets only org admins manage them; other organizations see 404', async () => {
    const d = expectStatus(await admin.api.post('/api/departments', { name: uniq('Sales') }), 201);
    for (const who of [member, deptAdmin]) {
      const r = await who.api.post('/api/departments', { name: uniq('Nope') });
      expect(r.status).toBe(403);
      expect((await who.api.patch(`/api/departments/${d.id}`, { name: 'x' })).status).toBe(403);
      expect((await who.api.delete(`/api/departments/${d.id}`)).status).toBe(403);
    }
    // Bots: list with users:read; never manage.
    expect((await noScope.api.get('/api/departments')).body.error).toMatchObject({
      code: 'insufficient_scope',
      scope: 'users:read',
    });
    expect((await reader.api.post('/api/departments', { name: 'Bots' })).status).toBe(403);
    expect((await reader.api.delete(`/api/departments/${d.id}`)).status).toBe(403);
    // Another organization's admin: our departments do not exist for it, and are not listed.
    const r = await other.admin.api.patch(`/api/departments/${d.id}`, { name: 'Taken over' });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    expect((await other.admin.api.delete(`/api/departments/${d.id}`)).status).toBe(404);
    expect((await list(other.admin)).some((x) => x.id === d.id)).toBe(false);
    expect((await list(admin)).find((x) => x.id === d.id)!.name).toBe(d.name);
  });

  it('answers as the OpenAPI document says', async () => {
    const doc = expectStatus(await w.anon.get('/api/openapi.json'), 200);
    const { problems, validated } = checkAgainstOpenApi(doc, exchanges);
    expect(problems).toEqual([]);
    expect(validated).toBeGreaterThan(20);
    expect(new Set(exchanges.map((x) => x.status))).toEqual(new Set([200, 201, 400, 401, 403, 404, 409]));
  });
});
