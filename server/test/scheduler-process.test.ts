import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, expectStatus } from './helpers/client.js';
import { dropSchema } from './helpers/server.js';
import { helperEntry } from './helpers/server-proc.js';

/**
 * The scheduler across real server processes (server/test/helpers/scheduler-proc.ts: the server with
 * a job handler that reports each step on stdout), on one data directory or PostgreSQL schema:
 * stopped and SIGKILLed servers, restarts, jobs due while no server ran, the grace period, a crash
 * between a job's effect and its completion, draining on SIGTERM, and (PostgreSQL) two instances
 * sharing the jobs.
 */
const ROOT = join(import.meta.dirname, '../..');
const PROC = join(ROOT, 'server/test/helpers/scheduler-proc.ts');
const ADMIN = { email: 'sched@test.local', password: 'sched-password-1' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

interface Step {
  what: string;
  job: string;
  attempt: number;
  pid: number;
}

class Proc {
  out = '';
  readonly exited: Promise<void>;
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {
    this.exited = new Promise((r) => child.once('exit', () => r()));
    child.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-200_000)));
    const guard = () => child.kill('SIGKILL');
    process.once('exit', guard);
    child.once('exit', () => process.off('exit', guard));
  }

  static async start(env: Record<string, string>): Promise<Proc> {
    const port = await freePort();
    const child = spawn(process.execPath, [helperEntry(PROC)], {
      cwd: ROOT,
      env: { ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new Proc(child, `http://127.0.0.1:${port}`);
    const deadline = Date.now() + 45_000;
    while (!p.out.includes('READY')) {
      if (child.exitCode !== null) throw new Error(`server exited: ${p.out}`);
      if (Date.now() > deadline) throw new Error(`server did not start: ${p.out}`);
      await sleep(50);
    }
    return p;
  }

  steps(what?: string, job?: string): Step[] {
    return [...this.out.matchAll(/^SCHED (\S+) (\S+) (\d+) (\d+)$/gm)]
      .map((m) => ({ what: m[1]!, job: m[2]!, attempt: Number(m[3]), pid: Number(m[4]) }))
      .filter((s) => (what === undefined || s.what === what) && (job === undefined || s.job === job));
  }

  async kill(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

describe('scheduler across server processes', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-sched-'));
  const pgUrl = process.env.DATABASE_URL;
  const schema = pgUrl ? `wr_sched_${randomBytes(5).toString('hex')}` : undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    HOST: '127.0.0.1',
    WORKROOM_DATA_DIR: dataDir,
    WORKROOM_ADMIN_EMAIL: ADMIN.email,
    WORKROOM_ADMIN_PASSWORD: ADMIN.password,
    WORKROOM_LOG_LEVEL: 'warn',
    WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
    WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
    WORKROOM_SCHEDULER_POLL: '200ms',
    WORKROOM_SCHEDULER_LEASE: '2s',
    WORKROOM_SCHEDULER_GRACE: '1h',
    WORKROOM_SCHEDULER_RETRY_DELAYS: '300ms,600ms',
    WORKROOM_SHUTDOWN_TIMEOUT: '5s',
    ...(pgUrl && schema ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema } : {}),
  };
  let proc: Proc | undefined;
  let botKey: string;
  let botId: string;
  let channel: string;
  let admin: Api;

  const bot = () => new Api(proc!.url, botKey);
  const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
  const schedule = async (body: Record<string, unknown>) =>
    expectStatus(await bot().post(`/api/bots/${botId}/jobs`, body), 201) as { id: string; run_at: string };
  const jobState = async (id: string) => {
    for (let cursor: string | undefined; ;) {
      const page = expectStatus(
        await bot().get(`/api/bots/${botId}/jobs`, { query: { limit: 100, cursor } }),
        200,
      );
      const j = (page.items as any[]).find((x) => x.id === id);
      if (j || !page.next_cursor) return j as { state: string; attempts: number; last_error: string | null };
      cursor = page.next_cursor as string;
    }
  };
  const restart = async () => {
    proc = await Proc.start(env);
    admin = new Api(proc.url, admin.token);
  };

  /** Runs SQL on the server's database while no server runs (to make time pass for a job). */
  async function sql(text: string, params: unknown[]): Promise<void> {
    if (pgUrl && schema) {
      const c = new pg.Client({ connectionString: pgUrl, options: `-c search_path="${schema}"` });
      await c.connect();
      try {
        let i = 0;
        await c.query(
          text.replace(/\?/g, () => `$${++i}`),
          params,
        );
      } finally {
        await c.end();
      }
      return;
    }
    const db = new BetterSqlite3(join(dataDir, 'workroom.db'));
    try {
      db.prepare(text).run(...params);
    } finally {
      db.close();
    }
  }

  beforeAll(async () => {
    proc = await Proc.start(env);
    const anon = new Api(proc.url);
    admin = anon.as(expectStatus(await anon.post('/api/auth/login', ADMIN), 200).token as string);
    channel = expectStatus(await admin.post('/api/channels', { name: 'sched' }), 201).id as string;
    const b = expectStatus(await admin.post('/api/bots', { name: 'sched-bot' }), 201);
    botId = b.bot_id as string;
    botKey = expectStatus(await admin.post(`/api/bots/${botId}/api-keys`, {}), 201).key as string;
    expectStatus(await admin.post(`/api/channels/${channel}/members`, { bot_id: botId }), 201);
  }, 60_000);

  afterAll(async () => {
    await proc?.kill();
    rmSync(dataDir, { recursive: true, force: true });
    if (pgUrl && schema) await dropSchema(pgUrl, schema);
  });

  it(
    'jobs due while no server ran: run once after the restart within the grace, else failed as missed',
    { timeout: 90_000 },
    async () => {
      const due = await schedule({ kind: 'test.record', run_at: inMs(1500) });
      const late = await schedule({ kind: 'test.record', run_at: inMs(3_600_000) });
      const missed = await schedule({ kind: 'test.record', run_at: inMs(3_600_000) });
      await proc!.kill('SIGKILL');
      // No server for a while: `due` passes its time; the other two are made 30 minutes and 2 hours late.
      await sql('update scheduled_jobs set run_at = ? where id = ?', [
        new Date(Date.now() - 1_800_000).toISOString(),
        late.id,
      ]);
      await sql('update scheduled_jobs set run_at = ? where id = ?', [
        new Date(Date.now() - 7_200_000).toISOString(),
        missed.id,
      ]);
      await sleep(Math.max(0, Date.parse(due.run_at) + 200 - Date.now()));
      await restart();
      const ready = Date.now(); // the server is up (it printed READY)
      await expect.poll(async () => (await jobState(due.id))?.state, { timeout: 10_000 }).toBe('done');
      await expect.poll(async () => (await jobState(late.id))?.state, { timeout: 10_000 }).toBe('done');
      const took = Date.now() - ready;
      const m = await jobState(missed.id);
      expect(m.state).toBe('failed');
      expect(m.attempts).toBe(0);
      expect(m.last_error).toMatch(/^missed: /);
      await sleep(500);
      expect(proc!.steps('run', due.id)).toHaveLength(1);
      expect(proc!.steps('run', late.id)).toHaveLength(1);
      expect(proc!.steps('run', missed.id)).toHaveLength(0);
      console.log(
        `[scheduler-process ${pgUrl ? 'postgres' : 'sqlite'}] server ready → both late jobs done: ${took} ms`,
      );
    },
  );

  it(
    'SIGKILL after the effect, before the job is done: the re-run does not post again',
    { timeout: 90_000 },
    async () => {
      const content = `exactly once ${randomBytes(4).toString('hex')}`;
      const j = await schedule({
        kind: 'test.post',
        run_at: inMs(200),
        payload: { channel_id: channel, content, hang: true },
      });
      await expect.poll(() => proc!.steps('effect', j.id).length, { timeout: 10_000 }).toBe(1);
      await proc!.kill('SIGKILL'); // the message is posted; the job is still running, its lease held
      await restart();
      // The lease (2 s) runs out, attempt 2 runs the handler again: the post is replayed, not repeated.
      await expect.poll(async () => (await jobState(j.id))?.state, { timeout: 15_000 }).toBe('done');
      expect(proc!.steps('effect', j.id).map((s) => s.attempt)).toEqual([2]);
      const messages = expectStatus(
        await admin.get(`/api/channels/${channel}/messages`, { query: { limit: 100 } }),
        200,
      );
      expect((messages.items as any[]).filter((x) => x.content === content)).toHaveLength(1);
      expect(await jobState(j.id)).toMatchObject({ attempts: 2, last_error: null });
    },
  );

  it('SIGTERM lets a running job finish (drain) and it is not run again', { timeout: 90_000 }, async () => {
    const j = await schedule({ kind: 'test.record', run_at: inMs(0), payload: { ms: 1500 } });
    await expect.poll(() => proc!.steps('run', j.id).length, { timeout: 10_000 }).toBe(1);
    const before = proc!;
    await before.kill('SIGTERM');
    expect(before.steps('finished', j.id)).toHaveLength(1);
    await restart();
    expect(await jobState(j.id)).toMatchObject({ state: 'done', attempts: 1 });
    await sleep(2500); // longer than a lease: nothing takes it again
    expect(proc!.steps('run', j.id)).toHaveLength(0);
  });

  it.skipIf(!pgUrl)(
    'two server processes on one PostgreSQL database never run one job twice',
    { timeout: 120_000 },
    async () => {
      const second = await Proc.start(env);
      try {
        const N = 300;
        const runAt = inMs(1500); // both instances are polling when they come due
        const ids: string[] = [];
        for (let i = 0; i < N; i += 20) {
          const batch = await Promise.all(
            Array.from({ length: Math.min(20, N - i) }, () =>
              schedule({ kind: 'test.record', run_at: runAt, payload: { ms: 10 } }),
            ),
          );
          ids.push(...batch.map((b) => b.id));
        }
        const ran = () =>
          [...proc!.steps('finished'), ...second.steps('finished')].filter((s) => ids.includes(s.job));
        await expect.poll(() => ran().length, { timeout: 60_000, interval: 250 }).toBeGreaterThanOrEqual(N);
        await sleep(500);
        const starts = [...proc!.steps('run'), ...second.steps('run')].filter((s) => ids.includes(s.job));
        expect(starts).toHaveLength(N);
        expect(new Set(starts.map((s) => s.job)).size).toBe(N);
        const byPid = new Map<number, number>();
        for (const s of starts) byPid.set(s.pid, (byPid.get(s.pid) ?? 0) + 1);
        expect(byPid.size).toBe(2); // both took a share
        console.log(
          `[scheduler-process postgres] ${N} jobs over two instances: ${[...byPid.values()].join(' + ')}`,
        );
      } finally {
        await second.kill('SIGTERM');
      }
    },
  );
});
