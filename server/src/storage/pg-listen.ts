import pg from 'pg';

/**
 * PostgreSQL LISTEN on a connection of its own (a pooled connection cannot be kept listening): calls
 * `onPayload` with the payload of every NOTIFY on `channel`, opens a new connection `retryMs` after
 * losing one, and resolves to the function that stops listening (it rejects if the first connection
 * fails). Used by the outbox reader (events/outbox-reader.ts) to hear at once of events numbered by
 * other instances. Notifications are wake-ups only: one missed while reconnecting is made up for by the
 * reader's poll.
 */
export async function listenPostgres(
  url: string,
  channel: string,
  onPayload: (payload: string) => void,
  opts: { retryMs?: number; onError?: (err: unknown) => void } = {},
): Promise<() => Promise<void>> {
  const retryMs = opts.retryMs ?? 1000;
  let stopped = false;
  /** The connection in use (or being opened); an older one that ends is ignored. */
  let current: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;

  const drop = (c: pg.Client) => {
    c.end().catch(() => undefined);
    if (c !== current || stopped) return;
    current = undefined;
    timer ??= setTimeout(() => {
      timer = undefined;
      open().catch((err: unknown) => opts.onError?.(err)); // open() has dropped it: tried again later
    }, retryMs);
    timer.unref();
  };
  const open = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url });
    current = c;
    c.on('notification', (msg) => {
      if (msg.channel === channel && c === current) onPayload(msg.payload ?? '');
    });
    c.on('error', (err) => {
      opts.onError?.(err);
      drop(c);
    });
    c.on('end', () => drop(c));
    try {
      await c.connect();
      // The channel is an identifier: quoted, so that any name is taken as it is.
      await c.query(`listen "${channel.replace(/"/g, '""')}"`);
    } catch (err) {
      drop(c);
      throw err;
    }
    if (stopped) await c.end().catch(() => undefined);
  };

  try {
    await open();
  } catch (err) {
    stopped = true;
    clearTimeout(timer);
    throw err;
  }
  return async () => {
    stopped = true;
    clearTimeout(timer);
    const c = current;
    current = undefined;
    await c?.end().catch(() => undefined);
  };
}
