import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';

type Delivery = Body<'/api/bots/{botId}/deliveries', 'get'>['items'][number];
type Hook = Body<'/api/bots/{botId}/webhook', 'get'>;
type State = Delivery['state'];

const listPage = (botId: string, state?: State, cursor?: string) =>
  ok(
    api.GET('/api/bots/{botId}/deliveries', {
      params: {
        path: { botId },
        query: { limit: 50, ...(state ? { state } : {}), ...(cursor ? { cursor } : {}) },
      },
    }),
  );

const when = (iso: string) => new Date(iso).toLocaleString();

/**
 * The webhook delivery log of one bot: its webhook's state (pause, resume, a test event), every
 * delivery newest first with each attempt (time, HTTP status, latency, error), a state filter,
 * redelivery, and a chart of successful and failed attempts per hour.
 */
export function Deliveries({ botId }: { botId: string }) {
  const [hook, setHook] = useState<Hook | null>(null);
  const [items, setItems] = useState<Delivery[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [state, setState] = useState<State | ''>('');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const path = { params: { path: { botId } } };

  const reload = async () => {
    try {
      const [h, page] = await Promise.all([
        ok(api.GET('/api/bots/{botId}/webhook', path)),
        listPage(botId, state || undefined),
      ]);
      setHook(h);
      setItems(page.items);
      setCursor(page.next_cursor);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  };
  useEffect(() => void reload(), [botId, state]);

  /** A click handler that runs `call`, then shows `label` and reloads; a failure is shown, never thrown. */
  const act = (label: string, call: () => Promise<unknown>) => () => {
    void (async () => {
      try {
        await call();
        setStatus(label);
        await reload();
      } catch (e) {
        setError(describe(e));
      }
    })();
  };

  return (
    <section aria-labelledby="deliveries-title" class="sub">
      <h3 id="deliveries-title">Webhook deliveries</h3>
      <p class="sr-only" role="status">
        {status}
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {hook !== null && (
        <p class="muted">
          {hook.webhook_url === null ? 'No webhook URL.' : hook.webhook_url} ·{' '}
          {hook.paused ? `Paused${hook.paused_reason ? ` (${hook.paused_reason})` : ''}` : 'Active'} ·{' '}
          {hook.consecutive_failures} consecutive failures
        </p>
      )}
      <div class="buttons">
        <button
          type="button"
          onClick={act('Test event sent.', () => ok(api.POST('/api/bots/{botId}/webhook/test', path)))}
        >
          Send a test event
        </button>
        {hook?.paused ? (
          <button
            type="button"
            onClick={act('Deliveries resumed.', () => ok(api.POST('/api/bots/{botId}/webhook/resume', path)))}
          >
            Resume deliveries
          </button>
        ) : (
          <button
            type="button"
            onClick={act('Deliveries paused.', () => ok(api.POST('/api/bots/{botId}/webhook/pause', path)))}
          >
            Pause deliveries
          </button>
        )}
        <button type="button" onClick={() => void reload()}>
          Refresh
        </button>
        <label class="inline-label">
          <span>Show</span>
          <select value={state} onChange={(e) => setState(e.currentTarget.value as State | '')}>
            <option value="">All deliveries</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </label>
      </div>
      {items !== null && items.length > 0 && <Chart items={items} />}
      {items === null ? (
        <p class="muted">Loading…</p>
      ) : items.length === 0 ? (
        <p class="muted">No deliveries{state ? ` in state ${state}` : ''}.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Webhook deliveries</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Created</th>
                <th scope="col">State</th>
                <th scope="col">Attempts</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((d) => (
                <tr key={d.id} class={`delivery ${d.state}`}>
                  <th scope="row">
                    <code>{d.event_type}</code>
                  </th>
                  <td>{when(d.created_at)}</td>
                  <td>
                    <span class={`state ${d.state}`}>{d.state}</span>
                    {d.next_attempt_at !== null && (
                      <span class="muted"> · next {when(d.next_attempt_at)}</span>
                    )}
                  </td>
                  <td>
                    <details>
                      <summary>
                        {d.attempt_log.length} attempt{d.attempt_log.length === 1 ? '' : 's'}
                        {d.last_status !== null
                          ? ` · last HTTP ${d.last_status}`
                          : d.last_error
                            ? ' · no answer'
                            : ''}
                      </summary>
                      <ol class="attempts">
                        {d.attempt_log.map((a) => (
                          <li key={a.attempt}>
                            {when(a.started_at)} · {a.status === null ? 'no answer' : `HTTP ${a.status}`} ·{' '}
                            {a.duration_ms} ms
                            {a.error !== null && <span class="error"> · {a.error}</span>}
                          </li>
                        ))}
                      </ol>
                    </details>
                  </td>
                  <td>
                    {d.state !== 'pending' && (
                      <button
                        type="button"
                        aria-label={`Redeliver ${d.event_type} of ${when(d.created_at)}`}
                        onClick={act('Redelivery queued.', () =>
                          ok(
                            api.POST('/api/bots/{botId}/deliveries/{deliveryId}/redeliver', {
                              params: { path: { botId, deliveryId: d.id } },
                            }),
                          ),
                        )}
                      >
                        Redeliver
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {cursor !== null && (
            <button
              type="button"
              onClick={() =>
                void listPage(botId, state || undefined, cursor)
                  .then((p) => {
                    setItems((now) => [...(now ?? []), ...p.items]);
                    setCursor(p.next_cursor);
                  })
                  .catch((e: unknown) => setError(describe(e)))
              }
            >
              Load older deliveries
            </button>
          )}
        </div>
      )}
    </section>
  );
}

/** Successful (2xx) and failed attempts per hour, for the deliveries loaded, as a small bar chart. */
function Chart({ items }: { items: Delivery[] }) {
  const buckets = new Map<number, { ok: number; failed: number }>();
  for (const d of items)
    for (const a of d.attempt_log) {
      const hour = Math.floor(Date.parse(a.started_at) / 3_600_000);
      const b = buckets.get(hour) ?? { ok: 0, failed: 0 };
      if (a.status !== null && a.status >= 200 && a.status < 300) b.ok++;
      else b.failed++;
      buckets.set(hour, b);
    }
  const hours = [...buckets.keys()].sort((a, b) => a - b).slice(-24);
  if (hours.length === 0) return null;
  const max = Math.max(...hours.map((h) => buckets.get(h)!.ok + buckets.get(h)!.failed));
  const okTotal = hours.reduce((n, h) => n + buckets.get(h)!.ok, 0);
  const failedTotal = hours.reduce((n, h) => n + buckets.get(h)!.failed, 0);
  const W = 24;
  return (
    <figure class="chart">
      <svg
        role="img"
        aria-label={`Attempts per hour: ${okTotal} successful, ${failedTotal} failed`}
        viewBox={`0 0 ${hours.length * W} 64`}
        width={hours.length * W}
        height="64"
      >
        {hours.map((h, i) => {
          const b = buckets.get(h)!;
          const okH = (b.ok / max) * 60;
          const failH = (b.failed / max) * 60;
          return (
            <g key={h}>
              <title>{`${new Date(h * 3_600_000).toLocaleString()}: ${b.ok} successful, ${b.failed} failed`}</title>
              <rect x={i * W + 3} y={64 - okH} width={W - 6} height={okH} class="bar-ok" />
              <rect x={i * W + 3} y={64 - okH - failH} width={W - 6} height={failH} class="bar-failed" />
            </g>
          );
        })}
      </svg>
      <figcaption class="muted">
        <span class="key ok">■</span> {okTotal} successful · <span class="key failed">■</span> {failedTotal}{' '}
        failed attempts (per hour)
      </figcaption>
    </figure>
  );
}
