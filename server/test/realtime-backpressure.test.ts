import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { LiveClient } from './helpers/realtime.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes the server process holds: JS heap plus Buffers (where queued WebSocket data lives). */
function held(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** A client that never reads is cut off at the bounded buffer; the server's memory does not follow it. */
describe('realtime: slow consumers', () => {
  let srv: TestServer;
  let user: UserHandle;
  let channel: string;

  beforeAll(async () => {
    srv = await startTestServer();
    const w = await World.create(srv.url);
    const org = await w.org();
    user = await w.user({ organization_id: org.id });
    channel = await w.channel(user.api);
  });
  afterAll(() => srv.close());

  it('a client that never reads is disconnected (1013) without the server growing', async () => {
    const reader = await LiveClient.connect(srv.url, user.token, undefined, { light: true });
    const stalled = await LiveClient.connect(srv.url, user.token, undefined, { light: true });
    // Stop reading at the TCP level: the kernel buffers fill, then the server's send queue would.
    stalled.ws.pause();

    // The messages' events. The channel's own channel.created may reach the client too: created just
    // before it connected, it can be sequenced after the connection's start (as in realtime.test.ts).
    const posted = () => reader.events.filter((m) => m.event.event_type === 'message.created');
    const content = 'x'.repeat(45_000);
    const messages = 500; // ~22 MB of events for each client: far beyond socket buffers and the 1 MB bound
    const before = held();
    let peak = 0;
    for (let i = 0; i < messages; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          user.api.post(`/api/channels/${channel}/messages`, { content: `${i + j} ${content}` }),
        ),
      ).then((rs) => rs.forEach((r) => expectStatus(r, 201)));
      // The reading client keeps up (10 events, ~450 KB, under the bound) even on a loaded machine;
      // only the stalled one falls behind.
      await reader.waitFor(() => posted().length >= i + 10, 45_000);
      if (i % 50 === 0) peak = Math.max(peak, held());
    }
    // The reading client got everything: the events really flowed. (Posted 10 at a time, they commit
    // in any order within a batch, so the count says when all are there, not the last one's content.)
    await reader.waitFor(() => posted().length >= messages, 45_000);
    expect(posted().length).toBe(messages);
    expect(new Set(posted().map((m) => m.event.data.content)).size).toBe(messages);
    // The least of a few samples: a buffer in flight at one instant is not memory the server keeps.
    let after = Infinity;
    for (let i = 0; i < 3; i++) {
      after = Math.min(after, held());
      await new Promise((r) => setTimeout(r, 100));
    }
    peak = Math.max(peak, after);

    // The stalled client, once it reads again, finds part of the stream and then the close.
    stalled.ws.resume();
    const closed = await stalled.waitClosed(10_000);
    expect([1013, 1006]).toContain(closed.code);
    expect(stalled.events.length).toBeLessThan(messages);
    // What the server queued for any one client stayed within the bound (plus the message that crossed it).
    const { limits, stats } = srv.app.realtime;
    expect(stats.peakBufferedBytes).toBeLessThanOrEqual(limits.maxBufferedBytes + 100_000);
    expect(stats.slowDisconnects).toBe(1);
    // And the process did not keep the stream: unbounded, most of the ~22 MB would still be queued.
    const growth = after - before;
    expect(growth).toBeLessThan(8 * 1024 * 1024);
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    console.log(
      `slow consumer: ${stalled.events.length}/${messages} events before the cut (close ${closed.code}); ` +
        `peak queued ${mb(stats.peakBufferedBytes)}; heap+buffers growth ${mb(growth)} (peak ${mb(peak - before)})`,
    );
    await reader.close();
  }, 120_000);
});
