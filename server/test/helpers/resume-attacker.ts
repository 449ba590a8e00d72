/**
 * A client process that resumes the live stream again and again from far back, on several sockets at
 * once (the attack of issue 22, point 4), in a process of its own (resume-attacker-child.ts), so
 * that its frame parsing does not share the event loop of the server under test.
 *
 * Protocol with the parent (IPC): it says `{ type: 'hello' }` when it listens, then receives
 * `{ url, token, lastSeq, sockets }`. `'go'` starts the loops, which report
 * `{ type: 'round', events, outcome }` after every finished resume; `'pause'` ends the resumes in
 * progress and the loops (answered `{ type: 'paused' }`); `'stop'` ends them and answers
 * `{ type: 'stopped', rounds, events, outcomes }`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { AttackTotals, Orders } from './resume-attacker-child.js';
import { helperEntry } from './server-proc.js';

export type { AttackTotals } from './resume-attacker-child.js';

export interface ResumeAttack {
  child: ChildProcess;
  /** Resumes finished so far and the events they received. */
  rounds: number;
  events: number;
  /** Resolves once `n` resumes have finished. */
  roundsDone(n: number): Promise<void>;
  /** Pauses every loop (the resumes in progress are cut off); `go` starts them again. */
  pause(): Promise<void>;
  go(): void;
  /** Stops every loop (its resume in progress is cut off) and resolves with the totals. */
  stop(): Promise<AttackTotals>;
}

/**
 * Starts the attacker process, idle: `go` starts `sockets` loops, each resuming from `lastSeq` again and
 * again. Resolves once the process has its orders.
 */
export async function startResumeAttack(orders: Orders): Promise<ResumeAttack> {
  const child = fork(helperEntry(join(import.meta.dirname, 'resume-attacker-child.ts')), [], {
    execArgv: [],
    cwd: join(import.meta.dirname, '../../..'),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const guard = () => child.kill('SIGKILL');
  process.once('exit', guard);
  child.once('exit', () => process.off('exit', guard));
  let waiters: (() => void)[] = [];
  let finished: ((t: AttackTotals) => void) | undefined;
  let paused: (() => void) | undefined;
  let ready: () => void = () => undefined;
  const listening = new Promise<void>((resolve) => (ready = resolve));
  const attack: ResumeAttack = {
    child,
    rounds: 0,
    events: 0,
    roundsDone(n) {
      if (attack.rounds >= n) return Promise.resolve();
      return new Promise((resolve) => {
        const check = () => (attack.rounds >= n ? resolve() : waiters.push(check));
        waiters.push(check);
      });
    },
    pause() {
      return new Promise((resolve) => {
        paused = resolve;
        child.send('pause');
      });
    },
    go() {
      child.send('go');
    },
    stop() {
      return new Promise((resolve) => {
        finished = resolve;
        child.send('stop');
      });
    },
  };
  child.on('message', (m: { type: string; events: number } & AttackTotals) => {
    if (m.type === 'round') {
      attack.rounds++;
      attack.events += m.events;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    } else if (m.type === 'stopped') finished?.(m);
    else if (m.type === 'paused') paused?.();
    else if (m.type === 'hello') child.send(orders, () => ready());
  });
  await listening;
  return attack;
}
