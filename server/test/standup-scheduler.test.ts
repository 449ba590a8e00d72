import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import {
  answer,
  builtinBotId,
  channelMessages,
  dmsFromBot,
  nextMinute,
  sleep,
  waitFor,
} from './helpers/platform-bots.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, dropSchema } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * The stand-up bot and the durable scheduler across real server processes (server/src/main.ts) on one
 * data directory or PostgreSQL schema, through the public API only:
 *
 * - a stand-up due while no server runs fires once when the server starts again (within
 *   WORKROOM_SCHEDULER_GRACE, default 6 h);
 * - a server SIGKILLed while the stand-up is sending its questions: after the restart every member has
 *   the first question exactly once, and the channel one summary.
 *
 * (Daylight-saving changes: server/test/standup-unit.test.ts follows a stand-up's chain of starts
 * across both changes of Europe/Berlin and America/New_York with the planner the start jobs use.)
 */

const ROOT = join(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'server/src/main.ts');
const MEMBERS = 40;
const Q1 = 'Status?';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

class Proc {
  out = '';
  readonly exited: Promise<void>;
  constructor(readonly child: ChildProcess) {
    this.exited = new Promise((r) => child.once('exit', () => r()));
    child.stdout!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-100_000)));
    child.stderr!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-100_000)));
    const guard = () => child.kill('SIGKILL');
    process.once('exit', guard);
    child.once('exit', () => process.off('exit', guard));
  }

  async stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

describe('stand-ups across server restarts', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'workroom-standup-'));
  const pgUrl = process.env.DATABASE_URL;
  const schema = pgUrl ? `wr_standup_${randomBytes(5).toString('hex')}` : undefined;
  let port: number;
  let url: string;
  let proc: Proc | undefined;
  let w: World;
  let org: { id: string; admin: UserHandle };
  let bot: string;

  async function start(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        WORKROOM_DATA_DIR: dataDir,
        WORKROOM_ADMIN_EMAIL: ADMIN_EMAIL,
        WORKROOM_ADMIN_PASSWORD: ADMIN_PASSWORD,
        WORKROOM_LOG_LEVEL: 'warn',
        WORKROOM_RATE_LIMIT_USER_PER_SECOND: '0',
        WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '0',
        WORKROOM_SCHEDULER_POLL: '200ms',
        // A SIGKILLed server's claim is taken over 2 s later; a step whose idempotency record was left
        // pending by the kill is released after 60 s, so the retries cover 70 s.
        WORKROOM_SCHEDULER_LEASE: '2s',
        WORKROOM_SCHEDULER_RETRY_DELAYS: '2s,4s,8s,15s,20s,25s',
        ...(pgUrl && schema ? { DATABASE_URL: pgUrl, WORKROOM_DATABASE_SCHEMA: schema } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc = new Proc(child);
    const deadline = Date.now() + 45_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited: ${proc.out}`);
      if (Date.now() > deadline) throw new Error(`server did not start: ${proc.out}`);
      try {
        if ((await fetch(`${url}/api/health`)).ok) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
  }

  async function teamChannel(n: number): Promise<{ channel: string; members: UserHandle[] }> {
    const members: UserHandle[] = [];
    for (let i = 0; i < n; i += 10) {
      members.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(10, n - i) }, () =>
            w.user({ organization_id: org.id }, org.admin.api),
          ),
        )),
      );
    }
    const channel = await w.channel(members[0]!.api);
    for (let i = 1; i < n; i += 10) {
      await Promise.all(
        members
          .slice(i, i + 10)
          .map(async (u) =>
            expectStatus(
              await members[0]!.api.post(`/api/channels/${channel}/members`, { user_id: u.id }),
              201,
            ),
          ),
      );
    }
    return { channel, members };
  }

  const firstQuestions = async (u: UserHandle) =>
    (await dmsFromBot(u, bot)).filter((m) => m.content.includes(`**1/1** ${Q1}`)).length;

  beforeAll(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    await start();
    w = await World.create(url);
    org = await w.org();
  });

  afterAll(async () => {
    await proc?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    if (pgUrl && schema) await dropSchema(pgUrl, schema);
  });

  it('a stand-up due while the server is down fires once after it starts again', async () => {
    const { channel, members } = await teamChannel(3);
    bot = await builtinBotId(members[0]!.api, 'standup');
    const { hhmm, at } = nextMinute(15_000);
    await answer(members[0]!.api, `/standup setup ${hhmm} daily UTC "${Q1}" window:1m remind:off`, {
      channel_id: channel,
    });
    await proc!.stop('SIGTERM');
    // Down through the time it was due, and a little longer.
    while (Date.now() < at + 5_000) await sleep(250);
    await start();
    for (const u of members)
      await waitFor('the first question', async () => (await firstQuestions(u)) > 0, 30_000);
    const dm = (await dmsFromBot(members[0]!, bot)).find((m) => m.content.includes(Q1))!;
    expect(Date.parse(dm.created_at)).toBeGreaterThanOrEqual(at + 5_000); // sent after the restart
    // One summary, a whole window after the late start (the members keep their full minute).
    const summary = await waitFor(
      'the summary',
      async () => (await channelMessages(members[0]!.api, channel)).find((m) => m.content.startsWith('📋')),
      120_000,
    );
    expect(Date.parse(summary.created_at)).toBeGreaterThanOrEqual(Date.parse(dm.created_at) + 55_000);
    expect(summary.content).toContain('0 of 3 answered');
    await sleep(2_000);
    for (const u of members) expect(await firstQuestions(u), u.email).toBe(1);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  }, 240_000);

  it('SIGKILL while the questions are being sent: after the restart every member has them once, and one summary comes', async () => {
    const { channel, members } = await teamChannel(MEMBERS);
    bot = await builtinBotId(members[0]!.api, 'standup');
    const { hhmm, at } = nextMinute(15_000);
    await answer(members[0]!.api, `/standup setup ${hhmm} daily UTC "${Q1}" window:2m remind:off`, {
      channel_id: channel,
    });
    while (Date.now() < at - 1_000) await sleep(250);
    // The members are asked in the order they joined: the first DM means the job is sending.
    await waitFor('the first DM', async () => (await firstQuestions(members[0]!)) > 0, 60_000);
    await proc!.stop('SIGKILL');
    const killedAt = Date.now();
    await start();
    await waitFor(
      'every member asked',
      async () => (await Promise.all(members.map(firstQuestions))).every((n) => n > 0),
      120_000,
    );
    const summary = await waitFor(
      'the summary',
      async () => (await channelMessages(members[0]!.api, channel)).find((m) => m.content.startsWith('📋')),
      180_000,
    );
    expect(summary.content).toContain(`0 of ${MEMBERS} answered`);
    await sleep(2_000);
    const after = await Promise.all(members.map(firstQuestions));
    expect(after).toEqual(Array(MEMBERS).fill(1));
    // The kill came in the middle: some members were asked by the killed server, the others by the
    // restarted one (else the test would show nothing).
    const sentAt = await Promise.all(
      members.map(async (u) =>
        Date.parse((await dmsFromBot(u, bot)).find((m) => m.content.includes(Q1))!.created_at),
      ),
    );
    expect(sentAt.filter((t) => t < killedAt).length).toBeGreaterThan(0);
    expect(sentAt.filter((t) => t > killedAt).length).toBeGreaterThan(0);
    expect(
      (await channelMessages(members[0]!.api, channel)).filter((m) => m.content.startsWith('📋')),
    ).toHaveLength(1);
  }, 360_000);
});
