import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { ApiKey, Body } from '../api/types';

type Call = Body<'/api/bots/{botId}/tool-calls', 'get'>['items'][number];

const PAGE = 50;
const OUTCOME: Record<Call['outcome'], string> = {
  ok: 'ok',
  tool_error: 'tool error',
  protocol_error: 'protocol error',
};

/**
 * The MCP audit of one bot (GET /api/bots/{botId}/tool-calls): every tools/call with its tool,
 * outcome, error code, duration and the key that made it — never arguments or results. Newest first,
 * filtered by tool, with older pages.
 */
export function ToolCalls({ botId }: { botId: string }) {
  const [calls, setCalls] = useState<Call[] | null>(null);
  const [keys, setKeys] = useState<Map<string, ApiKey>>(new Map());
  const [more, setMore] = useState(false);
  const [tool, setTool] = useState('');
  const [filter, setFilter] = useState('');
  const [error, setError] = useState<string | null>(null);
  const path = { botId };

  const load = async (before?: string) => {
    const query: { limit: number; tool?: string; before?: string } = { limit: PAGE };
    if (filter) query.tool = filter;
    if (before) query.before = before;
    try {
      const [r, k] = await Promise.all([
        ok(api.GET('/api/bots/{botId}/tool-calls', { params: { path, query } })),
        ok(api.GET('/api/bots/{botId}/api-keys', { params: { path } })),
      ]);
      setCalls((now) => (before ? [...(now ?? []), ...r.items] : r.items));
      setKeys(new Map(k.items.map((x) => [x.id, x])));
      setMore(r.items.length === PAGE);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  };
  useEffect(() => void load(), [botId, filter]);

  const tools = [...new Set((calls ?? []).map((c) => c.tool))].sort();
  const ok_ = calls?.filter((c) => c.outcome === 'ok').length ?? 0;

  return (
    <section aria-labelledby="tool-calls-title" class="sub">
      <h3 id="tool-calls-title">MCP tool calls</h3>
      <p class="muted">
        Every MCP tools/call made with this bot's keys: the tool, its outcome and duration, the grants'
        decision (allowed, or the grant that refused it) and a dry run; for a key with grants also its REST
        writes, and the fields an update changed (before → after). Changes of grants, and keys paused or
        resumed, are here too. Other arguments and results are never recorded.
      </p>
      <form
        class="filters"
        role="search"
        aria-label="Filter tool calls"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter(tool.trim());
        }}
      >
        <label>
          Tool
          <input list={`tools-${botId}`} value={tool} onInput={(e) => setTool(e.currentTarget.value)} />
          <datalist id={`tools-${botId}`}>
            {tools.map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
        </label>
        <button type="submit">Filter</button>
        {filter && (
          <button
            type="button"
            onClick={() => {
              setTool('');
              setFilter('');
            }}
          >
            All tools
          </button>
        )}
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {calls === null ? (
        <p class="muted">Loading…</p>
      ) : calls.length === 0 ? (
        <p class="muted">{filter ? `No calls of ${filter}.` : 'No MCP tool calls yet.'}</p>
      ) : (
        <>
          <p class="muted">
            {calls.length} calls shown: {ok_} ok, {calls.length - ok_} failed.
          </p>
          <div class="table-wrap">
            <table>
              <caption class="sr-only">MCP tool calls, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Error</th>
                  <th scope="col">Grant</th>
                  <th scope="col" class="wide">
                    Change
                  </th>
                  <th scope="col">Duration</th>
                  <th scope="col" class="wide">
                    Key
                  </th>
                </tr>
              </thead>
              <tbody>
                {calls.map((c) => (
                  <tr key={c.id}>
                    <td>
                      <time dateTime={c.created_at}>{new Date(c.created_at).toLocaleString()}</time>
                    </td>
                    <th scope="row">
                      <code>{c.tool}</code>
                    </th>
                    <td class={`state ${c.outcome === 'ok' ? 'delivered' : 'failed'}`}>
                      {OUTCOME[c.outcome]}
                    </td>
                    <td>{c.error_code ?? '—'}</td>
                    <td>{grantNote(c.tool, c.detail)}</td>
                    <td class="wide">{c.tool === 'grants.set' ? '' : changeNote(c.detail)}</td>
                    <td>{c.duration_ms} ms</td>
                    <td class="wide">
                      <code>{keys.get(c.key_id)?.key_prefix ?? c.key_id.slice(0, 8)}…</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {more && calls !== null && (
        <button type="button" onClick={() => void load(calls[calls.length - 1]?.created_at)}>
          Older calls
        </button>
      )}
    </section>
  );
}

/** The grants' decision as the audit records it (server/src/operations/audit/decision.ts). */
const DECISION: Record<string, string> = {
  allowed: 'allowed',
  pending_approval: 'held for approval',
  confirmation_asked: "asked the agent's user",
  declined: "declined by the agent's user",
};

/**
 * The audit's detail in a few words: the grants' decision (allowed, or the refusing grant), a dry run,
 * a change of a key's grants, a pause (by a guard rail or a manager) or a resume.
 */
function grantNote(tool: string, d: Record<string, unknown> | null): string {
  if (d === null) return '—';
  const parts: string[] = [];
  if (tool === 'key.paused')
    parts.push(d.surface === 'guardrail' ? `paused by guard rail ${String(d.grant)}` : 'paused by a manager');
  else if (tool === 'key.resumed') parts.push('resumed by a manager');
  else if (typeof d.grant === 'string' && (d.decision === undefined || d.decision === 'refused'))
    parts.push(`refused by ${d.grant}`);
  else if (typeof d.decision === 'string') parts.push(DECISION[d.decision] ?? d.decision);
  if (d.dry_run === true) parts.push('dry run');
  if (d.surface === 'rest') parts.push('REST');
  if (d.surface === 'admin' && tool === 'grants.set')
    parts.push(d.after === null ? 'grants cleared' : 'grants set');
  return parts.join(', ') || '—';
}

/** An update's changed fields, "field: before → after" (the audit keeps at most 500 characters each). */
function changeNote(d: Record<string, unknown> | null): string {
  if (d === null || d.after === null || typeof d.after !== 'object' || typeof d.before !== 'object')
    return '';
  const before = (d.before ?? {}) as Record<string, unknown>;
  return Object.entries(d.after as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${show(before[k])} → ${show(v)}`)
    .join('; ');
}
const show = (v: unknown): string =>
  v === null || v === undefined ? '∅' : typeof v === 'string' ? `"${v}"` : JSON.stringify(v);
