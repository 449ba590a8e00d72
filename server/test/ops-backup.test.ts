import { createHmac, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { Install } from './helpers/ops.js';
import { Receiver } from './helpers/receiver.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './helpers/server.js';
import { login, uniq } from './helpers/world.js';

/**
 * `workroom backup` of a running server, `workroom restore` into a fresh installation (on PostgreSQL a
 * fresh database): the restored server has the same messages, the same files, and the webhook secrets
 * still sign (the encryption key put back beside it, as docs/OPERATIONS.md says).
 */
const PG_URL = process.env.DATABASE_URL;
const installs: Install[] = [];
const dirs: string[] = [];
let restoreDb: string | undefined;
let rx: Receiver;
beforeAll(async () => {
  rx = await Receiver.start();
}, 180_000);
afterAll(async () => {
  await rx.close();
  for (const i of installs) await i.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  if (PG_URL && restoreDb) {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`drop database if exists "${restoreDb}" with (force)`);
    await c.end();
  }
});

const hmac = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('backup and restore', { timeout: 240_000 }, () => {
  it('restore into a fresh installation: same messages, same files, webhook secrets still sign', async () => {
    const env = { WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true' };
    const a = await Install.create(env);
    installs.push(a);
    const server = await a.start();
    const admin = new Api(a.url, await login(a.url, ADMIN_EMAIL, ADMIN_PASSWORD));
    const channel = expectStatus(await admin.post('/api/channels', { name: uniq('backup') }), 201)
      .id as string;
    for (const content of ['first', 'second', 'third'])
      expectStatus(await admin.post(`/api/channels/${channel}/messages`, { content }), 201);
    const bytes = randomBytes(200_000);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), 'data.bin');
    const upload = await fetch(`${a.url}/api/channels/${channel}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.token}` },
      body: form,
    });
    expect(upload.status).toBe(201);
    const fileId = ((await upload.json()) as { id: string }).id;
    const hook = rx.hook(uniq('restored'));
    const bot = expectStatus(
      await admin.post('/api/bots', { name: uniq('bot'), webhook_url: hook, events: ['message.created'] }),
      201,
    );
    const secret = expectStatus(await admin.post(`/api/bots/${bot.bot_id}/webhook-secret`), 201)
      .secret as string;
    expectStatus(await admin.post(`/api/channels/${channel}/members`, { bot_id: bot.bot_id }), 201);
    expectStatus(
      await admin.post(`/api/channels/${channel}/messages`, { content: 'before the backup' }),
      201,
    );
    await expect.poll(() => rx.at(hook).length, { timeout: 15_000 }).toBe(1);
    expect(rx.at(hook)[0]!.headers['x-workroom-signature']).toBe(hmac(secret, rx.at(hook)[0]!.body));
    const messagesBefore = expectStatus(await admin.get(`/api/channels/${channel}/messages`), 200).items as {
      id: string;
      content: string;
    }[];

    // The backup is taken while the server runs.
    const backupDir = join(mkdtempSync(join(tmpdir(), 'workroom-backup-')), 'b1');
    dirs.push(join(backupDir, '..'));
    const backup = await a.run(['backup', backupDir]);
    expect(backup.code, backup.out).toBe(0);
    expect(backup.out).toContain('The encryption key is NOT in the backup');
    const manifest = JSON.parse(readFileSync(join(backupDir, 'backup.json'), 'utf8')) as {
      files: number;
      database: string;
    };
    // On PostgreSQL the bytes are in the database by default (WORKROOM_BLOB_STORE=database): in the dump.
    expect(manifest.files).toBe(PG_URL ? 0 : 1);
    expect(manifest.database).toBe(PG_URL ? 'postgres' : 'sqlite');
    expect(readdirSync(backupDir).sort()).toEqual(
      ['backup.json', PG_URL ? 'database.pgdump' : 'workroom.db', 'files'].sort(),
    );
    expect(existsSync(join(backupDir, 'encryption.key'))).toBe(false);
    // A second backup into the same place is refused (nothing is overwritten).
    expect((await a.run(['backup', backupDir])).code).toBe(1);
    expect((await a.run(['backup'])).code).toBe(64);
    await server.kill('SIGTERM');

    // A fresh installation; on PostgreSQL an empty database with the same schema name.
    const b = await Install.create(env);
    installs.push(b);
    let bEnv: Record<string, string> = {};
    if (PG_URL) {
      restoreDb = `wr_ops_restore_${randomBytes(4).toString('hex')}`;
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`create database "${restoreDb}"`);
      await c.end();
      const url = new URL(PG_URL);
      url.pathname = `/${restoreDb}`;
      bEnv = { DATABASE_URL: url.toString(), WORKROOM_DATABASE_SCHEMA: a.schema! };
    }
    const restored = await b.run(['restore', backupDir], bEnv);
    expect(restored.code, restored.out).toBe(0);
    // No key in the fresh data directory yet: the restore says to put it back before starting.
    expect(restored.out).toContain('put it back BEFORE starting');
    copyFileSync(join(a.dataDir, 'encryption.key'), join(b.dataDir, 'encryption.key'));
    if (!PG_URL) {
      const again = await b.run(['restore', backupDir]);
      expect(again.code).toBe(1);
      expect(again.out).toContain('--force');
    }
    const serverB = await b.start(bEnv);
    const adminB = new Api(b.url, await login(b.url, ADMIN_EMAIL, ADMIN_PASSWORD));
    const messagesAfter = expectStatus(await adminB.get(`/api/channels/${channel}/messages`), 200).items as {
      id: string;
      content: string;
    }[];
    expect(messagesAfter.map((m) => [m.id, m.content])).toEqual(messagesBefore.map((m) => [m.id, m.content]));
    const file = await fetch(`${b.url}/api/files/${fileId}`, {
      headers: { authorization: `Bearer ${adminB.token}` },
    });
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);
    // The webhook secret, stored encrypted, still signs: the receiver verifies with the secret it had.
    expectStatus(
      await adminB.post(`/api/channels/${channel}/messages`, { content: 'after the restore' }),
      201,
    );
    await expect.poll(() => rx.at(hook).length, { timeout: 15_000 }).toBe(2);
    const delivered = rx.at(hook)[1]!;
    expect(delivered.json.data?.message?.content ?? delivered.body).toContain('after the restore');
    expect(delivered.headers['x-workroom-signature']).toBe(hmac(secret, delivered.body));
    await serverB.kill('SIGTERM');
  });

  it('refusals: not a backup, a backup of the other database kind, a newer version', async () => {
    const inst = await Install.create();
    installs.push(inst);
    const empty = mkdtempSync(join(tmpdir(), 'workroom-notbackup-'));
    dirs.push(empty);
    const notBackup = await inst.run(['restore', empty]);
    expect(notBackup.code).toBe(1);
    expect(notBackup.out).toContain('is not a Workroom backup');
    const { writeFileSync } = await import('node:fs');
    const other = {
      format: 'workroom-backup',
      formatVersion: 1,
      workroom: '0.1.0',
      createdAt: '',
      database: PG_URL ? 'sqlite' : 'postgres',
      migrations: [],
      files: 0,
      fileBytes: 0,
    };
    writeFileSync(join(empty, 'backup.json'), JSON.stringify(other));
    const kind = await inst.run(['restore', empty]);
    expect(kind.code).toBe(1);
    expect(kind.out).toContain('restore into the same kind of database');
    writeFileSync(
      join(empty, 'backup.json'),
      JSON.stringify({ ...other, migrations: ['0001_initial', '9999_future'] }),
    );
    const newer = await inst.run(['restore', empty]);
    expect(newer.code).toBe(4);
    expect(newer.out).toContain('schema version 9999_future');
  });
});
