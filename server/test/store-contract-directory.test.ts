import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import type { Storage } from '../src/storage/storage.js';
import { at, dialectName, openContractWorld } from './helpers/store-fixtures.js';

/**
 * Contract of DirectoryStore (mentions, hashtags, preview cards) on SQLite and PostgreSQL: what matches a
 * typed text (case-insensitive, wildcards literal), channel members first, then by lower-cased name and
 * id, limits, and counts answered as numbers.
 */
describe(`store contract: directory (${dialectName()})`, () => {
  let storage: Storage;
  let close: () => Promise<void>;
  let w: Awaited<ReturnType<typeof openContractWorld>>;

  beforeAll(async () => {
    w = await openContractWorld();
    ({ storage, close } = w);
  });
  afterAll(() => close());
  const dir = () => storage.stores.directory;
  const newOrg = async () => (await storage.stores.orgs.create(`o-${newId()}`)).id;

  it('searchUsers: active users by name or email text; channel members first, then lower-cased name, then id; department named; limit', async () => {
    const org = await newOrg();
    const dept = await storage.stores.orgs.findOrCreateDepartment(org, 'R&D');
    const c = await w.channel();
    const ann = await w.user({
      org_id: org,
      display_name: 'ann',
      email: 'ann@x.test',
      department_id: dept.id,
    });
    const bob = await w.user({ org_id: org, display_name: 'Bob', email: 'bob@x.test' });
    const cat = await w.user({
      org_id: org,
      display_name: 'cat_50%',
      email: 'cat@y.test',
      role: 'org_admin',
    });
    await w.user({ org_id: org, display_name: 'Anna Gone', status: 'deactivated' });
    await w.user({ display_name: 'Ann Elsewhere' }); // another organization
    await storage.stores.containers.addMember('channel', c.id, { type: 'user', id: cat.id }, at(0));
    const names = async (q: string, channelId: string | null = null, limit = 10) =>
      (await dir().searchUsers(org, q, channelId, limit)).map((u) => u.display_name);
    expect(await names('')).toEqual(['ann', 'Bob', 'cat_50%']);
    expect(await names('', c.id)).toEqual(['cat_50%', 'ann', 'Bob']);
    expect(await names('AN')).toEqual(['ann']);
    expect(await names('X.TEST')).toEqual(['ann', 'Bob']);
    expect(await names('_50%')).toEqual(['cat_50%']);
    expect(await names('%')).toEqual(['cat_50%']);
    expect(await names('', null, 2)).toEqual(['ann', 'Bob']);
    const [first] = await dir().searchUsers(org, 'ann', c.id, 1);
    expect(first).toEqual({
      id: ann.id,
      display_name: 'ann',
      email: 'ann@x.test',
      role: 'member',
      department: 'R&D',
      in_channel: false,
    });
    expect((await dir().searchUsers(org, 'cat', c.id, 1))[0]?.in_channel).toBe(true);
    expect((await dir().searchUsers(org, 'bob', null, 1))[0]).toMatchObject({ id: bob.id, department: null });
  });

  it('searchBots: active bots of the organization and API platform bots; members first, lower-cased name', async () => {
    const org = await newOrg();
    const c = await w.channel();
    const tag = newId().slice(-6);
    const a = await w.bot({ org_id: org, name: `zeta-${tag}` });
    const b = await w.bot({ org_id: org, name: `Alpha-${tag}` });
    await w.bot({ org_id: org, name: `off-${tag}`, status: 'disabled' });
    const gone = await w.bot({ org_id: org, name: `gone-${tag}` });
    await storage.stores.bots.softDelete(gone.id, at(0));
    const platform = await w.bot({ type: 'platform', name: `beta-${tag}` }); // another organization
    await w.bot({ type: 'platform', builtin: `p-${newId()}`, name: `builtin-${tag}` });
    await w.bot({ name: `foreign-${tag}` });
    await storage.stores.containers.addMember('channel', c.id, { type: 'bot', id: a.id }, at(0));
    const ids = async (q: string, channelId: string | null = null) =>
      (await dir().searchBots(org, q, channelId, 10)).map((x) => x.id);
    expect(await ids(tag)).toEqual([b.id, platform.id, a.id]);
    expect(await ids(tag, c.id)).toEqual([a.id, b.id, platform.id]);
    expect(await ids(`ALPHA-${tag}`)).toEqual([b.id]);
    expect((await dir().searchBots(org, `zeta-${tag}`, c.id, 10))[0]).toEqual({
      id: a.id,
      name: a.name,
      type: 'custom',
      description: '',
      in_channel: true,
    });
  });

  it('searchDepartments / searchTags: by text, lower-cased name order, limit; active member counts as numbers; a tag name once per organization', async () => {
    const org = await newOrg();
    const eng = await storage.stores.orgs.findOrCreateDepartment(org, 'engineering');
    await storage.stores.orgs.findOrCreateDepartment(org, 'Design');
    await storage.stores.orgs.findOrCreateDepartment(org, 'Eng_ops');
    await w.user({ org_id: org, department_id: eng.id });
    await w.user({ org_id: org, department_id: eng.id });
    await w.user({ org_id: org, department_id: eng.id, status: 'deactivated' });
    const depts = await dir().searchDepartments(org, '', 10);
    expect(depts.map((d) => [d.name, d.member_count])).toEqual([
      ['Design', 0],
      ['Eng_ops', 0], // lower-cased: 'eng_' < 'engi' ('_' is 0x5f)
      ['engineering', 2],
    ]);
    expect((await dir().searchDepartments(org, 'ENG', 10)).map((d) => d.name)).toEqual([
      'Eng_ops',
      'engineering',
    ]);
    expect((await dir().searchDepartments(org, 'g_', 10)).map((d) => d.name)).toEqual(['Eng_ops']);
    expect(await dir().searchDepartments(org, '', 1)).toHaveLength(1);
    const tag = (name: string) => ({ id: newId(), org_id: org, name, created_at: at(0) });
    await dir().insertTag(tag('release'));
    await dir().insertTag(tag('Bug'));
    await dir().insertTag(tag('release')); // ignored
    expect((await dir().searchTags(org, '', 10)).map((t) => t.name)).toEqual(['Bug', 'release']);
    expect((await dir().searchTags(org, 'REL', 10)).map((t) => t.name)).toEqual(['release']);
    expect(await dir().searchTags(await newOrg(), '', 10)).toEqual([]);
  });

  it('searchTasks / getTaskWithPlace: tasks of the given topics by title text, newest change first, with topic and project; counts for preview cards', async () => {
    const { project, topic } = await w.projectWithTopic();
    const t = (id: string, title: string, s: number, status = 'open') => ({
      id,
      org_id: project.org_id,
      topic_id: topic.id,
      title,
      description: 'ship it',
      priority: 'medium',
      status,
      assignee_id: null,
      due_date: null,
      created_by_type: 'user' as const,
      created_by_id: 'u',
      created_at: at(s),
      updated_at: at(s),
    });
    await storage.stores.tasks.insert(t('tk-a', 'Ship v1', 1, 'done'));
    await storage.stores.tasks.insert(t('tk-b', 'ship v2', 2));
    await storage.stores.tasks.insert(t('tk-c', 'Plan', 3));
    expect((await dir().searchTasks([topic.id], 'SHIP', 10)).map((x) => x.id)).toEqual(['tk-b', 'tk-a']);
    expect((await dir().searchTasks([topic.id], '', 2)).map((x) => x.id)).toEqual(['tk-c', 'tk-b']);
    expect(await dir().searchTasks([], 'ship', 10)).toEqual([]);
    expect(await dir().searchTasks([topic.id], 'it', 10)).toEqual([]); // title only
    expect(await dir().getTaskWithPlace('tk-c')).toMatchObject({
      id: 'tk-c',
      title: 'Plan',
      topic_name: topic.name,
      project_id: project.id,
      project_name: project.name,
    });
    expect(await dir().getTaskWithPlace(newId())).toBeUndefined();
    await storage.stores.containers.addMember('project', project.id, { type: 'user', id: newId() }, at(0));
    expect(await dir().projectCounts(project)).toEqual({
      member_count: 1,
      topic_count: 1,
      task_count: 3,
      open_task_count: 2,
    });
    const c = await w.channel();
    await storage.stores.containers.addMember('channel', c.id, { type: 'user', id: newId() }, at(0));
    await storage.stores.containers.addMember('channel', c.id, { type: 'bot', id: newId() }, at(0));
    await w.message({ channel_id: c.id });
    await w.message({ channel_id: c.id }, { deleted_at: at(1) });
    expect(await dir().channelCounts(c)).toEqual({ member_count: 2, message_count: 1 });
  });
});
