import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHaproxy, type Balancer } from './helpers/haproxy.js';
import { dropSchema } from './helpers/server.js';
import { freePort, startServerProc, type ServerProc } from './helpers/server-proc.js';
import { World } from './helpers/world.js';

/**
 * Three server processes on one PostgreSQL schema behind HAProxy, under a steady load of posts: one is
 * SIGKILLed and started again, then all three are restarted one after another (SIGTERM, start). Every
 * post the balancer answered 201 must be in the channel afterwards.
 */
describe.skipIf(!process.env.DATABASE_URL)('a cluster losing and restarting instances under load', () => {
  const url = process.env.DATABASE_URL!;
  const schema = `wr_crash_${randomBytes(5).toString('hex')}`;
  const env = {
    DATABASE_URL: url,
    WORKROOM_DATABASE_SCHEMA: schema,
    WORKROOM_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    // Longer than HAProxy takes to mark a stopping instance down (inter 500ms fall 2): docs/SCALING.md.
    WORKROOM_SHUTDOWN_DELAY: '1500ms',
  };
  const ports: number[] = [];
  const procs: ServerProc[] = [];
  let lb: Balancer;

  const start = (i: number) => startServerProc(ports[i]!, env).then((p) => (procs[i] = p));

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) ports.push(await freePort());
    await start(0); // the first sets the schema up; the others join it together
    await Promise.all([start(1), start(2)]);
    lb = await startHaproxy(ports.map((port, i) => ({ name: `i${i}`, port })));
  }, 180_000);
  afterAll(async () => {
    await lb?.stop();
    await Promise.all(procs.map((p) => p?.stop('SIGTERM')));
    await dropSchema(url, schema);
  });

  it('0 acknowledged posts lost through a SIGKILL and a rolling restart', async () => {
    const w = await World.create(lb.url);
    const channel = await w.channel(w.admin.api);
    const acked: string[] = [];
    let errors = 0;
    let running = true;
    const poster = async (n: number) => {
      for (let i = 0; running; i++) {
        try {
          const r = await fetch(`${lb.url}/api/channels/${channel}/messages`, {
            method: 'POST',
            headers: { authorization: `Bearer ${w.admin.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ content: `load ${n}.${i}` }),
          });
          if (r.status === 201) acked.push(((await r.json()) as { id: string }).id);
          else {
            errors++;
            await r.body?.cancel();
          }
        } catch {
          errors++; // the connection was cut (the SIGKILL): not acknowledged, so not counted as lost
        }
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(poster));
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      await pause(1500);
      await procs[1]!.stop('SIGKILL');
      const afterKill = acked.length;
      await pause(1500);
      await start(1);
      await pause(1000);
      const errorsBeforeRolling = errors;
      for (let i = 0; i < 3; i++) {
        await procs[i]!.stop('SIGTERM');
        await start(i);
        await pause(1500); // the balancer's health checks see it up again (2 × 500 ms)
      }
      const rollingErrors = errors - errorsBeforeRolling;
      running = false;
      await load;
      console.log(
        `cluster under load: ${acked.length} posts acknowledged (${afterKill} before the SIGKILL), ${errors} failed (${rollingErrors} during the rolling restart)`,
      );
      expect(afterKill).toBeGreaterThan(20);
      // Read back from the database itself (every instance wrote to it).
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      let seen: Set<string>;
      try {
        const r = await db.query<{ id: string }>(
          `select id from "${schema}".messages where channel_id = $1`,
          [channel],
        );
        seen = new Set(r.rows.map((x) => x.id));
      } finally {
        await db.end();
      }
      const lost = acked.filter((id) => !seen.has(id));
      expect(lost).toEqual([]);
      expect(rollingErrors).toBe(0);
    } finally {
      running = false;
      await load;
    }
  }, 240_000);
});
