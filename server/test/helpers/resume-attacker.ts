/**
 * A client process that resumes the live stream again and again from far back, on several sockets at
 * once (the attack of issue 22, point 4). Run by `startResumeAttack` (below) in a process of its own, so
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
import WebSocket from 'ws';

interface Orders {
  url: string;
  token: string;
  lastSeq: number;
  sockets: number;
}

export interface AttackTotals {
  rounds: number;
  events: number;
  /** How the resumes ended: ready, reset, or the close code. */
  outcomes: Record<string, number>;
}

const open = new Set<WebSocket>();

/** One resume: connects with `?last_seq`, counts events until `ready`, closes. */
function resumeOnce(o: Orders): Promise<{ events: number; outcome: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${o.url.replace(/^http/, 'ws')}/api/realtime?last_seq=${o.lastSeq}`, {
      headers: { authorization: `Bearer ${o.token}` },
    });
    let events = 0;
    let outcome = '';
    ws.on('message', (data: Buffer) => {
      // Only short frames can be `ready` / `reset`: events are not parsed (the attacker reads cheaply).
      if (data.length > 64) {
        events++;
        return;
      }
      const text = data.toString();
      if (text.includes('"event"')) events++;
      else if (text.includes('"reset"')) outcome ||= 'reset';
      else if (text.includes('"ready"')) {
        outcome ||= 'ready';
        ws.close();
      }
    });
    open.add(ws);
    ws.on('close', (code) => {
      open.delete(ws);
      resolve({ events, outcome: outcome || `close ${code}` });
    });
    ws.on('error', () => undefined);
  });
}

function runChild(): void {
  let running = false;
  let orders: Orders | undefined;
  const totals: AttackTotals = { rounds: 0, events: 0, outcomes: {} };
  let loops: Promise<void>[] = [];
  const go = () => {
    if (running || !orders) return;
    running = true;
    const o = orders;
    loops = Array.from({ length: o.sockets }, async () => {
      while (running) {
        const r = await resumeOnce(o);
        totals.rounds++;
        totals.events += r.events;
        totals.outcomes[r.outcome] = (totals.outcomes[r.outcome] ?? 0) + 1;
        process.send!({ type: 'round', events: r.events, outcome: r.outcome });
      }
    });
  };
  /** Ends every loop: the resumes in progress are cut off (and counted as closed). */
  const halt = async () => {
    running = false;
    for (const ws of open) ws.terminate();
    await Promise.all(loops);
  };
  process.on('message', (m: Orders | 'go' | 'pause' | 'stop') => {
    if (m === 'go') go();
    else if (m === 'pause') void halt().then(() => process.send!({ type: 'paused' }));
    else if (m === 'stop') {
      void halt().then(() => process.send!({ type: 'stopped', ...totals }, () => process.exit(0)));
    } else orders = m;
  });
  process.send!({ type: 'hello' });
}

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
  const child = fork(join(import.meta.dirname, 'resume-attacker.ts'), ['child'], {
    execArgv: ['--import', 'tsx'],
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

if (process.argv[2] === 'child' && process.send) runChild();
