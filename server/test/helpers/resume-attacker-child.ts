/**
 * The attacker process of resume-attacker.ts (`startResumeAttack`): it resumes the live stream again and
 * again on several sockets, on its parent's orders over IPC (the protocol is described there). Runs
 * without tsx (helpers/server-proc.ts, `helperEntry`), so it imports only packages.
 */
import WebSocket from 'ws';

export interface Orders {
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

if (process.send) runChild();
