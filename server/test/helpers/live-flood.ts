import WebSocket from 'ws';

/** One WebSocket upgrade to /api/realtime that never authenticates: accepted (101) or refused (status). */
export interface PreAuthSocket {
  ws: WebSocket;
  /** 101 when the upgrade was accepted, else the HTTP status of the refusal. */
  status: number;
  /** The body of a refusal ('' when accepted). */
  body: string;
  /** Resolves with the close code once the socket is closed (by either side). */
  closed: Promise<number>;
}

/**
 * Opens an upgrade from `localAddress` (on Linux every 127.x.y.z is the loopback, so each one is a
 * different client address for the server) and resolves once the server accepted or refused it.
 */
export function openPreAuth(baseUrl: string, localAddress: string): Promise<PreAuthSocket> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/api/realtime`, { localAddress });
  let closedWith: (code: number) => void = () => undefined;
  const closed = new Promise<number>((resolve) => (closedWith = resolve));
  ws.on('close', (code) => closedWith(code));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, status: 101, body: '', closed }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        closedWith(1006);
        resolve({ ws, status: res.statusCode ?? 0, body, closed });
      });
      res.on('error', () => undefined);
    });
    ws.on('error', (err) => reject(err)); // kept: a later error (terminate while connecting) must not go unhandled
  });
}

/** Opens `n` upgrades from one address, `batch` at a time (the test process shares the loop with the server). */
export async function openMany(
  baseUrl: string,
  localAddress: string,
  n: number,
  batch = 100,
): Promise<PreAuthSocket[]> {
  const out: PreAuthSocket[] = [];
  for (let i = 0; i < n; i += batch) {
    const size = Math.min(batch, n - i);
    out.push(...(await Promise.all(Array.from({ length: size }, () => openPreAuth(baseUrl, localAddress)))));
  }
  return out;
}

/** Closes every socket and waits for their closes. */
export async function closeAll(sockets: PreAuthSocket[]): Promise<void> {
  for (const s of sockets) s.ws.terminate();
  await Promise.all(sockets.map((s) => s.closed));
}
