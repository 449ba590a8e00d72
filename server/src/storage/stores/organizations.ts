import { sql } from 'kysely';
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

  getDepartment(id: string): Promise<DepartmentRow | undefined> {
    return this.db.selectFrom('departments').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Departments of an organization by name, with how many active users each has. */
  listDepartments(orgId: string): Promise<(DepartmentRow & { member_count: number | string })[]> {
    return this.db
      .selectFrom('departments')
      .selectAll('departments')
      .select(
        sql<
          number | string
        >`(select count(*) from users u where u.department_id = departments.id and u.status = 'active')`.as(
          'member_count',
        ),
      )
      .where('departments.org_id', '=', orgId)
      .orderBy(sql`lower(departments.name)`)
      .orderBy('departments.id')
      .limit(1000)
      .execute();
  }

  /** Inserts a department; a second one with the same name in the organization is a unique violation. */
  async createDepartment(row: DepartmentRow): Promise<void> {
    await this.db.insertInto('departments').values(row).execute();
  }

  async renameDepartment(id: string, name: string): Promise<void> {
    await this.db.updateTable('departments').set({ name }).where('id', '=', id).execute();
  }

  /** Deletes a department; its users keep working without one. Answers how many users it had. */
  async deleteDepartment(id: string, now: string): Promise<number> {
    const res = await this.db
      .updateTable('users')
      .set({ department_id: null, updated_at: now })
      .where('department_id', '=', id)
      .executeTakeFirst();
    await this.db.deleteFrom('departments').where('id', '=', id).execute();
    return Number(res.numUpdatedRows);
  }
}
