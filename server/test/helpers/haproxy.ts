import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './server-proc.js';

/** Debian's HAProxy (`apt-get install haproxy`; .ci/run installs it). */
export const HAPROXY = '/usr/sbin/haproxy';

/**
 * The configuration docs/SCALING.md documents: round-robin without stickiness over the instances,
 * health checks on /api/health/ready (503 from the start of a shutdown), WebSocket and SSE streams passed through (long tunnel time-out), and
 * the client address forwarded (X-Forwarded-For, for WORKROOM_TRUST_PROXY).
 */
export function haproxyConfig(port: number, backends: { name: string; port: number }[]): string {
  return [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout tunnel 1h',
    '  option forwardfor',
    // A request whose connection an instance refused (it is stopping) goes to another one.
    '  retries 3',
    '  option redispatch',
    'frontend workroom',
    `  bind 127.0.0.1:${port}`,
    '  default_backend instances',
    'backend instances',
    '  balance roundrobin',
    '  option httpchk GET /api/health/ready',
    '  http-check expect status 200',
    '  default-server inter 500ms fall 2 rise 2',
    ...backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check`),
    '',
  ].join('\n');
}

export interface Balancer {
  url: string;
  stop(): Promise<void>;
}

/** Starts HAProxy in front of `backends` (ports on 127.0.0.1); resolves once every backend is up. */
export async function startHaproxy(backends: { name: string; port: number }[]): Promise<Balancer> {
  if (!existsSync(HAPROXY)) {
    throw new Error(`HAProxy is not installed (${HAPROXY}): apt-get install -y haproxy`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'wr-haproxy-'));
  const port = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig(port, backends));
  const child: ChildProcess = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  // Up once every backend answered a health check through it (round-robin: backends.length in a row).
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}): ${stderr}`);
    let ok = 0;
    for (let i = 0; i < backends.length; i++) {
      const r = await fetch(`${url}/api/health`).catch(() => undefined);
      if (r?.ok) ok++;
      await r?.body?.cancel();
    }
    if (ok === backends.length) break;
    if (Date.now() > deadline) throw new Error(`haproxy not ready: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
