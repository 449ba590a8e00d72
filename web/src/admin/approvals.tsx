import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';

type PendingAction = Body<'/api/pending-actions', 'get'>['items'][number];
type Filter = 'pending' | 'all';

const STATUS: Record<PendingAction['status'], string> = {
  pending: 'Waiting',
  approved: 'Approved, running',
  executed: 'Approved and done',
  failed: 'Approved, failed',
  rejected: 'Rejected',
  expired: 'Expired',
};

/** The exact content of the call, as the approver must see it before deciding. */
function Content({ a }: { a: PendingAction }) {
  const input = a.input as Record<string, unknown>;
  if (typeof input.content === 'string')
    return <blockquote class="pending-content">{input.content}</blockquote>;
  const rest = Object.entries(input).filter(([k]) => !k.endsWith('_id'));
  if (rest.length === 0) return null;
  return (
    <dl class="pending-fields">
      {rest.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{k}</dt>
          <dd>{typeof v === 'string' ? v : JSON.stringify(v)}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

/**
 * The approvals queue (issue 21; docs/API.md "Approval"): calls of bot keys that wait for a human —
 * what the bot wants to do, where, with the exact content — with Approve and Reject (the same
 * decision as the card the Approvals bot sent by DM). Lists what the signed-in person may decide:
 * their bots' actions, those naming them on the grant, and as an admin all of the organization's.
 */
export function Approvals() {
  const [items, setItems] = useState<PendingAction[] | null>(null);
  const [bots, setBots] = useState<Map<string, string>>(new Map());
  const [filter, setFilter] = useState<Filter>('pending');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState<string | null>(null);

  const load = async () => {
    try {
      const query = filter === 'pending' ? { status: 'pending' as const, limit: 100 } : { limit: 100 };
      const [r, b] = await Promise.all([
        ok(api.GET('/api/pending-actions', { params: { query } })),
        ok(api.GET('/api/bots')),
      ]);
      setItems(r.items);
      setBots(new Map(b.items.map((x) => [x.id, x.name])));
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  };
  useEffect(() => void load(), [filter]);
  useEffect(() => {
    document.title = 'Approvals · Workroom';
    return () => (document.title = 'Workroom');
  }, []);

  async function decide(a: PendingAction, decision: 'approve' | 'reject') {
    setBusy(a.id);
    try {
      const path = { id: a.id };
      const r =
        decision === 'approve'
          ? await ok(api.POST('/api/pending-actions/{id}/approve', { params: { path } }))
          : await ok(api.POST('/api/pending-actions/{id}/reject', { params: { path } }));
      setStatus(`${bots.get(a.bot_id) ?? 'The bot'}: ${a.summary} — ${STATUS[r.status].toLowerCase()}.`);
      setError(null);
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(null);
    }
    await load();
  }

  return (
    <section aria-labelledby="approvals-title" class="panel">
      <div class="panel-head">
        <h2 id="approvals-title">Approvals</h2>
        <label>
          Show
          <select value={filter} onChange={(e) => setFilter(e.currentTarget.value as Filter)}>
            <option value="pending">Waiting for a decision</option>
            <option value="all">All</option>
          </select>
        </label>
      </div>
      <p class="muted">
        Calls of bot API keys whose grants need a human's approval. Approving runs the call once, as the bot,
        with exactly this content; rejecting runs nothing. Unanswered calls expire after 24 hours.
      </p>
      <p class="sr-only" role="status">
        {status}
      </p>
      {status && <p class="notice">{status}</p>}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {items === null ? (
        <p class="muted">Loading…</p>
      ) : items.length === 0 ? (
        <p class="muted">{filter === 'pending' ? 'Nothing is waiting for approval.' : 'No approvals yet.'}</p>
      ) : (
        <ul class="approvals" aria-label="Pending actions">
          {items.map((a) => (
            <li key={a.id} class="approval" aria-label={`${bots.get(a.bot_id) ?? 'bot'}: ${a.summary}`}>
              <p>
                <strong>{bots.get(a.bot_id) ?? a.bot_id}</strong> wants to {a.summary}{' '}
                <span class="muted">
                  (tool <code>{a.tool}</code>, asked {new Date(a.requested_at).toLocaleString()})
                </span>
              </p>
              <Content a={a} />
              <p class="muted">
                {STATUS[a.status]}
                {a.status === 'pending'
                  ? ` · expires ${new Date(a.expires_at).toLocaleString()}`
                  : a.decided_at
                    ? ` · ${new Date(a.decided_at).toLocaleString()}`
                    : ''}
                {a.error ? ` · ${a.error}` : ''}
              </p>
              {a.status === 'pending' && (
                <div class="actions">
                  <button
                    type="button"
                    class="primary"
                    disabled={busy === a.id}
                    onClick={() => void decide(a, 'approve')}
                  >
                    Approve
                  </button>
                  <button
                    type="button"
                    class="danger"
                    disabled={busy === a.id}
                    onClick={() => void decide(a, 'reject')}
                  >
                    Reject
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
