import { randomBytes } from 'node:crypto';
import { Api, expectStatus } from './client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './server.js';

/**
 * Builds test data through the public API only (no shortcuts into the database), so every test also
 * exercises the endpoints it relies on.
 */
export const uniq = (p: string) => `${p}-${randomBytes(4).toString('hex')}`;

export async function login(baseUrl: string, email: string, password: string): Promise<string> {
  const res = await new Api(baseUrl).post('/api/auth/login', { email, password });
  return expectStatus(res, 200).token as string;
}

export interface UserHandle {
  id: string;
  email: string;
  token: string;
  api: Api;
}

export interface BotHandle {
  id: string;
  key: string;
  keyId: string;
  api: Api;
}

export class World {
  readonly anon: Api;
  admin!: UserHandle;

  constructor(readonly baseUrl: string) {
    this.anon = new Api(baseUrl);
  }

  static async create(baseUrl: string): Promise<World> {
    const w = new World(baseUrl);
    const token = await login(baseUrl, ADMIN_EMAIL, ADMIN_PASSWORD);
    const me = expectStatus(await w.anon.get('/api/auth/me', { token }), 200);
    w.admin = { id: me.id, email: ADMIN_EMAIL, token, api: w.anon.as(token) };
    return w;
  }

  /** A new organization (as system_admin) with an org_admin in it. */
  async org(name = uniq('org')): Promise<{ id: string; admin: UserHandle }> {
    const org = expectStatus(await this.admin.api.post('/api/organizations', { name }), 201);
    const admin = await this.user({ role: 'org_admin', organization_id: org.id }, this.admin.api);
    return { id: org.id, admin };
  }

  /** Creates a user (by default through the system admin) and signs it in. */
  async user(fields: Record<string, unknown> = {}, by: Api = this.admin.api): Promise<UserHandle> {
    const email = `${uniq('user')}@test.local`;
    const password = 'user-password-1';
    const u = expectStatus(
      await by.post('/api/users', { email, display_name: email.split('@')[0], password, ...fields }),
      201,
    );
    const token = await login(this.baseUrl, email, password);
    return { id: u.id, email, token, api: this.anon.as(token) };
  }

  async channel(by: Api, fields: Record<string, unknown> = {}): Promise<string> {
    return expectStatus(await by.post('/api/channels', { name: uniq('chan'), ...fields }), 201).id;
  }

  async project(by: Api): Promise<{ projectId: string; topicId: string }> {
    const projectId = expectStatus(await by.post('/api/projects', { name: uniq('proj') }), 201).id;
    const topicId = expectStatus(
      await by.post(`/api/projects/${projectId}/topics`, { name: uniq('topic') }),
      201,
    ).id;
    return { projectId, topicId };
  }

  /** A custom bot registered by `by`, with a key (all scopes unless given). */
  async bot(
    by: Api,
    key: Record<string, unknown> = {},
    bot: Record<string, unknown> = {},
  ): Promise<BotHandle> {
    const b = expectStatus(await by.post('/api/bots', { name: uniq('bot'), ...bot }), 201);
    const k = expectStatus(await by.post(`/api/bots/${b.bot_id}/api-keys`, key), 201);
    return { id: b.bot_id, key: k.key, keyId: k.id, api: this.anon.as(k.key) };
  }
}
