import { startServer } from '../../src/cli/start.js';
import { TestClock } from '../../src/runtime/clock.js';

/**
 * A server process on a test clock (helpers/server-proc.ts, `startServerProc(…, { clock })`): the real
 * server (cli/start.ts, as main.ts runs it) whose business time its parent moves over the IPC channel
 * Node opens between them. Nothing on the network reaches the clock; without a parent there is no
 * channel and the process refuses to start.
 *
 * Messages: `{ set: epochMs }` moves the clock on to that time (never back); each is answered
 * `{ now: epochMs }`. `WORKROOM_TEST_CLOCK_START` (epoch ms): where the clock starts (a restarted
 * server goes on from its predecessor's time).
 */
if (!process.send) throw new Error('clock-server-main runs only as a child process with an IPC channel');
const start = process.env.WORKROOM_TEST_CLOCK_START;
const clock = new TestClock(start ? Number(start) : undefined);
process.on('message', (m: { set?: number }) => {
  if (typeof m.set === 'number') clock.set(m.set);
  process.send?.({ now: clock.now() });
});
// The channel must not keep a stopping server alive.
process.channel?.unref();
void startServer(process.env, { clock });
