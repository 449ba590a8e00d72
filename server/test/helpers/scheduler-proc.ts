/**
 * A real Workroom server process (like main.ts: config from the environment, graceful stop on SIGTERM)
 * whose scheduler runs jobs with a handler the scheduler tests can observe from outside. It writes one
 * line to stdout per step: `SCHED <what> <job id> <attempt> <pid>`. Jobs of other kinds go to the
 * server's own handler (BotJobHandler: job.due for custom bots).
 *
 * - `test.post`: posts `payload.content` to `payload.channel_id` as the bot through runJobOperation
 *   (step "post"), prints `effect`, then, on its first attempt when `payload.hang` is set, never ends
 *   (the test SIGKILLs the process there: effect made, job not done);
 * - `test.record`: prints `run`, waits `payload.ms`, prints `finished`.
 */
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { sendMessage } from '../../src/operations/messages/messages.js';
import { BotJobHandler } from '../../src/scheduler/bot-jobs.js';
import { runJobOperation } from '../../src/scheduler/run-as-bot.js';

const app = await startApp(loadConfig(process.env), {
  jobHandler: (services) => {
    const real = new BotJobHandler(services);
    return {
      async run(job, signal) {
        const say = (what: string) =>
          process.stdout.write(`SCHED ${what} ${job.id} ${job.attempts} ${process.pid}\n`);
        const p = job.payload;
        if (job.kind === 'test.post') {
          say('start');
          await runJobOperation(services, job, 'post', sendMessage, {
            channel_id: String(p.channel_id),
            content: String(p.content),
          });
          say('effect');
          if (p.hang === true && job.attempts === 1) await new Promise(() => undefined);
          return;
        }
        if (job.kind === 'test.record') {
          say('run');
          await new Promise((r) => setTimeout(r, Number(p.ms ?? 0)));
          say('finished');
          return;
        }
        return real.run(job, signal);
      },
    };
  },
});
process.stdout.write(`READY ${process.pid}\n`);
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
