import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectStatus } from './client.js';
import { dmsFromBot } from './platform-bots.js';
import { dropSchema } from './server.js';
import { freePort, startServerProc, type ServerProc } from './server-proc.js';
import { World, type UserHandle } from './world.js';

/**
 * The stand-up test across real server processes (standup-crash): one data
 * directory or PostgreSQL schema, a server process on one port that the test stops, kills and starts
 * again, and the organization the stand-ups run in.
 */
export class StandupProcs {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'workroom-standup-'));
  readonly pgUrl = process.env.DATABASE_URL;
  readonly schema = this.pgUrl ? `wr_standup_${randomBytes(5).toString('hex')}` : undefined;
  port = 0;
  url = '';
  proc: ServerProc | undefined;
  /** Business time the next start begins at (epoch ms; a restart goes on from the killed server's). */
  clockStart: number | undefined;
  w!: World;
  org!: { id: string; admin: UserHandle };

  /** Starts the first server, and creates the organization. */
  async init(): Promise<void> {
    this.port = await freePort();
    this.url = `http://127.0.0.1:${this.port}`;
    await this.start();
    this.w = await World.create(this.url);
    this.org = await this.w.org();
  }

  /** (Re)starts the server process on the same port and database, on a test clock (`clockStart`). */
  async start(): Promise<void> {
    this.proc = await startServerProc(
      this.port,
      {
        WORKROOM_DATA_DIR: this.dataDir,
        WORKROOM_SCHEDULER_POLL: '200ms',
        // A SIGKILLed server's claim is taken over 2 s later; a step whose idempotency record was left
        // pending by the kill is released after 60 s, so the retries cover 70 s.
        WORKROOM_SCHEDULER_LEASE: '2s',
        WORKROOM_SCHEDULER_RETRY_DELAYS: '2s,4s,8s,15s,20s,25s',
        ...(this.pgUrl && this.schema
          ? { DATABASE_URL: this.pgUrl, WORKROOM_DATABASE_SCHEMA: this.schema }
          : {}),
      },
      { start: this.clockStart },
    );
  }

  async close(): Promise<void> {
    await this.proc?.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
    if (this.pgUrl && this.schema) await dropSchema(this.pgUrl, this.schema);
  }

  /** `n` new members of the organization in a new channel (created ten at a time). */
  async teamChannel(n: number): Promise<{ channel: string; members: UserHandle[] }> {
    const members: UserHandle[] = [];
    for (let i = 0; i < n; i += 10) {
      members.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(10, n - i) }, () =>
            this.w.user({ organization_id: this.org.id }, this.org.admin.api),
          ),
        )),
      );
    }
    const channel = await this.w.channel(members[0]!.api);
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
}

/** How many DMs of the bot to `u` ask the first question `q1` of a one-question stand-up. */
export async function firstQuestions(u: UserHandle, bot: string, q1: string): Promise<number> {
  return (await dmsFromBot(u, bot)).filter((m) => m.content.includes(`**1/1** ${q1}`)).length;
}
