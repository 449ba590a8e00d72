import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../src/cli/index.js';
import { CliError } from '../src/cli/exit-codes.js';
import { keyVerifier, NEXT_VERIFIER, VERIFIER } from '../src/encryption-key.js';
import { ClusterSettingsStore } from '../src/storage/stores/cluster-settings.js';
import { Api, expectStatus } from './helpers/client.js';
import { Receiver } from './helpers/receiver.js';
import { dropSchema, startTestServer, type TestServer } from './helpers/server.js';
import { freePort, serverMain } from './helpers/server-proc.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * One encryption key for the cluster (issue 18, point 3; encryption-key.ts): the database keeps a
 * verifier of the key; an instance with another key, or with none, refuses to start with a message
 * that says so (exit code 2); `workroom rotate-key` moves every secret to a new key while instances
 * run with both, and webhook deliveries still verify with the bot's secret throughout.
 */

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const K3 = randomBytes(32).toString('base64');
const pgUrl = process.env.DATABASE_URL;
const dataDir = mkdtempSync(join(tmpdir(), 'workroom-key-'));
const schema = `wr_key_${randomBytes(5).toString('hex')}`;
/** The one database every server of this file runs on (a data directory, or a PostgreSQL schema). */
const sameDb: Record<string, string> = pgUrl
  ? { WORKROOM_DATABASE_SCHEMA: schema }
  : { WORKROOM_DATA_DIR: dataDir };
const start = (env: Record<string, string>) =>
  startTestServer({ ...sameDb, WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true', ...env });
const refusal = (env: Record<string, string>) =>
  start(env).then(
    async (s) => {
      await s.app.close();
      throw new Error('started with a key it should have refused');
    },
    (e: unknown) => e as CliError,
  );

let rx: Receiver;
const running: TestServer[] = [];
afterAll(async () => {
  for (const s of running) await s.app.close().catch(() => undefined);
  await rx?.close();
  if (pgUrl) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Runs `fn` beside `srv`: at once on PostgreSQL (instances and commands share the database); on SQLite
 * with the server stopped meanwhile, as a single-instance deployment runs a second process on its file.
 * (In this one process a second connection's busy wait would block the server's event loop, and with it
 * the group commit it waits for.)
 */
async function beside<T>(srv: TestServer, fn: () => Promise<T>): Promise<T> {
  if (pgUrl) return fn();
  let out: T;
  await srv.restart(async () => {
    out = await fn();
  });
  return out!;
}

/** The deliveries of a hook, each checked against the bot's secret (X-Workroom-Signature). */
const verified = (url: string, secret: string) =>
  rx.at(url).map((r) => r.headers['x-workroom-signature'] === sign(secret, r.body));
const sign = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('one encryption key for the cluster', () => {
  let a: TestServer;
  let owner: UserHandle;
  let channel: string;
  const bots: { id: string; url: string; secret: string }[] = [];

  beforeAll(async () => {
    rx = await Receiver.start();
    a = await start({ WORKROOM_ENCRYPTION_KEY: K1 });
    running.push(a);
    const w = await World.create(a.url);
    owner = await w.user({ role: 'member' });
    channel = await w.channel(owner.api);
  });

  const hookedBot = async (srv: TestServer) => {
    const w = new World(srv.url);
    const api = new Api(srv.url, owner.token);
    const url = rx.hook(`bot-${bots.length}`);
    const bot = await w.bot(api, {}, { webhook_url: url, events: ['message.created'] });
    const { secret } = expectStatus(await api.post(`/api/bots/${bot.id}/webhook-secret`), 201);
    expectStatus(await api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    bots.push({ id: bot.id, url, secret });
  };
  /** Posts through `srv` and waits until every bot got it, each delivery verified with its secret. */
  const postAndVerify = async (srv: TestServer, content: string) => {
    const res = await fetch(`${srv.url}/api/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content }),
    });
    expect(res.status).toBe(201);
    for (const b of bots) {
      await expect
        .poll(() => rx.at(b.url).filter((r) => r.json.data?.content === content).length, {
          timeout: 15_000,
          interval: 20,
        })
        .toBe(1);
      expect(verified(b.url, b.secret).every(Boolean)).toBe(true);
    }
  };

  it('the first instance records a verifier of its key, which does not reveal the key', async () => {
    const settings = new ClusterSettingsStore(a.app.services.storage.stores.db);
    const v = await settings.get(VERIFIER);
    expect(v).toBe(keyVerifier(Buffer.from(K1, 'base64')));
    const raw = Buffer.from(K1, 'base64');
    for (const form of [K1, raw.toString('hex'), raw.toString('base64url')]) expect(v).not.toContain(form);
    await hookedBot(a);
    await postAndVerify(a, 'before any rotation');
  });

  it('another key, or none, is refused with a message that says so (exit code 2)', async () => {
    const other = await beside(a, () => refusal({ WORKROOM_ENCRYPTION_KEY: K2 }));
    expect(other).toBeInstanceOf(CliError);
    expect(other.code).toBe(2);
    expect(other.message).toMatch(
      /The encryption key \(WORKROOM_ENCRYPTION_KEY\) is not the key this database's secrets .* are encrypted with\. Every instance on one database must use the same WORKROOM_ENCRYPTION_KEY/,
    );
    expect(other.message).toMatch(/workroom rotate-key --help/);
    const none = await beside(a, () => refusal({}));
    expect(none.code).toBe(2);
    expect(none.message).toMatch(/No encryption key is configured .* will not generate one of its own/);
    // A key in the data directory's file is checked the same way.
    const dir = mkdtempSync(join(tmpdir(), 'workroom-keyfile-'));
    try {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(dir, 'encryption.key'), K3);
      if (pgUrl) {
        const fromFile = await refusal({ WORKROOM_DATA_DIR: dir });
        expect(fromFile.message).toMatch(
          /The encryption key \(the key in .*encryption\.key\) is not the key/,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the server process exits with code 2 and says why', async () => {
    if (!pgUrl) await a.app.close(); // one server per SQLite data directory
    const port = await freePort();
    const child = spawn(process.execPath, serverMain(), {
      cwd: join(import.meta.dirname, '../..'),
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        WORKROOM_LOG_LEVEL: 'silent',
        WORKROOM_METRICS_PORT: '0',
        WORKROOM_ENCRYPTION_KEY: K3,
        ...(pgUrl ? { DATABASE_URL: pgUrl } : {}),
        ...sameDb,
      },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(2);
    expect(err).toMatch(/^workroom: The encryption key \(WORKROOM_ENCRYPTION_KEY\) is not the key/m);
    if (!pgUrl) await a.restart();
  });

  it('rotation: instances with both keys serve, rotate-key moves every secret, then the old key is refused', async () => {
    // Instances restart with the new key, the current one as the previous (a rolling restart).
    await a.app.close();
    running.splice(running.indexOf(a), 1);
    const both = { WORKROOM_ENCRYPTION_KEY: K2, WORKROOM_ENCRYPTION_KEY_PREVIOUS: K1 };
    const b = await start(both);
    running.push(b);
    // Read through the running server's storage (restarted by `beside` on SQLite).
    const settings = {
      get: (name: string) => new ClusterSettingsStore(b.app.services.storage.stores.db).get(name),
    };
    expect(await settings.get(NEXT_VERIFIER)).toBe(keyVerifier(Buffer.from(K2, 'base64')));
    // The first bot's secret (under K1) is read with the previous key; a new one is written under K2.
    await postAndVerify(b, 'during the rotation');
    await hookedBot(b);
    await postAndVerify(b, 'a new secret during the rotation');
    // Another instance with a third key while this rotation is under way: refused (PostgreSQL: a second
    // server on one SQLite file is not a deployment).
    if (pgUrl) {
      const third = await refusal({ WORKROOM_ENCRYPTION_KEY: K3, WORKROOM_ENCRYPTION_KEY_PREVIOUS: K1 });
      expect(third.message).toMatch(/not the one the key rotation in progress goes to/);
    }

    const before = await b.app.services.storage.stores.bots.getWebhookSecret(bots[0]!.id);
    const env: Record<string, string> = { ...sameDb, ...both };
    if (pgUrl) env.DATABASE_URL = pgUrl;
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => (printed.push(String(s)), true));
    let code: number;
    try {
      code = await beside(b, () => runCli(['rotate-key', '--batch', '1'], env));
    } finally {
      spy.mockRestore();
    }
    expect(code).toBe(0);
    expect(printed.join('')).toMatch(/done: 1 secrets re-encrypted, 1 already under the new key/);
    const after = await b.app.services.storage.stores.bots.getWebhookSecret(bots[0]!.id);
    expect(after!.secret_encrypted).not.toBe(before!.secret_encrypted);
    expect(await settings.get(VERIFIER)).toBe(keyVerifier(Buffer.from(K2, 'base64')));
    expect(await settings.get(NEXT_VERIFIER)).toBeUndefined();
    await postAndVerify(b, 'after rotate-key, still running with both keys');
    // Run again: nothing left to do.
    const spy2 = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await beside(b, () => runCli(['rotate-key'], env))).toBe(0);
    } finally {
      spy2.mockRestore();
    }

    // Restarted with the new key alone: every secret signs; the old key is refused from now on.
    await b.app.close();
    running.splice(running.indexOf(b), 1);
    const c = await start({ WORKROOM_ENCRYPTION_KEY: K2 });
    running.push(c);
    await postAndVerify(c, 'with the new key alone');
    const old = await beside(c, () => refusal({ WORKROOM_ENCRYPTION_KEY: K1 }));
    expect(old.code).toBe(2);
    // rotate-key with keys that are not this database's: refused.
    const wrong = { ...env, WORKROOM_ENCRYPTION_KEY: K3, WORKROOM_ENCRYPTION_KEY_PREVIOUS: K1 };
    const errs: string[] = [];
    const spy3 = vi.spyOn(process.stderr, 'write').mockImplementation((s) => (errs.push(String(s)), true));
    try {
      expect(await beside(c, () => runCli(['rotate-key'], wrong))).toBe(2);
      expect(await runCli(['rotate-key'], { ...sameDb, WORKROOM_ENCRYPTION_KEY: K2 })).toBe(2);
    } finally {
      spy3.mockRestore();
    }
    expect(errs.join('')).toMatch(/Neither WORKROOM_ENCRYPTION_KEY nor WORKROOM_ENCRYPTION_KEY_PREVIOUS/);
  });
});
