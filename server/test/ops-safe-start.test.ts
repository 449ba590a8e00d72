import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { Install } from './helpers/ops.js';
import { freePort } from './helpers/server-proc.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './helpers/server.js';
import { login } from './helpers/world.js';

/**
 * Safe start and the operator's subcommands (issue 19): one server per SQLite data directory, a database
 * of a newer version refused by name, `migrate --check` for a pipeline, WORKROOM_ADMIN_* on an existing
 * install warned about, create-admin / reset-password / check-config.
 */
const PG = Boolean(process.env.DATABASE_URL);
const installs: Install[] = [];
const install = async (extra: Record<string, string> = {}) => {
  const i = await Install.create(extra);
  installs.push(i);
  return i;
};
afterAll(async () => {
  for (const i of installs) await i.cleanup();
});
const NO_STACK = /^\s+at /m;

/** Every user's stored password hash by email, read from the installation's database. */
async function passwordHashes(inst: Install): Promise<Record<string, string>> {
  const sql = 'select email, password_hash from users';
  let rows: { email: string; password_hash: string }[];
  if (inst.schema) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    try {
      rows = (await c.query(sql.replace('users', `"${inst.schema}".users`))).rows;
    } finally {
      await c.end();
    }
  } else {
    const db = new BetterSqlite3(join(inst.dataDir, 'workroom.db'), { readonly: true });
    try {
      rows = db.prepare(sql).all() as typeof rows;
    } finally {
      db.close();
    }
  }
  return Object.fromEntries(rows.map((r) => [r.email, r.password_hash]));
}

describe('one server per SQLite data directory', { timeout: 240_000 }, () => {
  it.skipIf(PG)(
    'a second server on the same data directory is refused naming the first one’s pid; exit 3',
    async () => {
      const inst = await install();
      const first = await inst.start();
      const lock = JSON.parse(readFileSync(join(inst.dataDir, 'workroom.lock'), 'utf8')) as { pid: number };
      expect(lock.pid).toBe(first.child.pid);
      const port2 = String(inst.port + 1);
      const second = await inst.run(['start'], { PORT: port2 });
      expect(second.code).toBe(3);
      expect(second.out).toContain(`in use by another Workroom process: pid ${first.child.pid}`);
      expect(second.out).not.toMatch(NO_STACK);
      // `migrate` and `restore` take the lock too; the first server serves on.
      expect((await inst.run(['migrate'])).code).toBe(3);
      expect((await fetch(`${inst.url}/api/health`)).ok).toBe(true);
      await first.kill('SIGTERM');
    },
  );

  it.skipIf(PG)('a lock left by a process that is gone is taken over', async () => {
    const inst = await install();
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const deadPid = Number(gone.stdout);
    writeFileSync(
      join(inst.dataDir, 'workroom.lock'),
      JSON.stringify({
        pid: deadPid,
        host: hostname(),
        started: new Date().toISOString(),
        command: 'workroom start',
      }),
    );
    const p = await inst.start();
    expect(p.out).toContain(`took over the lock of pid ${deadPid}`);
    await p.kill('SIGTERM');
  });

  it.runIf(PG)('PostgreSQL: two servers on one database start side by side (no lock)', async () => {
    const inst = await install();
    const a = await inst.start();
    const port2 = await freePort(); // not inst.port + 1: another test's server may hold that one
    const b = inst.spawn(['start'], { PORT: String(port2) });
    await expect
      .poll(
        async () => (await fetch(`http://127.0.0.1:${port2}/api/health`).catch(() => null))?.ok ?? false,
        { timeout: 45_000 },
      )
      .toBe(true)
      .catch((err: Error) => {
        throw new Error(`the second server did not come up (${err.message}):\n${b.out}`);
      });
    await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
  });
});

describe('versions', { timeout: 240_000 }, () => {
  it('a database migrated by a newer version is refused naming both versions (exit 4, no stack trace)', async () => {
    const inst = await install();
    expect((await inst.run(['migrate'])).code).toBe(0);
    if (inst.schema) {
      const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await c.connect();
      await c.query(
        `insert into "${inst.schema}".kysely_migration (name, timestamp) values ('9999_future', now()::text)`,
      );
      await c.end();
    } else {
      const db = new BetterSqlite3(join(inst.dataDir, 'workroom.db'));
      db.prepare(`insert into kysely_migration (name, timestamp) values ('9999_future', '2030-01-01')`).run();
      db.close();
    }
    const version = (
      JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as { version: string }
    ).version;
    for (const args of [['start'], ['migrate'], ['migrate', '--check']]) {
      const r = await inst.run(args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.out).toContain('migrated by a newer Workroom: it has schema version 9999_future');
      expect(r.out).toMatch(
        new RegExp(`this Workroom ${version.replace(/\./g, '\\.')} knows schema versions up to \\d{4}_`),
      );
      expect(r.out).not.toMatch(NO_STACK);
    }
  });

  it('migrate --check: exit 6 listing what is pending, then 0 after migrate', async () => {
    const inst = await install();
    const before = await inst.run(['migrate', '--check']);
    expect(before.code).toBe(6);
    expect(before.out).toContain('pending: 0001_initial');
    const m = await inst.run(['migrate']);
    expect(m.code).toBe(0);
    expect(m.out).toMatch(/applied: 0001_initial, /);
    const after = await inst.run(['migrate', '--check']);
    expect(after.code).toBe(0);
    expect(after.out).toMatch(/, 0 pending/);
    // A server starts on it without migrating anything.
    const p = await inst.start();
    expect(p.out).not.toContain('database migrated');
    await p.kill('SIGTERM');
  });
});

describe('administrators', { timeout: 240_000 }, () => {
  it('WORKROOM_ADMIN_* on an existing install: a warning says they were ignored and why', async () => {
    const inst = await install();
    await (await inst.start()).kill('SIGTERM');
    const again = await inst.start({
      WORKROOM_ADMIN_EMAIL: 'someone.else@test.local',
      WORKROOM_ADMIN_PASSWORD: 'another-password-9',
    });
    await expect
      .poll(() => again.out, { timeout: 10_000 })
      .toContain('ignored: they only create the first organization');
    expect(again.out).toContain('WORKROOM_ADMIN_EMAIL, WORKROOM_ADMIN_PASSWORD ignored');
    // and indeed: the first administrator's password still holds, the new one does not exist
    expect(await login(inst.url, ADMIN_EMAIL, ADMIN_PASSWORD)).toMatch(/^wrut_/);
    const anon = new Api(inst.url);
    expect(
      (
        await anon.post('/api/auth/login', {
          email: 'someone.else@test.local',
          password: 'another-password-9',
        })
      ).status,
    ).toBe(401);
    await again.kill('SIGTERM');
    // Without them set, no warning.
    const quiet = await inst.start({ WORKROOM_ADMIN_EMAIL: null, WORKROOM_ADMIN_PASSWORD: null });
    expect((await new Api(inst.url).get('/api/health')).status).toBe(200);
    expect(quiet.out).not.toContain('ignored: they only create');
    await quiet.kill('SIGTERM');
  });

  it('create-admin and reset-password work beside a running server; mistakes get exit 64/1', async () => {
    const inst = await install();
    const p = await inst.start();
    const anon = new Api(inst.url);
    // create-admin with a password from stdin
    const created = await inst.run(
      ['create-admin', '--email', 'Ops@Test.local', '--name', 'Ops', '--password-stdin'],
      {},
      'ops-password-1\n',
    );
    expect(created.code, created.out).toBe(0);
    expect(created.out).toContain('created system_admin ops@test.local');
    const token = await login(inst.url, 'ops@test.local', 'ops-password-1');
    const me = expectStatus(await anon.get('/api/auth/me', { token }), 200);
    expect(me.role).toBe('system_admin');
    expect((await inst.run(['create-admin', '--email', 'ops@test.local'])).code).toBe(1); // exists
    expect((await inst.run(['create-admin'])).code).toBe(64);
    expect((await inst.run(['create-admin', '--email', 'x@test.local', '--role', 'member'])).code).toBe(64);
    expect((await inst.run(['create-admin', '--email', 'x@test.local', '--org', 'no-such-org'])).code).toBe(
      1,
    );
    // reset-password with a generated password: shown once, works, and the old sessions are revoked
    const reset = await inst.run(['reset-password', 'ops@test.local']);
    expect(reset.code, reset.out).toBe(0);
    const generated = /password\s+(\S+)\s+It is shown only this once/.exec(reset.out)?.[1];
    expect(generated).toBeDefined();
    expect((await anon.get('/api/auth/me', { token })).status).toBe(401);
    expect(
      (await anon.post('/api/auth/login', { email: 'ops@test.local', password: 'ops-password-1' })).status,
    ).toBe(401);
    expect(await login(inst.url, 'ops@test.local', generated!)).toMatch(/^wrut_/);
    expect((await inst.run(['reset-password', 'nobody@test.local'])).code).toBe(1);
    expect((await inst.run(['reset-password'])).code).toBe(64);
    expect(
      (await inst.run(['reset-password', 'ops@test.local', '--password-stdin'], {}, 'short\n')).code,
    ).toBe(64);
    // A user made through the API too: every hash this process made has the server's own cost
    // (PASSWORD_COST; test servers in process use a cheaper one, helpers/server.ts).
    const adminToken = await login(inst.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    expectStatus(
      await anon.post(
        '/api/users',
        { email: 'member@test.local', display_name: 'M', password: 'member-password-1' },
        { token: adminToken },
      ),
      201,
    );
    await p.kill('SIGTERM');
    const hashes = await passwordHashes(inst);
    expect(Object.keys(hashes).sort()).toEqual([ADMIN_EMAIL, 'member@test.local', 'ops@test.local']);
    for (const h of Object.values(hashes)) expect(h).toMatch(/^scrypt\$16384\$8\$1\$/);
  });

  it('check-config: 0 with a summary for a good configuration, 2 naming the variable for a bad one', async () => {
    const inst = await install();
    const good = await inst.run(['check-config']);
    expect(good.code, good.out).toBe(0);
    expect(good.out).toContain('the configuration is valid');
    expect(good.out).toContain('ok    the database answers');
    if (inst.schema) expect(good.out).not.toContain(new URL(process.env.DATABASE_URL!).password || '\u0000');
    const bad = await inst.run(['check-config'], { WORKROOM_WEBHOOK_TIMEOUT: 'soon' });
    expect(bad.code).toBe(2);
    expect(bad.out).toContain('WORKROOM_WEBHOOK_TIMEOUT');
    expect(bad.out).not.toMatch(NO_STACK);
    // the server refuses the same configuration with the same exit code
    expect((await inst.run(['start'], { WORKROOM_WEBHOOK_TIMEOUT: 'soon' })).code).toBe(2);
  });
});
