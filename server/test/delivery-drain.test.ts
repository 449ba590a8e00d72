import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { Receiver } from './helpers/receiver.js';
import { dropSchema } from './helpers/server.js';
import { serverMain } from './helpers/server-proc.js';

/**
 * Shutdown with deliveries in flight (a real server process, SIGTERM): attempts that end within the
 * shutdown time-out are recorded as delivered and not sent again; attempts still running then are cut
 * off, nothing is recorded for them and their deliveries are handed back (due at once, not after their
 * lease), so the next start sends them with the same webhook-id; the process exits within the time-out.
 */
const ROOT = join(import.meta.dirname, '../..');
const ADMIN = { email: 'drain@test.local', password: 'drain-password-1' };
const SHUTDOWN_MS = 5000;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

describe('webhook delivery at shutdown', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-drain-'));
  const pgUrl = process.env.DATABASE_URL;
  const schema = pgUrl ? `wr_drain_${randomBytes(5).toString('hex')}` : undefined;
  let child: ChildProcess | undefined;
  let rx: Receiver | undefined;

  afterAll(async () => {
    child?.kill('SIGKILL');
    await rx?.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (pgUrl && schema) await dropSchema(pgUrl, schema);
  });

  it(
    'finishes what it can, hands back the rest and exits within the time-out',
    { timeout: 120_000 },
    async () => {
      rx = await Receiver.start();
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        WORKROOM_DATA_DIR: dataDir,
        WORKROOM_ADMIN_EMAIL: ADMIN.email,
        WORKROOM_ADMIN_PASSWORD: ADMIN.password,
        WORKROOM_LOG_LEVEL: 'warn',
        WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
        WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
        WORKROOM_SHUTDOWN_TIMEOUT: `${SHUTDOWN_MS}ms`,
        // Far longer than the shutdown: only the drain can end the hanging attempts. Their lease (three
        // times this plus 5 s) is longer than the test waits after the restart: only a hand-back resends them.
        WORKROOM_WEBHOOK_TIMEOUT: '60s',
        ...(pgUrl && schema ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema } : {}),
      };
      let output = '';
      const start = async () => {
        const c = spawn(process.execPath, serverMain(), {
          cwd: ROOT,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        child = c;
        c.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
        c.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
        // Up when its health answers (a server that exited fails the wait with its output).
        try {
          await expect
            .poll(
              async () => {
                if (c.exitCode !== null) throw new Error(`server exited: ${output}`);
                return fetch(`${url}/api/health`).then(
                  (r) => r.ok,
                  () => false,
                );
              },
              { timeout: 60_000, interval: 100 },
            )
            .toBe(true);
        } catch (err) {
          throw new Error(`server did not start: ${output}`, { cause: err });
        }
        return c;
      };

      const first = await start();
      const anon = new Api(url);
      const admin = anon.as(expectStatus(await anon.post('/api/auth/login', ADMIN), 200).token as string);
      const channel = expectStatus(await admin.post('/api/channels', { name: 'drain' }), 201).id as string;
      const slowUrl = rx.hook('slow', () => ({ status: 200, delayMs: 1000 }));
      const hangUrl = rx.hook('hang', () => 'hang');
      const bots: Record<string, string> = {};
      for (const [name, webhook_url] of [
        ['slow', slowUrl],
        ['hang', hangUrl],
      ] as const) {
        const bot = expectStatus(
          await admin.post('/api/bots', { name, webhook_url, events: ['message.created'] }),
          201,
        );
        expectStatus(await admin.post(`/api/bots/${bot.bot_id}/webhook-secret`), 201);
        expectStatus(await admin.post(`/api/channels/${channel}/members`, { bot_id: bot.bot_id }), 201);
        bots[name] = bot.bot_id as string;
      }
      const messages: string[] = [];
      for (let i = 0; i < 4; i++)
        messages.push(
          expectStatus(await admin.post(`/api/channels/${channel}/messages`, { content: `m${i}` }), 201)
            .id as string,
        );
      // All eight attempts are in flight (each bot has 8 slots): the slow ones answer in a second.
      await expect.poll(() => rx!.at(slowUrl).length + rx!.at(hangUrl).length, { timeout: 30_000 }).toBe(8);

      const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
      const t0 = Date.now();
      first.kill('SIGTERM');
      const code = await exited;
      const took = Date.now() - t0;
      child = undefined;
      expect(code).toBe(0);
      expect(took).toBeLessThan(SHUTDOWN_MS + 1500);
      expect(took).toBeGreaterThanOrEqual(1000); // it did wait for the slow answers

      // Recorded: the slow bot's deliveries; handed back (due now, no attempt): the hanging ones.
      const rows = await deliveryRows();
      const of = (bot: string) => rows.filter((r) => r.bot_id === bots[bot]);
      expect(of('slow').map((r) => [r.state, r.attempts, r.recorded])).toEqual(
        Array(4).fill(['delivered', 1, 1]),
      );
      expect(of('hang').map((r) => [r.state, r.attempts, r.recorded])).toEqual(
        Array(4).fill(['pending', 0, 0]),
      );
      for (const r of of('hang')) expect(Date.parse(r.next_attempt_at)).toBeLessThanOrEqual(Date.now());
      const firstIds = new Set(rx.at(hangUrl).map((r) => r.headers['webhook-id']));
      expect(firstIds.size).toBe(4);

      // After the restart the handed-back deliveries go out at once, with the same webhook-ids; the
      // recorded ones are not sent again.
      rx.hook('hang', () => ({ status: 200 }));
      await start();
      await expect.poll(() => rx!.at(hangUrl).length, { timeout: 30_000 }).toBe(8);
      const again = new Set(
        rx
          .at(hangUrl)
          .slice(4)
          .map((r) => r.headers['webhook-id']),
      );
      expect(again).toEqual(firstIds);
      await expect
        .poll(async () => (await deliveryRows()).filter((r) => r.state === 'delivered').length, {
          timeout: 30_000,
        })
        .toBe(8);
      expect(rx.at(slowUrl)).toHaveLength(4);
      // Every message reached both bots.
      for (const name of ['slow', 'hang'])
        expect(
          new Set(rx.at(name === 'slow' ? slowUrl : hangUrl).map((r) => r.json.data.message_id)),
        ).toEqual(new Set(messages));
    },
  );

  /** Every delivery with its number of recorded attempts, read from the database itself. */
  async function deliveryRows(): Promise<
    { bot_id: string; state: string; attempts: number; next_attempt_at: string; recorded: number }[]
  > {
    const q = `select d.bot_id, d.state, d.attempts, d.next_attempt_at,
        (select count(*) from webhook_attempts a where a.delivery_id = d.id) as recorded
      from webhook_deliveries d order by d.event_position`;
    if (pgUrl && schema) {
      const c = new pg.Client({ connectionString: pgUrl, options: `-c search_path="${schema}"` });
      await c.connect();
      try {
        return (await c.query(q)).rows.map((r) => ({ ...r, recorded: Number(r.recorded) }));
      } finally {
        await c.end();
      }
    }
    const db = new BetterSqlite3(join(dataDir, 'workroom.db'), { readonly: true });
    try {
      return db.prepare(q).all() as never;
    } finally {
      db.close();
    }
  }
});
