import { useEffect, useState } from 'preact/hooks';
import type { Shell } from '../app';
import { api, describe, ok } from '../api/client';
import type { Body, Input } from '../api/types';
import { ROLES, USER_STATUSES } from './lists';

type Person = Body<'/api/users', 'get'>['items'][number];
type Department = Body<'/api/departments', 'get'>['items'][number];
type Role = (typeof ROLES)[number];
type UserStatus = (typeof USER_STATUSES)[number];
type NewUser = Input<'/api/users', 'post'>;
type UserPatch = Input<'/api/users/{userId}', 'patch'>;

const PAGE = 50;
const ROLE_LABEL: Record<Role, string> = {
  system_admin: 'System admin',
  org_admin: 'Organization admin',
  dept_admin: 'Department admin',
  member: 'Member',
};

/** The roles a person may give (the server checks again): nobody but a system_admin grants system_admin. */
function grantable(mine: string): Role[] {
  if (mine === 'system_admin') return [...ROLES];
  if (mine === 'org_admin') return ROLES.filter((r) => r !== 'system_admin');
  return ROLES.filter((r) => r === 'dept_admin' || r === 'member');
}

/**
 * The organization's people, their roles and departments (/admin/people): list and filter people,
 * add a person, change a role, department or state, and — for organization admins — create, rename
 * and delete departments. Department admins manage people of their own department (the server
 * refuses the rest, and its message is shown).
 */
export function People({ shell }: { shell: Shell }) {
  const me = shell.session.user;
  const orgAdmin = me.role === 'org_admin' || me.role === 'system_admin';
  const [departments, setDepartments] = useState<Department[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');

  const reloadDepartments = () =>
    ok(api.GET('/api/departments'))
      .then((r) => setDepartments(r.items))
      .catch((e: unknown) => setError(describe(e)));
  useEffect(() => void reloadDepartments(), []);
  useEffect(() => {
    document.title = 'People · Administration · Workroom';
    return () => (document.title = 'Workroom');
  }, []);

  return (
    <>
      <p class="sr-only" role="status">
        {status}
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <PeopleList
        me={me}
        departments={departments ?? []}
        onChanged={(text) => {
          setStatus(text);
          void reloadDepartments();
        }}
      />
      <Departments
        departments={departments}
        manage={orgAdmin}
        reload={reloadDepartments}
        onStatus={setStatus}
      />
    </>
  );
}

function PeopleList(props: {
  me: Shell['session']['user'];
  departments: Department[];
  onChanged(text: string): void;
}) {
  const { me, departments } = props;
  const [people, setPeople] = useState<Person[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [q, setQ] = useState('');
  const [query, setQuery] = useState('');
  const [role, setRole] = useState<Role | ''>('');
  const [department, setDepartment] = useState('');
  const [editing, setEditing] = useState<string | null>(null);
  const [adding, setAdding] = useState(false);

  useEffect(() => {
    const t = setTimeout(() => setQuery(q.trim()), 250);
    return () => clearTimeout(t);
  }, [q]);

  const load = async (offset: number) => {
    const params: { limit: number; offset: number; q?: string; role?: Role; department?: string } = {
      limit: PAGE,
      offset,
    };
    if (query) params.q = query;
    if (role) params.role = role;
    if (department) params.department = department;
    try {
      const r = await ok(api.GET('/api/users', { params: { query: params } }));
      setPeople((now) => (offset === 0 ? r.items : [...(now ?? []), ...r.items]));
      setMore(r.items.length === PAGE);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  };
  useEffect(() => void load(0), [query, role, department]);

  const changed = async (text: string) => {
    props.onChanged(text);
    await load(0);
  };

  return (
    <section aria-labelledby="people-title" class="panel">
      <div class="panel-head">
        <h2 id="people-title">People</h2>
        <button type="button" class="primary" onClick={() => setAdding(true)} disabled={adding}>
          Add a person
        </button>
      </div>
      {adding && (
        <AddPerson
          me={me}
          departments={departments}
          onCancel={() => setAdding(false)}
          onAdded={async (p) => {
            setAdding(false);
            await changed(`${p.display_name} added.`);
          }}
        />
      )}
      <form class="filters" role="search" aria-label="Find people" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name or email
          <input type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role | '')}>
            <option value="">All roles</option>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {ROLE_LABEL[r]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Department
          <select value={department} onChange={(e) => setDepartment(e.currentTarget.value)}>
            <option value="">All departments</option>
            {departments.map((d) => (
              <option key={d.id} value={d.name}>
                {d.name}
              </option>
            ))}
          </select>
        </label>
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {people === null ? (
        <p class="muted">Loading…</p>
      ) : people.length === 0 ? (
        <p class="muted">Nobody matches.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">People of the organization</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" class="wide">
                  Email
                </th>
                <th scope="col">Role</th>
                <th scope="col">Department</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {people.map((p) =>
                editing === p.id ? (
                  <EditPerson
                    key={p.id}
                    me={me}
                    person={p}
                    departments={departments}
                    onCancel={() => setEditing(null)}
                    onSaved={async (u) => {
                      setEditing(null);
                      await changed(`${u.display_name} saved.`);
                    }}
                  />
                ) : (
                  <tr key={p.id}>
                    <th scope="row">
                      {p.display_name}
                      {p.id === me.id && <span class="muted"> (you)</span>}
                    </th>
                    <td class="wide">{p.email}</td>
                    <td>{ROLE_LABEL[p.role as Role] ?? p.role}</td>
                    <td>{p.department ?? '—'}</td>
                    <td>{p.status}</td>
                    <td>
                      <button
                        type="button"
                        aria-label={`Edit ${p.display_name}`}
                        onClick={() => setEditing(p.id)}
                      >
                        Edit
                      </button>
                    </td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
      {more && (
        <button type="button" onClick={() => void load(people?.length ?? 0)}>
          More people
        </button>
      )}
    </section>
  );
}

function DepartmentSelect(props: {
  id: string;
  value: string;
  departments: Department[];
  onChange(v: string): void;
}) {
  return (
    <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
      <option value="">No department</option>
      {props.departments.map((d) => (
        <option key={d.id} value={d.name}>
          {d.name}
        </option>
      ))}
    </select>
  );
}

function AddPerson(props: {
  me: Shell['session']['user'];
  departments: Department[];
  onCancel(): void;
  onAdded(p: Person): Promise<void>;
}) {
  const roles = grantable(props.me.role);
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [department, setDepartment] = useState('');
  const [error, setError] = useState<string | null>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setError(null);
    const body: NewUser = { email, display_name: name, password, role };
    if (department) body.department = department;
    try {
      await props.onAdded(await ok(api.POST('/api/users', { body })));
    } catch (err) {
      setError(describe(err));
    }
  }

  return (
    <form class="card form" aria-labelledby="add-person-title" onSubmit={(e) => void submit(e)}>
      <h3 id="add-person-title">Add a person</h3>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <label for="person-email">Email</label>
      <input
        id="person-email"
        type="email"
        required
        value={email}
        onInput={(e) => setEmail(e.currentTarget.value)}
      />
      <label for="person-name">Display name</label>
      <input id="person-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for="person-password">Initial password (at least 8 characters)</label>
      <input
        id="person-password"
        type="password"
        autocomplete="new-password"
        required
        minLength={8}
        value={password}
        onInput={(e) => setPassword(e.currentTarget.value)}
      />
      <label for="person-role">Role</label>
      <select id="person-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
        {roles.map((r) => (
          <option key={r} value={r}>
            {ROLE_LABEL[r]}
          </option>
        ))}
      </select>
      <label for="person-department">Department</label>
      <DepartmentSelect
        id="person-department"
        value={department}
        departments={props.departments}
        onChange={setDepartment}
      />
      <div class="buttons">
        <button type="submit" class="primary">
          Add person
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function EditPerson(props: {
  me: Shell['session']['user'];
  person: Person;
  departments: Department[];
  onCancel(): void;
  onSaved(p: Person): Promise<void>;
}) {
  const p = props.person;
  const roles = grantable(props.me.role);
  const [role, setRole] = useState<Role>(p.role as Role);
  const [department, setDepartment] = useState(p.department ?? '');
  const [state, setState] = useState<UserStatus>(p.status as UserStatus);
  const [error, setError] = useState<string | null>(null);
  const id = `edit-${p.id}`;

  async function save(e: Event) {
    e.preventDefault();
    const body: UserPatch = {};
    if (role !== p.role) body.role = role;
    if (department !== (p.department ?? '')) body.department = department === '' ? null : department;
    if (state !== p.status) body.status = state;
    if (Object.keys(body).length === 0) {
      props.onCancel();
      return;
    }
    try {
      await props.onSaved(
        await ok(api.PATCH('/api/users/{userId}', { params: { path: { userId: p.id } }, body })),
      );
    } catch (err) {
      setError(describe(err));
    }
  }

  return (
    <tr class="selected">
      <th scope="row">{p.display_name}</th>
      <td class="wide">{p.email}</td>
      <td colSpan={4}>
        <form class="row-form" aria-label={`Edit ${p.display_name}`} onSubmit={(e) => void save(e)}>
          <label for={`${id}-role`}>Role</label>
          <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {(roles.includes(p.role as Role) ? roles : [p.role as Role, ...roles]).map((r) => (
              <option key={r} value={r}>
                {ROLE_LABEL[r] ?? r}
              </option>
            ))}
          </select>
          <label for={`${id}-department`}>Department</label>
          <DepartmentSelect
            id={`${id}-department`}
            value={department}
            departments={props.departments}
            onChange={setDepartment}
          />
          <label for={`${id}-state`}>State</label>
          <select
            id={`${id}-state`}
            value={state}
            onChange={(e) => setState(e.currentTarget.value as UserStatus)}
          >
            {USER_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          {state === 'deactivated' && p.status !== 'deactivated' && (
            <p class="muted">Deactivating signs them out everywhere at once.</p>
          )}
          {error !== null && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          <div class="buttons">
            <button type="submit" class="primary">
              Save
            </button>
            <button type="button" onClick={props.onCancel}>
              Cancel
            </button>
          </div>
        </form>
      </td>
    </tr>
  );
}

function Departments(props: {
  departments: Department[] | null;
  manage: boolean;
  reload(): Promise<void>;
  onStatus(text: string): void;
}) {
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<string | null>(null);
  const [newName, setNewName] = useState('');
  const [deleting, setDeleting] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const run = async (call: () => Promise<unknown>, text: string) => {
    setError(null);
    try {
      await call();
      props.onStatus(text);
      await props.reload();
      return true;
    } catch (e) {
      setError(describe(e));
      return false;
    }
  };

  return (
    <section aria-labelledby="departments-title" class="panel">
      <div class="panel-head">
        <h2 id="departments-title">Departments</h2>
      </div>
      {!props.manage && <p class="muted">Organization admins create, rename and delete departments.</p>}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {props.manage && (
        <form
          class="filters"
          aria-label="Add a department"
          onSubmit={(e) => {
            e.preventDefault();
            void run(
              () => ok(api.POST('/api/departments', { body: { name } })),
              `Department ${name} added.`,
            ).then((done) => done && setName(''));
          }}
        >
          <label>
            New department
            <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <button type="submit" class="primary">
            Add department
          </button>
        </form>
      )}
      {props.departments === null ? (
        <p class="muted">Loading…</p>
      ) : props.departments.length === 0 ? (
        <p class="muted">No departments yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Departments</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Active people</th>
                {props.manage && (
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {props.departments.map((d) => (
                <tr key={d.id}>
                  <th scope="row">
                    {renaming === d.id ? (
                      <form
                        class="row-form"
                        aria-label={`Rename ${d.name}`}
                        onSubmit={(e) => {
                          e.preventDefault();
                          void run(
                            () =>
                              ok(
                                api.PATCH('/api/departments/{departmentId}', {
                                  params: { path: { departmentId: d.id } },
                                  body: { name: newName },
                                }),
                              ),
                            `Department renamed to ${newName}.`,
                          ).then((done) => done && setRenaming(null));
                        }}
                      >
                        <label for={`rename-${d.id}`} class="sr-only">
                          New name of {d.name}
                        </label>
                        <input
                          id={`rename-${d.id}`}
                          required
                          value={newName}
                          onInput={(e) => setNewName(e.currentTarget.value)}
                        />
                        <button type="submit" class="primary">
                          Save
                        </button>
                        <button type="button" onClick={() => setRenaming(null)}>
                          Cancel
                        </button>
                      </form>
                    ) : (
                      d.name
                    )}
                  </th>
                  <td>{d.member_count}</td>
                  {props.manage && (
                    <td>
                      {deleting === d.id ? (
                        <span class="buttons">
                          <span>
                            Delete {d.name}?{' '}
                            {d.member_count > 0 && `Its ${d.member_count} people keep their accounts.`}
                          </span>
                          <button
                            type="button"
                            class="danger"
                            onClick={() =>
                              void run(
                                () =>
                                  ok(
                                    api.DELETE('/api/departments/{departmentId}', {
                                      params: { path: { departmentId: d.id } },
                                    }),
                                  ),
                                `Department ${d.name} deleted.`,
                              ).then(() => setDeleting(null))
                            }
                          >
                            Delete department
                          </button>
                          <button type="button" onClick={() => setDeleting(null)}>
                            Keep it
                          </button>
                        </span>
                      ) : (
                        <span class="buttons">
                          <button
                            type="button"
                            aria-label={`Rename ${d.name}`}
                            onClick={() => {
                              setNewName(d.name);
                              setRenaming(d.id);
                            }}
                          >
                            Rename
                          </button>
                          <button
                            type="button"
                            aria-label={`Delete ${d.name}`}
                            onClick={() => setDeleting(d.id)}
                          >
                            Delete…
                          </button>
                        </span>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
