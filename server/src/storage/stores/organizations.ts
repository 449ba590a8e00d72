import type { DepartmentRow, OrganizationRow } from '../schema.js';
import type { Executor } from './executor.js';
import { newId, nowIso } from '../../domain/ids.js';

export class OrganizationStore {
  constructor(private readonly db: Executor) {}

  async create(name: string): Promise<OrganizationRow> {
    const row = { id: newId(), name, created_at: nowIso() };
    await this.db.insertInto('organizations').values(row).execute();
    return row;
  }

  get(id: string): Promise<OrganizationRow | undefined> {
    return this.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  list(): Promise<OrganizationRow[]> {
    return this.db.selectFrom('organizations').selectAll().orderBy('created_at').execute();
  }

  async count(): Promise<number> {
    const r = await this.db
      .selectFrom('organizations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Departments are named per organization and created on first use. */
  async findOrCreateDepartment(orgId: string, name: string): Promise<DepartmentRow> {
    const existing = await this.getDepartmentByName(orgId, name);
    if (existing) return existing;
    const row = { id: newId(), org_id: orgId, name, created_at: nowIso() };
    await this.db
      .insertInto('departments')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'name']).doNothing())
      .execute();
    return (await this.getDepartmentByName(orgId, name)) ?? row;
  }

  getDepartmentByName(orgId: string, name: string): Promise<DepartmentRow | undefined> {
    return this.db
      .selectFrom('departments')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('name', '=', name)
      .executeTakeFirst();
  }
}
